"""Cancellation at every await point of a request and of a handler.

Invariants checked after each cancellation:

* nothing leaks: no pending request on the caller's side, no in-flight entry
  or handler task on the handler's side;
* a handler cancelled by ``notifications/cancelled`` sends no response;
* the session keeps working.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from mcp_trio import Frame, RequestContext, open_memory_transport_pair, open_session
from mcp_trio.types import _versions

LEGACY = [v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]


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


async def busy_handler(ctx: RequestContext, params: Any) -> Any:
    """A handler with many await points of different kinds, that never finishes by itself."""
    if params.name == "quick":
        return text("quick")
    await trio.lowlevel.checkpoint()
    await ctx.report_progress(1)
    await trio.sleep(0)
    result = await ctx.request("roots/list", timeout=5)
    await ctx.report_progress(2, message=str(len(result.roots)))
    await ctx.notify("notifications/message", {"level": "info", "data": "working"})
    for _ in range(5):
        await trio.lowlevel.checkpoint()
    await trio.sleep_forever()
    raise AssertionError("unreachable")


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
            await trio.sleep(0.001)


@pytest.mark.parametrize("version", [LEGACY[0]])
async def test_cancel_at_every_await_point(version: str) -> None:
    a, b = open_memory_transport_pair()
    server_channel = Recorder(a)
    async with open_session(
        server_channel,
        role="server",
        info={"name": "s", "version": "1"},
        capabilities={"tools": {}, "logging": {}},
        request_handlers={"tools/call": busy_handler},
    ) as srv, open_session(
        b,
        role="client",
        info={"name": "c", "version": "1"},
        capabilities={"roots": {}},
        versions=[version],
        request_handlers={"roots/list": list_roots},
    ) as cli:
        await cli.connect()

        async def on_progress(*_: Any) -> None:
            await trio.lowlevel.checkpoint()

        cancelled_ids: set[Any] = set()
        for checkpoints in range(0, 60):
            before = {m.get("id") for d, m in server_channel.log if d == "in" and "method" in m}
            async with trio.open_nursery() as n:
                scope = trio.CancelScope()
                n.start_soon(cancel_after, scope, checkpoints)
                with scope:
                    await cli.request("tools/call", {"name": "busy"}, on_progress=on_progress)
                assert scope.cancelled_caught, "the busy handler never finishes by itself"
            await settle(srv, cli)
            after = {m.get("id") for d, m in server_channel.log if d == "in" and "method" in m}
            cancelled_ids |= {i for i in after - before if isinstance(i, int)}
            # caller side: nothing pending
            assert cli.statistics()["pending_requests"] == 0
            assert cli.core.pending_ids == []
            # handler side: nothing in flight, the handler task is gone
            assert srv.core.in_flight_ids == [] and srv.statistics()["requests_in_progress"] == 0
            # still usable
            result = await cli.request("tools/call", {"name": "quick"})
            assert result.content[0].text == "quick"
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


async def test_cancel_quick_requests_at_every_point() -> None:
    """The caller side of request(): cancelled anywhere, it leaks nothing, and any answer
    that arrives later is dropped."""
    a, b = open_memory_transport_pair()
    async with open_session(
        a,
        role="server",
        info={"name": "s", "version": "1"},
        capabilities={"tools": {}},
        request_handlers={"tools/call": busy_handler},
    ) as srv, open_session(b, role="client", info={"name": "c", "version": "1"}) as cli:
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
