"""A session that ends leaves no reference cycles behind: under load (thousands of HTTP
sessions ending by cancellation: DELETE, idle expiry, eviction) each cycle would wait for the
cyclic garbage collector, whose full passes then take long enough to delay every client."""

from __future__ import annotations

import gc

import trio
import trio.testing

from mcp_trio import open_memory_transport_pair
from mcp_trio._engine._session import new_session
from mcp_trio.transports.http.server._endpoint import StreamableHTTP
from mcp_trio.transports.http.server._streams import _HttpSession
from tests._support.engine import SERVER_CAPS

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
