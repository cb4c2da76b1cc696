"""The high-level server's short paths give the same answers as the general ones:
a ``str`` tool result built as the revision's typed ``CallToolResult``, calls
that skip the task manager, and one handler table shared by every session."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.server import Server
from mcp_trio.server._results import tool_result
from mcp_trio.transports._base import Frame
from mcp_trio.types import _versions

ALL = list(_versions.SUPPORTED_VERSIONS)


def make_server() -> Server:
    server = Server("fast", "1")

    @server.tool(structured_output=False)
    async def text(value: str) -> str:
        return value

    @server.tool(structured_output=False)
    def sync_text(value: str) -> str:
        return value

    @server.tool
    async def structured(value: str) -> str:  # a str result with an output schema
        return value

    @server.tool(structured_output=False)
    async def blocks(value: str) -> list[dict[str, Any]]:
        return [{"type": "text", "text": value}, {"type": "text", "text": value.upper()}]

    @server.tool(task_support="optional", structured_output=False)
    async def maybe_task(value: str) -> str:
        return value

    return server


@asynccontextmanager
async def raw_session(server: Server, version: str) -> AsyncIterator[Any]:
    """A server session and an ``ask(method, params) -> answer dict`` speaking raw JSON-RPC."""
    client, end = open_memory_transport_pair()
    ids = iter(range(1, 10_000))
    stateless = _versions.is_stateless(version)

    async def ask(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": next(ids), "method": method}
        params = dict(params or {})
        if stateless:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        message["params"] = params
        await client.send(Frame(json.dumps(message).encode()))
        with trio.fail_after(5):
            while True:
                answer = json.loads((await client.receive()).data)
                if "id" in answer:
                    return answer

    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.serve_session, end)
        if not stateless:
            await ask(
                "initialize",
                {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
            )
            await client.send(Frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
        yield ask
        await client.aclose()


def expected(result: dict[str, Any], version: str) -> dict[str, Any]:
    """What the general path sends: the dict validated against the revision's type."""
    module = _versions.module_for(version)
    typed = msgspec.convert(result, module.CallToolResult)
    return json.loads(msgspec.json.encode(typed))


@pytest.mark.parametrize("version", ALL)
async def test_text_results_are_those_of_the_general_path(version: str) -> None:
    async with raw_session(make_server(), version) as ask:
        for tool in ("text", "sync_text", "maybe_task"):
            for value in ("hello", "", 'héllo ☃ \n "quoted"'):
                answer = await ask("tools/call", {"name": tool, "arguments": {"value": value}})
                assert answer["result"] == expected(tool_result(value), version), (tool, value)
        answer = await ask("tools/call", {"name": "blocks", "arguments": {"value": "a"}})
        assert [b["text"] for b in answer["result"]["content"]] == ["a", "A"]


@pytest.mark.parametrize("version", ALL)
async def test_structured_tools_keep_their_structured_content(version: str) -> None:
    async with raw_session(make_server(), version) as ask:
        answer = await ask("tools/call", {"name": "structured", "arguments": {"value": "v"}})
        result = answer["result"]
        assert result["content"] == [{"type": "text", "text": "v"}]
        if version >= "2025-06-18":
            assert result["structuredContent"] == {"result": "v"}
        else:
            assert "structuredContent" not in result


async def test_a_task_for_a_tool_without_task_support_is_still_refused() -> None:
    # 2025-11-25 with tasks advertised (one tool supports them): asking a task
    # of a tool that does not support them goes to the task manager and fails.
    async with raw_session(make_server(), "2025-11-25") as ask:
        answer = await ask("tools/call", {"name": "text", "arguments": {"value": "x"}, "task": {}})
        assert answer["error"]["code"] == -32601
        answer = await ask("tools/call", {"name": "text", "arguments": {"value": "x"}})
        assert answer["result"]["content"][0]["text"] == "x"


async def test_sessions_share_one_table_but_each_has_its_own_copy() -> None:
    server = make_server()
    assert server.request_handlers() is not server.request_handlers()
    async with trio.open_nursery() as nursery:
        ends = [open_memory_transport_pair() for _ in range(2)]
        sessions = [await nursery.start(server.serve_session, end) for _, end in ends]
        assert sessions[0].request_handlers == sessions[1].request_handlers
        assert sessions[0].request_handlers is not sessions[1].request_handlers
        del sessions[0].request_handlers["tools/list"]  # one session's change stays its own
        assert "tools/list" in sessions[1].request_handlers
        assert "tools/list" in server._dispatch.table()
        for client, _ in ends:
            await client.aclose()
