"""``mcp_trio.testing.serve_raw``: a server serving one session in memory, driven with raw
JSON-RPC, broken messages included."""

from __future__ import annotations

import trio

from mcp_trio.server import Context, Server
from mcp_trio.testing import RawPeer, serve_raw


def make_server() -> Server:
    server = Server("raw", "1.0")

    @server.tool
    async def add(a: int, b: int = 2) -> int:
        return a + b

    @server.tool
    async def chatty(ctx: Context) -> str:
        await ctx.info("working")
        return "done"

    return server


async def test_a_handshake_a_call_and_what_came_meanwhile() -> None:
    async with serve_raw(make_server()) as peer:
        assert isinstance(peer, RawPeer)
        answer = await peer.initialize()
        assert answer["result"]["serverInfo"]["name"] == "raw"
        await peer.request("logging/setLevel", {"level": "info"})
        called = await peer.request("tools/call", {"name": "add", "arguments": {"a": 40}})
        assert called["result"]["structuredContent"] == {"result": 42}
        chatty = await peer.request("tools/call", {"name": "chatty", "arguments": {}})
        assert chatty["result"]["content"][0]["text"] == "done"
        assert [m["method"] for m in peer.received] == ["notifications/message"]


async def test_broken_input_gets_the_spec_s_error_and_the_session_goes_on() -> None:
    async with serve_raw(make_server()) as peer:
        await peer.initialize()
        await peer.send(b'{"jsonrpc": "2.0", "id": 9, "method": ')
        assert (await peer.receive())["error"]["code"] == -32700
        await peer.send({"jsonrpc": "2.0", "id": 10, "method": "no/such"})
        assert (await peer.receive())["error"]["code"] == -32601
        assert (await peer.request("ping"))["result"] == {}


async def test_the_server_s_session_ends_with_the_block() -> None:
    server = make_server()
    with trio.fail_after(5):
        async with serve_raw(server) as peer:
            await peer.initialize()
    stats = server.statistics()
    assert stats.sessions_open == 0 and stats.sessions_total == 1
