"""How a tool's failure reaches the model: ToolError's message as written; other exceptions by
their message (with their type only where the message says nothing alone) or, with
Server(mask_error_details=True), by a generic text naming an error id that the log has with the
traceback."""

from __future__ import annotations

import logging
import re

import pytest
import trio

from mcp_trio import ToolError
from mcp_trio.server import Server
from tests._support.server import connected, text_of

VERSION = "2025-11-25"


def failing_server(**options: bool) -> Server:
    server = Server("failing", **options)

    @server.tool
    async def lookup(key: str) -> str:
        if key == "expected":
            raise ToolError(f"no record named {key!r}: try another key")
        if key == "both":
            async with trio.open_nursery() as nursery:  # (a group of ToolErrors)
                for n in (1, 2):
                    nursery.start_soon(_fail, n)
        if key == "plain":
            raise ValueError("the key must not be plain")
        if key == "silent":
            raise RuntimeError
        raise KeyError(key)

    return server


async def _fail(n: int) -> None:
    raise ToolError(f"source {n} is down")


async def test_a_tool_error_reaches_the_model_as_written_and_is_logged_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_trio.server")
    async with connected(failing_server(), VERSION) as client:
        result = await client.request("tools/call", {"name": "lookup", "arguments": {"key": "expected"}})
        assert result.isError and text_of(result) == "no record named 'expected': try another key"
        both = await client.request("tools/call", {"name": "lookup", "arguments": {"key": "both"}})
        assert both.isError and set(text_of(both).split("; ")) == {"source 1 is down", "source 2 is down"}
    records = [r for r in caplog.records if "lookup" in r.getMessage()]
    assert records and all(r.levelno == logging.INFO and r.exc_info is None for r in records)


async def test_other_exceptions_say_their_message_without_the_type_unless_it_is_all_there_is() -> None:
    async with connected(failing_server(), VERSION) as client:
        texts = []
        for key in ("plain", "silent", "secret-path"):
            result = await client.request("tools/call", {"name": "lookup", "arguments": {"key": key}})
            assert result.isError
            texts.append(text_of(result))
    assert texts == ["the key must not be plain", "RuntimeError", "KeyError: 'secret-path'"]


async def test_other_exceptions_say_what_they_say_unless_masked(caplog: pytest.LogCaptureFixture) -> None:
    async with connected(failing_server(), VERSION) as client:
        result = await client.request("tools/call", {"name": "lookup", "arguments": {"key": "secret-path"}})
    assert result.isError and text_of(result) == "KeyError: 'secret-path'"

    caplog.clear()
    async with connected(failing_server(mask_error_details=True), VERSION) as client:
        masked = await client.request("tools/call", {"name": "lookup", "arguments": {"key": "secret-path"}})
        kept = await client.request("tools/call", {"name": "lookup", "arguments": {"key": "expected"}})
    text = text_of(masked)
    assert masked.isError and "secret-path" not in text and "KeyError" not in text
    found = re.fullmatch(
        r"Error calling tool lookup: an internal error occurred \(error id ([0-9a-f]{12})\)", text
    )
    assert found, text
    (logged,) = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert found[1] in logged.getMessage() and "secret-path" in logged.getMessage() and logged.exc_info
    assert text_of(kept) == "no record named 'expected': try another key"  # (a ToolError is never masked)


class _Opaque:
    """Nothing JSON has a form for."""


async def test_a_result_that_cannot_be_encoded_is_a_tool_error_naming_its_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = Server("encoding")

    @server.tool
    async def opaque() -> object:
        return _Opaque()

    async with connected(server, VERSION) as client:
        result = await client.request("tools/call", {"name": "opaque", "arguments": {}})
        assert result.isError, result  # a tool error the model reads, not a JSON-RPC -32603
        assert "Error calling tool opaque: its result could not be encoded" in text_of(result)
        assert "_Opaque" in text_of(result)
        ping = await client.request("tools/call", {"name": "opaque", "arguments": {}})  # (and again)
        assert ping.isError
    assert any(r.levelno == logging.ERROR and "opaque" in r.getMessage() for r in caplog.records)
