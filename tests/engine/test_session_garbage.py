"""A session that ends leaves no reference cycles behind: under load (thousands of HTTP
sessions ending by cancellation: DELETE, idle expiry, eviction) each cycle would wait for the
cyclic garbage collector, whose full passes then take long enough to delay every client."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import trio
import trio.testing

from mcp_trio import RequestContext, open_memory_transport_pair, open_session
from mcp_trio._engine._session import new_session
from mcp_trio.transports.http.server._endpoint import StreamableHTTP
from mcp_trio.transports.http.server._streams import _HttpSession
from tests._support.engine import SERVER_CAPS, tool_result

SERVER = {"role": "server", "info": {"name": "s", "version": "1"}, "capabilities": SERVER_CAPS}


async def _run_and_cancel() -> None:
    near, _far = open_memory_transport_pair()
    session = new_session(near, **SERVER)  # type: ignore[arg-type]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(session.run)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()  # as the HTTP transport ends a session


async def test_a_cancelled_session_leaves_no_reference_cycles() -> None:
    await _run_and_cancel()  # first use: whatever is built once
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            await _run_and_cancel()
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"{found} objects in reference cycles after 5 sessions ended"


async def test_sessions_keep_their_attributes_compact() -> None:
    """A server holds thousands of sessions.  CPython shares one table of attribute names
    between instances of a class only while they have under 30 attributes; past that each
    session carries a dictionary of its own, about 1.3 KiB more.  The HTTP transport's
    channel of a session has slots (no dictionary at all)."""
    near, _far = open_memory_transport_pair()
    session = new_session(near, **SERVER)  # type: ignore[arg-type]
    assert len(vars(session)) < 30, sorted(vars(session))
    channel = _HttpSession(StreamableHTTP(_serve_nothing), "id")
    assert not hasattr(channel, "__dict__")


async def _serve_nothing(channel: object) -> None:
    await trio.lowlevel.checkpoint()


async def test_an_ended_session_is_freed_by_reference_counting_alone() -> None:
    """The collaborators that call back into the session (reader, request runner, writer) hold
    it only while it runs: once ``run`` returns, dropping the last reference frees it, with the
    cyclic garbage collector off."""

    async def echo(ctx: RequestContext, params: Any) -> Any:
        await trio.lowlevel.checkpoint()  # (it waits: the reader hands the reading on)
        return tool_result(params.arguments["text"])

    near, far = open_memory_transport_pair()
    session = new_session(near, **SERVER, request_handlers={"tools/call": echo})  # type: ignore[arg-type]
    gc.collect()
    gc.disable()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(session.run)
            async with open_session(far, role="client", info={"name": "c", "version": "1"}) as client:
                await client.connect()
                result = await client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
                assert result.content[0].text == "hi"
        assert session.closed.is_set()
        freed = weakref.ref(session)
        del session, nursery
        assert freed() is None, gc.get_referrers(freed())
    finally:
        gc.enable()
