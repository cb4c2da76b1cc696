"""Connections that end leave (almost) no reference cycles behind on the hypercorn door: its
connection objects point at each other through their send callbacks; under a flood of
connections each cycle waited for the cyclic GC, whose full passes then took long enough to
delay every client (tests/soak)."""

from __future__ import annotations

import gc

import pytest
import trio
import trio.testing

from tests._support.doors import DOORS
from tests._support.http_doors import REQUEST, Answer, closed_by_server, connect
from tests._support.http_doors import serving as door_serving
from tests._support.http_lean import Reader, make_server, post, serving

PING = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
CONNECTIONS = 10


async def _one_connection(port: int) -> None:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(post(PING))  # no session: answered 400
    status, _, _ = await Reader(stream).response()
    assert status == 400
    await stream.aclose()


async def test_ended_hypercorn_connections_leave_few_reference_cycles() -> None:
    server, _ = make_server()
    async with serving("hypercorn", server) as (port, _endpoint):
        with trio.fail_after(20):
            await _one_connection(port)  # first use
            await trio.sleep(0.2)
            gc.collect()
            gc.disable()
            try:
                for _ in range(CONNECTIONS):
                    await _one_connection(port)
                await trio.sleep(0.2)  # the server's side ends
                await trio.testing.wait_all_tasks_blocked()
                found = gc.collect()
            finally:
                gc.enable()
    # (hypercorn's own Cancelled and StreamClosed tracebacks still make a few)
    assert found < 12 * CONNECTIONS, f"{found} objects in cycles after {CONNECTIONS} connections"


@pytest.mark.parametrize("door", DOORS)
async def test_connections_the_server_closes_leave_no_reference_cycles(door: str) -> None:
    """A connection's objects are freed when it ends, not left to the cyclic GC's full
    passes (on hypercorn a cancellation through its frames left each whole connection in
    a cycle): here the server closes each connection after its answer."""
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        async with door_serving(door, Answer()) as port:
            with trio.fail_after(5):
                for _ in range(10):
                    sock = await connect(port)
                    await sock.send(REQUEST.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n"))
                    assert await closed_by_server(sock)
                    sock.close()
                await trio.sleep(0.2)  # (the last one ends)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if type(o).__name__ in ("TimedStream", "socket", "Task")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left, f"ended connections left in reference cycles: {left}"
