"""The end of the input (EOF): requests already read are answered within
``eof_grace``; our own pending requests fail with ConnectionClosed at once."""

from __future__ import annotations

import json
from typing import Any

import trio

from mcp_trio import ConnectionClosed, Frame, RequestContext, open_session
from mcp_trio.transports.memory import MemoryChannel

INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{"roots":{}},"clientInfo":{"name":"t","version":"1"}}}'
)
INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
CALL = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}'


async def _serve_until_eof(handler: Any, **options: Any) -> tuple[list[Any], float]:
    """Write initialize, initialized and one tools/call, wait for the handler's
    outgoing request, close the server's input; all the server wrote, and how
    long the session lasted after the EOF."""
    to_server, server_in = trio.open_memory_channel[Frame](16)
    server_out, from_server = trio.open_memory_channel[Frame](16)
    channel = MemoryChannel(server_out, server_in)
    out: list[Any] = []
    with trio.fail_after(10):
        options.update(capabilities={"tools": {}}, request_handlers={"tools/call": handler})
        info = {"name": "s", "version": "1"}
        async with open_session(channel, role="server", info=info, **options) as session:
            for data in (INIT, INITIALIZED, CALL):
                await to_server.send(Frame(data))
            while not any(m.get("method") == "roots/list" for m in out):
                out.append(json.loads((await from_server.receive()).data))
            await to_server.aclose()  # EOF
            start = trio.current_time()
            await session.closed.wait()
            elapsed = trio.current_time() - start
        async for frame in from_server:
            out.append(json.loads(frame.data))
    return out, elapsed


async def test_our_pending_request_fails_at_eof_and_the_handler_still_answers() -> None:
    async def handler(ctx: RequestContext, params: Any) -> Any:
        try:
            await ctx.session.request("roots/list", timeout=30)
        except ConnectionClosed:
            await trio.sleep(0.05)  # still running after the EOF
            return {"content": [{"type": "text", "text": "peer gone"}]}
        return {"content": []}

    out, _ = await _serve_until_eof(handler, eof_grace=2)
    answer = [m for m in out if m.get("id") == 1 and "method" not in m]
    assert answer and answer[0]["result"]["content"][0]["text"] == "peer gone"


async def test_what_outlives_eof_grace_is_cancelled() -> None:
    cancelled = False

    async def handler(ctx: RequestContext, params: Any) -> Any:
        nonlocal cancelled
        try:
            await ctx.session.request("roots/list", timeout=30)
        except ConnectionClosed:
            pass
        try:
            await trio.sleep(30)
        except trio.Cancelled:
            cancelled = True
            raise

    out, elapsed = await _serve_until_eof(handler, eof_grace=0.2)
    assert cancelled and not [m for m in out if m.get("id") == 1 and "method" not in m]
    assert 0.15 < elapsed < 2
