"""``call_tool`` conveniences: ``result.text``, ``result.data`` decoded into the caller's
``output_type``, and ``raise_on_error=True``, against a real server in memory."""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict

import msgspec
import pytest

from mcp_trio import ToolError
from mcp_trio.client import OutputDecodeError, ToolCallError, connect_server
from mcp_trio.client.results import CallToolResult
from mcp_trio.server import Image, Server

REVISIONS = ["2025-06-18", "2025-11-25", "2026-07-28"]


@dataclasses.dataclass
class Weather:
    city: str
    celsius: float


class Forecast(msgspec.Struct):
    days: list[Weather]


class WeatherDict(TypedDict):
    city: str
    celsius: float


def weather_server() -> Server:
    server = Server("weather", "1.0")

    @server.tool
    def weather(city: str) -> Weather:
        return Weather(city, 21.5)

    @server.tool
    def forecast(city: str) -> Forecast:
        return Forecast([Weather(city, 20.0), Weather(city, 18.5)])

    @server.tool
    def history(city: str) -> list[Weather]:
        return [Weather(city, 3.0)]

    @server.tool
    def count() -> int:
        return 42

    @server.tool
    def lines() -> list[Any]:
        return ["first", {"type": "text", "text": "second"}]

    @server.tool(structured_output=False)
    def chat() -> str:
        return "just text"

    @server.tool
    def several() -> list[object]:
        return [{"type": "text", "text": "one"}, Image(b"\x89PNG"), {"type": "text", "text": "two"}]

    @server.tool
    def failing(city: str) -> Weather:
        raise ToolError(f"no weather for {city}")

    @server.tool(structured_output=False)
    def raw() -> dict[str, Any]:
        return {"content": [{"type": "text", "text": "raw"}], "structuredContent": {"city": 5}}

    return server


@pytest.mark.parametrize("version", REVISIONS)
async def test_data_is_decoded_into_the_output_type(version: str) -> None:
    async with connect_server(weather_server(), versions=[version]) as client:
        result = await client.call_tool("weather", {"city": "Oslo"}, output_type=Weather)
        assert result.data == Weather("Oslo", 21.5)
        assert isinstance(result, CallToolResult)
        assert result.structuredContent == {"city": "Oslo", "celsius": 21.5}
        assert msgspec.to_builtins(result) == {
            "content": [{"type": "text", "text": '{"city":"Oslo","celsius":21.5}'}],
            "structuredContent": {"city": "Oslo", "celsius": 21.5},
        }

        typed = await client.call_tool("weather", {"city": "Rome"}, output_type=WeatherDict)
        assert typed.data == {"city": "Rome", "celsius": 21.5}
        nested = await client.call_tool("forecast", {"city": "Oslo"}, output_type=Forecast)
        assert nested.data == Forecast([Weather("Oslo", 20.0), Weather("Oslo", 18.5)])
        # a non-object output, as the server wraps it ({"result": ...}) or not (2026-07-28)
        listed = await client.call_tool("history", {"city": "Bergen"}, output_type=list[Weather])
        assert listed.data == [Weather("Bergen", 3.0)]
        number = await client.call_tool("count", output_type=int)
        assert number.data == 42


async def test_without_output_type_data_is_the_structured_content() -> None:
    async with connect_server(weather_server()) as client:
        result = await client.call_tool("weather", {"city": "Oslo"})
        assert result.data == {"city": "Oslo", "celsius": 21.5}
        assert (await client.call_tool("chat")).data is None


async def test_a_mismatch_or_a_missing_structured_content_names_the_path() -> None:
    async with connect_server(weather_server(), validate_output=False) as client:
        with pytest.raises(OutputDecodeError) as caught:
            await client.call_tool("raw", output_type=Weather)
        error = caught.value
        assert (error.tool, error.output_type, error.path) == ("raw", Weather, "$.city")
        assert error.reason == "Expected `str`, got `int`"
        assert str(error) == (
            "the structured content of tool raw does not decode as Weather: $.city: Expected `str`, got `int`"
        )
        assert error.result.structuredContent == {"city": 5}

        with pytest.raises(OutputDecodeError) as caught:
            await client.call_tool("chat", output_type=Weather)
        assert caught.value.path == "$"
        assert caught.value.reason == "missing (the result has no structuredContent; its text: 'just text')"

        with pytest.raises(OutputDecodeError, match=r"decode as list: \$.result\[0\]"):
            await client.call_tool("history", {"city": "x"}, output_type=list[int])

        with pytest.raises(TypeError, match=r"output_type=.*msgspec cannot decode into it"):
            await client.call_tool("weather", {"city": "x"}, output_type=object())  # type: ignore[arg-type]


async def test_text_joins_the_text_blocks() -> None:
    async with connect_server(weather_server()) as client:
        assert (await client.call_tool("chat")).text == "just text"
        several = await client.call_tool("several")
        assert [block.type for block in several.content] == ["text", "image", "text"]
        assert several.text == "one\ntwo"
        assert (await client.call_tool("lines")).text == '["first",{"type":"text","text":"second"}]'


async def test_raise_on_error_raises_a_tool_call_error_with_the_result() -> None:
    async with connect_server(weather_server()) as client:
        kept = await client.call_tool("failing", {"city": "Atlantis"})
        assert kept.isError and kept.text == "no weather for Atlantis"

        with pytest.raises(ToolCallError) as caught:
            await client.call_tool("failing", {"city": "Atlantis"}, raise_on_error=True)
        error = caught.value
        assert str(error) == "tool failing failed: no weather for Atlantis"
        assert (error.tool, error.text, error.result.isError) == ("failing", "no weather for Atlantis", True)
        assert isinstance(error, ToolError)

        # an output_type asks for data, which a tool error does not have
        with pytest.raises(ToolCallError, match="no weather for Atlantis"):
            await client.call_tool("failing", {"city": "Atlantis"}, output_type=Weather)
        fine = await client.call_tool("weather", {"city": "Oslo"}, raise_on_error=True)
        assert not fine.isError


async def test_a_tool_that_lets_a_tool_call_error_escape_fails_with_its_text() -> None:
    """A ToolCallError is a ToolError: a tool proxying another server's tool reports the
    failure as written, not masked as an unexpected exception."""
    downstream = weather_server()
    front = Server("front", "1.0", mask_error_details=True)

    @front.tool
    async def relay(city: str) -> str:
        async with connect_server(downstream) as client:
            return (await client.call_tool("failing", {"city": city}, raise_on_error=True)).text

    async with connect_server(front) as client:
        result = await client.call_tool("relay", {"city": "Atlantis"})
        assert result.isError
        assert result.text == "tool failing failed: no weather for Atlantis"
