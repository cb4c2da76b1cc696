"""The client checks ``structuredContent`` against the ``outputSchema`` of the last
``tools/list``, compiled once per tool, with errors as ``<JSON path>: <reason>``."""

from __future__ import annotations

import logging
from typing import Any

import jsonschema_rs
import pytest

from mcp_trio import _jsonschema as _output
from mcp_trio.client import OutputValidationError
from mcp_trio.client import _output as _client_output
from tests._support.client import connected, raw_peer

SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "integer"},
        "y": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "odd key": {"type": "string"},
    },
    "required": ["x", "y"],
}


def peer(structured: Any, **result: Any) -> Any:
    def answer(method: str, params: Any) -> Any:
        if method == "tools/list":
            tools = [{"name": "p", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA}]
            return {"tools": tools}
        body = {"content": [], **result}
        if structured is not None:
            body["structuredContent"] = structured
        return body

    return answer


@pytest.mark.parametrize(
    ("structured", "path", "reason"),
    [
        ({"x": "a", "y": 1}, "$.x", '"a" is not of type "integer"'),
        ({"x": 1}, "$.y", "missing required property"),
        ({"x": 1, "y": 2, "tags": ["a", 3]}, "$.tags[1]", '3 is not of type "string"'),
        ({"x": 1, "y": 2, "odd key": 1}, '$["odd key"]', '1 is not of type "string"'),
        (None, "$", "missing (the tool declares an outputSchema)"),
    ],
)
async def test_a_mismatch_names_its_path(structured: Any, path: str, reason: str) -> None:
    async with raw_peer("2025-06-18", peer(structured)) as client:
        await client.list_tools()
        with pytest.raises(OutputValidationError) as info:
            await client.call_tool("p")
    error = info.value
    assert (error.tool, error.path) == ("p", path)
    assert str(error).endswith(f"does not match its outputSchema: {path}: {reason}")
    assert error.result.structuredContent == structured


async def test_what_is_not_checked() -> None:
    async with raw_peer("2025-06-18", peer({"x": "a"})) as client:
        await client.call_tool("p")  # not listed yet
    async with raw_peer("2025-06-18", peer({"x": "a"}, isError=True)) as client:
        await client.list_tools()
        await client.call_tool("p")  # an error result
    async with raw_peer("2025-06-18", peer({"x": "a"}), validate_output=False) as client:
        await client.list_tools()
        await client.call_tool("p")
    async with raw_peer("2025-06-18", peer({"x": "a"})) as client:
        await client.list_tools()
        client._on_notification("notifications/tools/list_changed", None)
        await client.call_tool("p")  # forgotten until listed again


async def test_each_schema_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[Any] = []
    original = jsonschema_rs.validator_for

    def counting(schema: Any) -> Any:
        compiled.append(schema)
        return original(schema)

    monkeypatch.setattr(_output.jsonschema_rs, "validator_for", counting)
    async with raw_peer("2025-06-18", peer({"x": 1, "y": 2})) as client:
        await client.list_tools()
        assert compiled == []  # on first use
        for _ in range(3):
            await client.call_tool("p")
        await client.list_tools()  # the same schema again: kept
        await client.call_tool("p")
    assert compiled == [SCHEMA]


async def test_without_the_validator_a_client_that_asked_gets_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_output, "jsonschema_rs", None)
    async with raw_peer("2025-06-18", peer({"x": "a"}), validate_output=True) as client:
        await client.list_tools()
        await client.call_tool("p")
        await client.call_tool("p")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        "structuredContent is not checked against outputSchema: install mcp-trio[validation] (jsonschema-rs)"
    ]


async def test_without_the_validator_a_default_client_says_it_once_per_process_at_debug(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A base install is quiet: what `mcp-trio call` prints on every run stays below WARNING.
    monkeypatch.setattr(_output, "jsonschema_rs", None)
    monkeypatch.setattr(_client_output, "_told_missing", False)
    caplog.set_level(logging.DEBUG, logger="mcp_trio.client")
    for _ in range(2):  # two clients of one process
        async with raw_peer("2025-06-18", peer({"x": "a"})) as client:
            await client.list_tools()
            await client.call_tool("p")
    said = [r for r in caplog.records if "is not checked against outputSchema" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.DEBUG]


async def test_an_invalid_schema_is_logged_and_not_checked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def answer(method: str, params: Any) -> Any:
        if method == "tools/list":
            schema = {"type": 5}
            return {"tools": [{"name": "p", "inputSchema": {}, "outputSchema": schema}]}
        return {"content": [], "structuredContent": {}}

    async with raw_peer("2025-06-18", answer) as client:
        await client.list_tools()
        await client.call_tool("p")
    assert any("not a valid JSON Schema" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25", "2026-07-28"])
async def test_the_servers_own_schemas_pass(version: str) -> None:
    async with connected(version) as client:
        tools = await client.list_all_tools()
        assert all(t.outputSchema is not None for t in tools if t.name in ("point", "echo"))
        assert (await client.call_tool("point")).structuredContent == {"x": 1, "y": 2}
        assert (await client.call_tool("echo", {"text": "a"})).structuredContent == {"result": "a"}


async def test_structured_content_need_not_be_an_object() -> None:
    """Any JSON value from 2026-07-28 on (read as sent in earlier revisions too)."""
    schema = {"type": "array", "items": {"type": "integer"}}

    def answer(method: str, params: Any) -> Any:
        if method == "tools/list":
            return {"tools": [{"name": "p", "inputSchema": {}, "outputSchema": schema}]}
        return {"content": [], "structuredContent": params["arguments"]["v"]}

    async with raw_peer("2025-06-18", answer) as client:
        await client.list_tools()
        assert (await client.call_tool("p", {"v": [1, 2]})).structuredContent == [1, 2]
        with pytest.raises(OutputValidationError) as info:
            await client.call_tool("p", {"v": [1, "a"]})
    assert info.value.path == "$[1]"
