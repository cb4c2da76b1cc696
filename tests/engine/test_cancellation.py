"""Cancellation at every await point of a request and of a handler.

Invariants checked after each cancellation:

* nothing leaks: no pending request on either side (the caller's, and the
  handler's own calls to the peer), no in-flight entry or handler task on the
  handler's side;
* a handler cancelled by ``notifications/cancelled`` sends no response;
* the session keeps working;
* over the sweep, the cancellation landed on every await point of the handler.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from mcp_trio import Frame, RequestContext, open_memory_transport_pair, open_session
from mcp_trio.types import _versions
from tests._support.engine import pipe_pair

LEGACY = [v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]
MODERN = [v for v in _versions.SUPPORTED_VERSIONS if _versions.is_stateless(v)]


class Recorder(trio.abc.Channel[Frame]):
    """Wraps a channel and logs every frame in and out, in order."""

    def __init__(self, inner: trio.abc.Channel[Frame]) -> None:
        self.inner = inner
        self.log: list[tuple[str, Any]] = []

    async def send(self, value: Frame) -> None:
        self.log.append(("out", json.loads(value.data)))
        await self.inner.send(value)

    async def receive(self) -> Frame:
        frame = await self.inner.receive()
        self.log.append(("in", json.loads(frame.data)))
        return frame

    async def aclose(self) -> None:
        await self.inner.aclose()


def responses_to(log: list[tuple[str, Any]], ids: set[Any]) -> list[Any]:
    return [m for d, m in log if d == "out" and "method" not in m and m.get("id") in ids]


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


#: The await points of the busy handler, in order ("request" only where the
#: server may call the client, i.e. not in the stateless revisions).
BUSY_STEPS = (
    "notify",
    "progress-1",
    "notify-2",
    "progress-2",
    "checkpoint",
    "sleep",
    "request",
    "checkpoints",
    "forever",
)


def busy_handler_recording(hits: collections.Counter[str], tasks: list[str] | None = None) -> Any:
    """A handler with many await points of different kinds, that never finishes
    by itself; ``hits[step]`` counts the cancellations raised at each step.

    Each send but the first follows another send, so with a busy writer it
    waits for room (a send with room raises only a cancellation already pending
    on entry, which is how the first one is hit: the cancellation arrived with
    the request).  ``tasks`` (if given) collects the name of each busy call's task.
    """

    async def busy_handler(ctx: RequestContext, params: Any) -> Any:
        if tasks is not None and params.name == "busy":
            tasks.append(trio.lowlevel.current_task().name)
        if params.name == "quick":
            return text("quick")
        step = ""
        try:
            step = "notify"
            await ctx.notify("notifications/message", {"level": "info", "data": "starting"})
            step = "progress-1"
            await ctx.report_progress(1)
            step = "notify-2"
            await ctx.notify("notifications/message", {"level": "info", "data": "working"})
            step = "progress-2"
            await ctx.report_progress(2, message="halfway")
            step = "checkpoint"
            await trio.lowlevel.checkpoint()
            step = "sleep"
            for _ in range(3):
                await trio.lowlevel.checkpoint()
            if not _versions.is_stateless(ctx.version):
                step = "request"
                result = await ctx.request("roots/list", timeout=5)
                assert len(result.roots) == 1
            step = "checkpoints"
            for _ in range(5):
                await trio.lowlevel.checkpoint()
            step = "forever"
            await trio.sleep_forever()
        except trio.Cancelled:
            hits[step] += 1
            raise
        raise AssertionError("unreachable")

    return busy_handler


busy_handler = busy_handler_recording(collections.Counter())


async def list_roots(ctx: RequestContext, params: Any) -> Any:
    await trio.lowlevel.checkpoint()
    return {"roots": [{"uri": "file:///tmp"}]}


async def cancel_after(scope: trio.CancelScope, checkpoints: int) -> None:
    for _ in range(checkpoints):
        await trio.lowlevel.checkpoint()
    scope.cancel()


async def settle(*sessions: Any) -> None:
    with trio.fail_after(5):
        while any(s.statistics()["requests_in_progress"] or s.core.in_flight_ids for s in sessions):
            await trio.testing.wait_all_tasks_blocked()


@pytest.mark.parametrize("relay", [False, True], ids=["handler-tasks", "reader-relay"])
@pytest.mark.parametrize("version", [LEGACY[0], *MODERN[:1]])
async def test_cancel_at_every_await_point(version: str, relay: bool) -> None:
    hits: collections.Counter[str] = collections.Counter()
    tasks: list[str] = []
    server_channel, client_channel = pipe_pair(relay=relay)
    roots_hang = False

    async def list_roots_or_hang(ctx: RequestContext, params: Any) -> Any:
        # When it hangs, only the server's notifications/cancelled ends it.
        if roots_hang:
            await trio.sleep_forever()
        return await list_roots(ctx, params)

    async with (
        open_session(
            server_channel,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}, "logging": {}},
            request_handlers={"tools/call": busy_handler_recording(hits, tasks)},
            outbox_size=0,  # a send waits while the writer is still sending
            reader_relay=relay,
        ) as srv,
        open_session(
            client_channel,
            role="client",
            info={"name": "c", "version": "1"},
            capabilities={"roots": {}},
            versions=[version],
            request_handlers={"roots/list": list_roots_or_hang},
            reader_relay=relay,
        ) as cli,
    ):
        assert await cli.connect() == version

        async def on_progress(*_: Any) -> None:
            await trio.lowlevel.checkpoint()

        for send_delay, read_delay in [(0, 0), (2, 0), (0, 3), (2, 3)]:
            server_channel.send_delay = send_delay
            server_channel.read_delay = read_delay
            for checkpoints in range(0, 40):
                roots_hang = checkpoints % 4 == 3
                async with trio.open_nursery() as n:
                    scope = trio.CancelScope()
                    n.start_soon(cancel_after, scope, checkpoints)
                    with scope:
                        await cli.request("tools/call", {"name": "busy"}, on_progress=on_progress)
                    assert scope.cancelled_caught, "the busy handler never finishes by itself"
                await settle(srv, cli)
                # caller side: nothing pending
                assert cli.statistics()["pending_requests"] == 0
                assert cli.core.pending_ids == []
                # handler side: nothing in flight, the handler task is gone, and
                # nothing of its own call to the client is left pending
                assert srv.core.in_flight_ids == [] and srv.statistics()["requests_in_progress"] == 0
                assert srv.core.pending_ids == [] and srv.statistics()["pending_requests"] == 0
                # still usable
                result = await cli.request("tools/call", {"name": "quick"})
                assert result.content[0].text == "quick"
    # every await point of the handler was hit by some cancellation
    expected = [s for s in BUSY_STEPS if s != "request" or not _versions.is_stateless(version)]
    assert sorted(hits) == sorted(expected), hits
    # with relay, calls read last ran in a reader's task (the rest in their own)
    relayed = sum(name.endswith("Reader.next_reader") for name in tasks)
    assert (relayed > 0) if relay else (relayed == 0), tasks
    if relay:
        assert relayed < len(tasks)  # (a frame behind it in the read: a task of its own)
    # every busy call was cancelled: none of them may have been answered
    busy_ids = {
        m["id"]
        for d, m in server_channel.log
        if d == "in" and m.get("method") == "tools/call" and m["params"]["name"] == "busy"
    }
    assert busy_ids and responses_to(server_channel.log, busy_ids) == []
    # each busy call that reached the server was followed by notifications/cancelled
    cancels = {
        m["params"]["requestId"]
        for d, m in server_channel.log
        if d == "in" and m.get("method") == "notifications/cancelled"
    }
    assert busy_ids <= cancels
    # each of the handlers' own calls to the client was answered, or cancelled
    # when its handler was
    roots_ids = {m["id"] for d, m in server_channel.log if d == "out" and m.get("method") == "roots/list"}
    answered = {m["id"] for d, m in server_channel.log if d == "in" and "method" not in m}
    given_up = {
        m["params"]["requestId"]
        for d, m in server_channel.log
        if d == "out" and m.get("method") == "notifications/cancelled"
    }
    assert roots_ids <= answered | given_up
    if not _versions.is_stateless(version):
        assert roots_ids & given_up and roots_ids & answered


async def test_cancel_quick_requests_at_every_point() -> None:
    """The caller side of request(): cancelled anywhere, it leaks nothing, and any answer
    that arrives later is dropped."""
    a, b = open_memory_transport_pair()
    async with (
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}},
            request_handlers={"tools/call": busy_handler},
        ) as srv,
        open_session(b, role="client", info={"name": "c", "version": "1"}) as cli,
    ):
        await cli.connect()
        outcomes = {"answered": 0, "cancelled": 0}
        for checkpoints in range(0, 30):
            async with trio.open_nursery() as n:
                scope = trio.CancelScope()
                n.start_soon(cancel_after, scope, checkpoints)
                with scope:
                    await cli.request("tools/call", {"name": "quick"})
                    outcomes["answered"] += 1
                if scope.cancelled_caught:
                    outcomes["cancelled"] += 1
            await settle(srv, cli)
            assert cli.statistics()["pending_requests"] == 0 and cli.core.pending_ids == []
        assert outcomes["answered"] > 0 and outcomes["cancelled"] > 0


async def test_initialize_timeout_sends_no_cancel(autojump_clock: Any) -> None:
    a, b = open_memory_transport_pair()
    rec = Recorder(b)
    async with open_session(rec, role="client", info={"name": "c", "version": "1"}, versions=LEGACY) as cli:
        from mcp_trio import RequestTimeout

        with pytest.raises(RequestTimeout):
            await cli.initialize(timeout=1)
    sent = [m for d, m in rec.log if d == "out"]
    assert [m.get("method") for m in sent] == ["initialize"]
    await a.aclose()
