"""The reader relay (the ``reader_relay`` option, off by default): a request read last is
handled in the reader's own task.

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
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from mcp_trio import RequestContext
from mcp_trio._engine import _reader
from tests._support.engine import Steps, call, remembering, served


async def echo(ctx: RequestContext, params: Any) -> Any:
    return {"content": [{"type": "text", "text": params.arguments["text"]}]}


async def test_a_lone_request_is_answered_in_the_step_that_read_it() -> None:
    async with served({"tools/call": echo}, reader_relay=True) as (session, peer, log):
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
    assert session.core.closed and "closed the connection" in session._ending.reason


async def test_without_the_option_no_handler_is_stepped_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*args: object) -> None:
        raise AssertionError("a handler was stepped by hand")

    monkeypatch.setattr(_reader, "until_it_waits", never)
    steps = Steps()
    async with served({"tools/call": echo}, steps) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        for id in range(1, 6):
            del log[:]
            peer.send(call(id, "echo", text=f"t{id}"))
            assert (await peer.receive())["result"]["content"][0]["text"] == f"t{id}"
            reads = [step for kind, step, data in log if kind == "read" and b'"tools/call"' in data]
            writes = [step for kind, step, data in log if kind == "write"]
            assert len(reads) == 1 and len(writes) == 1 and writes[0] > reads[0]  # another task's step
        # the first request's task stayed for the next ones (the session's idle handler task)
        assert [name for name in steps.spawned if "Sweep" not in name and "sweep" not in name] == [
            "mcp_trio._engine._handlers.HandlerRunner.handle_request"
        ]


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

    async with served({"tools/call": slow}, reader_relay=True) as (session, peer, log):
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

    async with served({"tools/call": gather}, reader_relay=True) as (session, peer, log):
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

    async with served({"tools/call": one_at_a_time}, max_in_flight=1, reader_relay=True) as (
        session,
        peer,
        log,
    ):
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
    async with served({"tools/call": remembering(var)}, steps, reader_relay=True) as (session, peer, log):
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
    async with served({"tools/call": nap}, steps, reader_relay=True) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        peer.send(call(1, "nap"))
        with trio.fail_after(5):
            await napping.wait()
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})  # read by the successor meanwhile
        answers = await peer.answers(2)
        assert answers[1]["result"]["content"][0]["text"] == "rested" and answers[2]["result"] == {}
        # one successor reader at the first wait; the ping needed no task
        assert steps.spawned == ["mcp_trio._engine._reader.Reader.next_reader"]


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

    async with served({"tools/call": meddle}, reader_relay=True) as (session, peer, log):
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
