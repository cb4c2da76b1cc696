"""The reader relay: a request read last is handled in the reader's own task.

Over a channel that says how many messages it holds (stdio's), a request that
is the last thing read and finds a free slot runs in the task that read it,
in a context of its own.  If it never waits, reading just goes on (no task
was started for it); the first time it waits, a successor reader is started
and the reading goes on there.  Its answer leaves in the same task step that
read the request (one trip through the scheduler less than a task started
for it).  These tests drive a server session over real pipes and check that
it is so, and that nothing else changes: reading goes on while such a request
waits, it can be cancelled, a burst still gets concurrent tasks, contexts do
not leak from one request to the next, and the end of input still ends the
session.
"""

from __future__ import annotations

import contextvars
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.lowlevel
import trio.testing

from mcp_trio import RequestContext, Session, new_session
from mcp_trio.transports.stdio import StreamChannel, _PipeStream

INFO = {"name": "t", "version": "1"}
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": INFO},
}


class Steps(trio.abc.Instrument):
    """Counts task steps, so a test can tell whether two things happened in
    one, and the tasks started."""

    def __init__(self) -> None:
        self.count = 0
        self.spawned: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned.append(task.name)


class RecordingPipe(_PipeStream):
    """A pipe end that notes the task step of each read and each atomic write."""

    def __init__(self, fd: int, steps: Steps, log: list[tuple[str, int, bytes]]) -> None:
        super().__init__(fd)
        self._steps = steps
        self._log = log

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await super().receive_some(max_bytes)
        self._log.append(("read", self._steps.count, data))
        return data

    def send_all_nowait(self, data: bytes) -> None:
        super().send_all_nowait(data)
        self._log.append(("write", self._steps.count, data))


class Peer:
    """The test's side of the pipes: raw JSON lines."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd = write_fd
        self.reader = _PipeStream(read_fd)
        self.buffer = b""

    def send(self, *messages: dict[str, Any]) -> None:
        os.write(self.write_fd, b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(5):
            while b"\n" not in self.buffer:
                self.buffer += await self.reader.receive_some(65536)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def answers(self, count: int) -> dict[Any, dict[str, Any]]:
        found: dict[Any, dict[str, Any]] = {}
        while len(found) < count:
            message = await self.receive()
            if "id" in message and "method" not in message:
                found[message["id"]] = message
        return found


@asynccontextmanager
async def served(
    handlers: dict[str, Any], steps: Steps | None = None, **options: Any
) -> AsyncIterator[tuple[Session, Peer, list[Any]]]:
    steps = steps or Steps()
    trio.lowlevel.add_instrument(steps)
    log: list[tuple[str, int, bytes]] = []
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    channel = StreamChannel(RecordingPipe(in_r, steps, log), RecordingPipe(out_w, steps, log))
    session = new_session(
        channel, role="server", info=INFO, capabilities={"tools": {}}, request_handlers=handlers, **options
    )
    peer = Peer(in_w, out_r)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            peer.send(INIT)
            assert (await peer.receive())["result"]["protocolVersion"] == "2025-11-25"
            peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield session, peer, log
            os.close(in_w)  # end of input: the session ends by itself
            with trio.fail_after(5):
                await session.closed.wait()
    finally:
        trio.lowlevel.remove_instrument(steps)
        await peer.reader.aclose()


def call(id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def echo(ctx: RequestContext, params: Any) -> Any:
    return {"content": [{"type": "text", "text": params.arguments["text"]}]}


def remembering(var: contextvars.ContextVar[str], *, see_scope: bool = False) -> Any:
    """A ``tools/call`` handler that answers with what ``var`` holds, then sets
    it to the call's ``text`` (which no later request may see); ``see_scope``:
    it also reads ``ctx.cancel_scope``."""

    async def remember(ctx: RequestContext, params: Any) -> Any:
        seen = var.get()
        var.set(params.arguments["text"])
        if see_scope:
            ctx.cancel_scope  # noqa: B018 - only reading it
        return {"content": [{"type": "text", "text": seen}]}

    return remember


async def test_a_lone_request_is_answered_in_the_step_that_read_it() -> None:
    async with served({"tools/call": echo}) as (session, peer, log):
        for id in range(1, 6):
            del log[:]
            peer.send(call(id, "echo", text=f"t{id}"))
            answer = await peer.receive()
            assert answer == {
                "jsonrpc": "2.0",
                "id": id,
                "result": {"content": [{"type": "text", "text": f"t{id}"}]},
            }
            reads = [step for kind, step, data in log if kind == "read" and b'"tools/call"' in data]
            writes = [step for kind, step, data in log if kind == "write"]
            assert len(reads) == 1 and writes == reads  # read, handled and answered in one task step
    assert session.core.closed and "closed the connection" in session._close_reason


async def test_reading_goes_on_while_the_relayed_request_runs_and_it_can_be_cancelled() -> None:
    started = trio.Event()
    outcome: list[str] = []

    async def slow(ctx: RequestContext, params: Any) -> Any:
        if params.name == "echo":
            return await echo(ctx, params)
        started.set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            outcome.append(f"cancelled in {trio.lowlevel.current_task().name}")
            raise

    async with served({"tools/call": slow}) as (session, peer, log):
        peer.send(call(1, "slow"))
        with trio.fail_after(5):
            await started.wait()
        # the reader took request 1; its successor answers others meanwhile
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        peer.send(call(3, "echo", text="still here"))
        assert (await peer.receive())["result"]["content"][0]["text"] == "still here"
        assert session.statistics()["requests_in_progress"] == 1
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        with trio.fail_after(5):
            while session.statistics()["requests_in_progress"]:
                await trio.sleep(0.001)
        assert len(outcome) == 1 and outcome[0].startswith("cancelled in")
        # no answer for the cancelled request: the next line is the answer to 4
        peer.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 4, "result": {}}


async def test_a_burst_still_runs_concurrently() -> None:
    arrived: list[int] = []
    everyone = trio.Event()

    async def gather(ctx: RequestContext, params: Any) -> Any:
        # each waits for all three: only concurrent handlers can finish
        arrived.append(params.arguments["n"])
        if len(arrived) == 3:
            everyone.set()
        await everyone.wait()
        return {"content": [{"type": "text", "text": str(params.arguments["n"])}]}

    async with served({"tools/call": gather}) as (session, peer, log):
        peer.send(*(call(10 + n, "gather", n=n) for n in range(3)))  # one write: one read
        answers = await peer.answers(3)
        assert {id: a["result"]["content"][0]["text"] for id, a in answers.items()} == {
            10: "0",
            11: "1",
            12: "2",
        }


async def test_no_relay_without_a_free_slot() -> None:
    release = trio.Event()
    order: list[int] = []

    async def one_at_a_time(ctx: RequestContext, params: Any) -> Any:
        n = params.arguments["n"]
        order.append(n)
        if n == 1:
            await release.wait()
        return {"content": [{"type": "text", "text": str(n)}]}

    async with served({"tools/call": one_at_a_time}, max_in_flight=1) as (session, peer, log):
        peer.send(call(1, "one_at_a_time", n=1))
        with trio.fail_after(5):
            while order != [1]:
                await trio.sleep(0.001)
        peer.send(call(2, "one_at_a_time", n=2))  # read while 1 holds the only slot: queued
        await trio.sleep(0.05)
        assert order == [1]
        release.set()
        answers = await peer.answers(2)
        assert sorted(answers) == [1, 2] and order == [1, 2]


async def test_requests_that_never_wait_start_no_task_and_each_gets_its_own_context() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    steps = Steps()
    async with served({"tools/call": remembering(var)}, steps) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        for id in range(1, 6):
            peer.send(call(id, "remember", text=f"set by {id}"))
            assert (await peer.receive())["result"]["content"][0]["text"] == "unset"
        assert steps.spawned == []  # read, handled, answered by the reader itself


async def test_a_request_that_waits_hands_the_reading_on() -> None:
    napping = trio.Event()

    async def nap(ctx: RequestContext, params: Any) -> Any:
        napping.set()
        await trio.sleep(0.05)
        return {"content": [{"type": "text", "text": "rested"}]}

    steps = Steps()
    async with served({"tools/call": nap}, steps) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        peer.send(call(1, "nap"))
        with trio.fail_after(5):
            await napping.wait()
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # read by the successor meanwhile
        answers = await peer.answers(2)
        assert answers[1]["result"]["content"][0]["text"] == "rested" and answers[2]["result"] == {}
        # one successor reader at the first wait; the ping needed no task
        assert steps.spawned == ["mcp_trio._engine._session.Session._next_reader"]


async def test_a_handler_that_uses_its_cancel_scope_without_waiting_touches_no_other_request() -> None:
    # Until it waits, a request the reader serves runs in the reader's own
    # cancel scope (one per reader, not one per request).  A handler that
    # cancels its scope, gives it a deadline, or keeps it and cancels it long
    # after, must change nothing for the requests after it, and reading must
    # go on in a single reader.
    kept: list[trio.CancelScope] = []
    cancelling = trio.Event()

    async def meddle(ctx: RequestContext, params: Any) -> Any:
        what = params.arguments["what"]
        if what == "cancel":
            ctx.cancel_scope.cancel()
        elif what == "deadline":
            ctx.cancel_scope.deadline = trio.current_time()  # already past
        elif what == "keep":
            kept.append(ctx.cancel_scope)
        elif what == "stale":
            kept[0].cancel()  # the scope of a request answered before
        elif what == "cancel, then wait":
            ctx.cancel_scope.cancel()
            cancelling.set()
            await trio.lowlevel.checkpoint()  # cancelled here: no answer
        elif what == "nap":
            await trio.sleep(0.01)
        return {"content": [{"type": "text", "text": f"{what}: {ctx.cancelled}"}]}

    async with served({"tools/call": meddle}) as (session, peer, log):
        expected = {
            "cancel": "cancel: True",  # it never waited: answered, as in a task of its own
            "nap": "nap: False",
            "deadline": "deadline: True",
            "plain": "plain: False",
            "keep": "keep: False",
            "stale": "stale: False",
        }
        sequence = ["cancel", "nap", "deadline", "plain", "nap", "keep", "stale", "nap", "plain"]
        for id, what in enumerate(sequence, 1):
            peer.send(call(id, "meddle", what=what))
            answer = await peer.receive()
            assert answer["id"] == id and answer["result"]["content"][0]["text"] == expected[what]
        peer.send(call(20, "meddle", what="cancel, then wait"))
        with trio.fail_after(5):
            await cancelling.wait()
            while session.statistics()["requests_in_progress"]:
                await trio.sleep(0.001)
        peer.send({"jsonrpc": "2.0", "id": 21, "method": "ping"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 21, "result": {}}  # none for 20
        for id in (22, 23):
            peer.send(call(id, "meddle", what="nap"))
            assert (await peer.receive())["result"]["content"][0]["text"] == "nap: False"
        assert session.statistics()["requests_in_progress"] == 0
