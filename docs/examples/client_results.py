"""Results that read well: result.text, result.data typed by output_type, raise_on_error."""

from dataclasses import dataclass

import trio

from mcp_trio import ToolError
from mcp_trio.client import OutputDecodeError, ToolCallError, connect
from mcp_trio.server import Server

server = Server("weather", "1.0")


@dataclass
class Weather:
    city: str
    celsius: float


@server.tool
def weather(city: str) -> Weather:
    """The weather now (structured output: its outputSchema is Weather's)."""
    if city == "Atlantis":
        raise ToolError(f"no weather station in {city}")
    return Weather(city, 21.5)


@server.tool
def history(city: str) -> list[Weather]:
    """The last days (a list, sent as {"result": [...]}, unwrapped by the client)."""
    return [Weather(city, 19.0), Weather(city, 17.5)]


async def main() -> None:
    async with connect(server) as client:
        result = await client.call_tool("weather", {"city": "Oslo"})
        print("text:", result.text)  # the text blocks, joined with newlines
        print("data:", result.data)  # structuredContent as JSON values

        typed = await client.call_tool("weather", {"city": "Oslo"}, output_type=Weather)
        print("typed:", typed.data, typed.data.celsius + 1)  # a Weather, for the type checker too

        days = await client.call_tool("history", {"city": "Oslo"}, output_type=list[Weather])
        print("days:", [day.celsius for day in days.data])

        failed = await client.call_tool("weather", {"city": "Atlantis"})
        print("isError:", failed.isError, "-", failed.text)
        try:
            await client.call_tool("weather", {"city": "Atlantis"}, raise_on_error=True)
        except ToolCallError as exc:
            print("raised:", exc)

        try:
            await client.call_tool("history", {"city": "Oslo"}, output_type=list[int])
        except OutputDecodeError as exc:
            print("mismatch:", exc.path, "-", exc.reason)


trio.run(main)
