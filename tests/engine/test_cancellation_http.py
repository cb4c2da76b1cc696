"""Cancellation at every await point on the paths only Streamable HTTP takes: input pushed in
by each POST's task, a session's handler task kept between requests (the next request handed
to it), the answer written by the handler's own task (test_cancellation.py covers the paths of
a pulled input: a handler task of its own and the reader relay)."""

from __future__ import annotations

import collections

import msgspec
import trio
import trio.lowlevel
import trio.testing

from mcp_trio.server import Server
from mcp_trio.transports.http.server import HttpRequest, StreamableHTTP
from tests._support.http_server import _Sink
from tests.engine.test_lean_sessions import _answer, _call, _open

STEPS = ["start", "checkpoint", "sleeps", "checkpoints", "forever"]


def _cancel(request_id: int) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    )


def _busy_server(hits: collections.Counter[str], started: list[trio.Event]) -> Server:
    server = Server("cancel", "1")

    @server.tool(structured_output=False)
    async def busy(text: str = "") -> str:
        started[-1].set()
        step = "start"
        try:
            await trio.lowlevel.checkpoint()
            step = "checkpoint"
            await trio.lowlevel.checkpoint()
            step = "sleeps"
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            step = "checkpoints"
            for _ in range(5):
                await trio.lowlevel.checkpoint()
            step = "forever"
            await trio.sleep_forever()
        except trio.Cancelled:
            hits[step] += 1
            raise
        raise AssertionError("unreachable")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        return text

    return server


async def _in_flight(server: Server) -> int:
    await trio.testing.wait_all_tasks_blocked()
    return sum(s.statistics()["requests_in_progress"] for s in server._sessions)


async def test_cancel_at_every_await_point_over_streamable_http() -> None:
    hits: collections.Counter[str] = collections.Counter()
    started: list[trio.Event] = []
    server = _busy_server(hits, started)
    endpoint = StreamableHTTP(server.serve_session)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        headers = await _open(endpoint)
        for checkpoints in range(0, 24):
            request_id = 100 + checkpoints
            started.append(trio.Event())
            sink = _Sink()
            with trio.fail_after(5):
                async with trio.open_nursery() as posts:
                    posts.start_soon(
                        endpoint.handle, HttpRequest("POST", headers, _call(request_id, "busy")), sink
                    )
                    await started[-1].wait()
                    for _ in range(checkpoints):
                        await trio.lowlevel.checkpoint()
                    await endpoint.handle(HttpRequest("POST", headers, _cancel(request_id)), _Sink())
            assert b'"result"' not in sink.body  # a cancelled request is not answered
            assert await _in_flight(server) == 0
            # the session goes on: the next request is served (by the kept task, or a new one)
            assert await _answer(endpoint, headers, _call(1000 + checkpoints)) == str(1000 + checkpoints)
        nursery.cancel_scope.cancel()
    # every await point was hit: the later ones each by some cancel, one of the first two at
    # least (the handler has just told the test it started: which of them the earliest cancel
    # lands on depends on the scheduler's order of the batch)
    assert {"sleeps", "checkpoints", "forever"} <= set(hits) <= set(STEPS), hits
    assert {"start", "checkpoint"} & set(hits), hits


async def test_a_cancel_racing_its_post_leaves_nothing_behind() -> None:
    # A cancel may reach the session before, with or after its request: one that comes first
    # names nothing in progress and is dropped (as the specification says), so the client
    # sends it again; whichever lands, nothing stays in flight and the session goes on.
    hits: collections.Counter[str] = collections.Counter()
    started: list[trio.Event] = [trio.Event()]
    server = _busy_server(hits, started)
    endpoint = StreamableHTTP(server.serve_session)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        headers = await _open(endpoint)
        for checkpoints in range(0, 12):
            request_id = 200 + checkpoints
            sink = _Sink()
            finished = trio.Event()

            async def post(body: bytes, sink: _Sink = sink, finished: trio.Event = finished) -> None:
                await endpoint.handle(HttpRequest("POST", headers, body), sink)
                finished.set()

            with trio.fail_after(5):
                async with trio.open_nursery() as posts:
                    posts.start_soon(post, _call(request_id, "busy"))
                    for _ in range(checkpoints):
                        await trio.lowlevel.checkpoint()
                    while not finished.is_set():
                        await endpoint.handle(HttpRequest("POST", headers, _cancel(request_id)), _Sink())
                        await trio.sleep(0.01)
            assert b'"result"' not in sink.body
            assert await _in_flight(server) == 0
            assert await _answer(endpoint, headers, _call(2000 + checkpoints)) == str(2000 + checkpoints)
        nursery.cancel_scope.cancel()
