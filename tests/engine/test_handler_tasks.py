"""Handler tasks: a task started for a request goes on with the requests queued behind it.

When more requests arrive than ``max_in_flight`` lets run (a pipelining peer),
the rest wait in a queue.  A handler task that has answered its request takes
the next queued one itself, in the same cancel scope, instead of ending and
having a new task started for it, unless its handler set a context variable
(the next request then gets a task of its own, and a fresh copy).  These tests
drive a server session over real pipes (the helpers of ``test_reader_relay``)
and check that nothing else changes: contexts do not carry over, a queued
request can still be cancelled, a handler that uses its cancel scope (or
catches its cancellation) touches no request after it, and an answer once made
is sent even if its cancel scope is cancelled while the answer waits for room.
"""

from __future__ import annotations

import contextvars
from typing import Any

import trio
import trio.testing

from mcp_trio import RequestContext
from tests._support.engine import Steps, call, remembering, served

HANDLER = "mcp_trio._engine._handlers.HandlerRunner.handle_request"  # the name of request handler tasks


def text_of(answer: dict[str, Any]) -> str:
    return answer["result"]["content"][0]["text"]


async def test_a_burst_beyond_the_slots_is_served_by_the_tasks_of_those_slots() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    steps = Steps()

    async def look(ctx: RequestContext, params: Any) -> Any:  # (sets nothing)
        return {"content": [{"type": "text", "text": var.get()}]}

    async with served({"tools/call": look}, steps, max_in_flight=2, max_queued=16) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        peer.send(*(call(id, "look") for id in range(1, 9)))  # one write
        answers = await peer.answers(8)
        assert sorted(answers) == list(range(1, 9))
        assert {text_of(a) for a in answers.values()} == {"unset"}
        assert steps.spawned.count(HANDLER) == 2  # one per slot, not one per request
        assert session.statistics()["requests_in_progress"] == 0


async def test_a_handler_that_sets_a_context_variable_ends_its_task() -> None:
    # Each handler sets what the next one would see if they shared a task:
    # none of them may see it, so each such request gets a task of its own.
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    steps = Steps()
    handlers = {"tools/call": remembering(var)}
    async with served(handlers, steps, max_in_flight=2, max_queued=16) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        peer.send(*(call(id, "remember", text=f"set by {id}") for id in range(1, 9)))  # one write
        answers = await peer.answers(8)
        assert sorted(answers) == list(range(1, 9))
        assert {text_of(a) for a in answers.values()} == {"unset"}
        assert steps.spawned.count(HANDLER) == 8
        assert session.statistics()["requests_in_progress"] == 0


async def test_a_queued_request_taken_by_a_handler_task_can_be_cancelled() -> None:
    release = trio.Event()
    waiting = trio.Event()
    outcome: list[str] = []

    async def work(ctx: RequestContext, params: Any) -> Any:
        what = params.arguments["what"]
        if what == "first":
            await release.wait()
        elif what == "forever":
            waiting.set()
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                outcome.append("cancelled")
                raise
        return {"content": [{"type": "text", "text": what}]}

    async with served({"tools/call": work}, max_in_flight=1) as (session, peer, log):
        peer.send(call(1, "work", what="first"), call(2, "work", what="forever"))
        with trio.fail_after(5):
            while (n := session.statistics())["requests_in_progress"] != 1 or not n["requests_queued"]:
                await trio.sleep(0.001)
        release.set()  # the task of 1 answers it, then takes 2
        assert text_of(await peer.receive()) == "first"
        with trio.fail_after(5):
            await waiting.wait()
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        with trio.fail_after(5):
            while session.statistics()["requests_in_progress"]:
                await trio.sleep(0.001)
        assert outcome == ["cancelled"]
        peer.send(call(3, "work", what="after"), call(4, "work", what="and after"))
        answers = await peer.answers(2)  # none for 2
        assert {id: text_of(a) for id, a in answers.items()} == {3: "after", 4: "and after"}


async def test_a_handler_that_uses_its_cancel_scope_touches_no_queued_request() -> None:
    async def meddle(ctx: RequestContext, params: Any) -> Any:
        what = params.arguments["what"]
        if what == "cancel":
            ctx.cancel_scope.cancel()  # and never waits: answered all the same
        elif what == "nap":
            await trio.sleep(0.01)
        return {"content": [{"type": "text", "text": f"{what}: {ctx.cancelled}"}]}

    async with served({"tools/call": meddle}, max_in_flight=1) as (session, peer, log):
        burst = ["nap", "cancel", "nap", "cancel", "cancel", "nap", "nap"]
        peer.send(*(call(id, "meddle", what=what) for id, what in enumerate(burst, 1)))
        answers = await peer.answers(len(burst))
        assert [text_of(answers[id]) for id in range(1, len(burst) + 1)] == [
            f"{what}: {what == 'cancel'}" for what in burst
        ]


async def test_an_answer_waiting_for_room_is_sent_even_if_its_scope_was_cancelled() -> None:
    # The peer does not read for a while: the pipe fills, then the outbox (one
    # frame), and the third answer must wait for room.  Its handler cancelled
    # its own scope and returned without waiting: in a task of its own that
    # changes nothing (the answer is made), so here it must not either, although
    # the request ran in the reader's scope.
    big = "x" * 100_000

    async def large(ctx: RequestContext, params: Any) -> Any:
        tag = params.arguments["tag"]
        if tag == "3":
            ctx.cancel_scope.cancel()
        return {"content": [{"type": "text", "text": big + tag}]}

    async with served({"tools/call": large}, outbox_size=1) as (session, peer, log):
        for id in (1, 2, 3):
            peer.send(call(id, "large", tag=str(id)))
            await trio.sleep(0.05)  # each read alone: answered by the reader
        await trio.testing.wait_all_tasks_blocked()
        answers = await peer.answers(3)
        assert {id: text_of(a)[-1] for id, a in answers.items()} == {1: "1", 2: "2", 3: "3"}
        peer.send({"jsonrpc": "2.0", "id": 4, "method": "ping"})
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        assert session.statistics()["requests_in_progress"] == 0


async def test_a_task_started_after_a_handler_task_sees_none_of_its_context() -> None:
    # The first request spoils its task's scope (it reads ctx.cancel_scope), so
    # the second gets a task of its own, started as the first one's ends: it
    # must not see what the first handler set in its context.
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    steps = Steps()
    handlers = {"tools/call": remembering(var, see_scope=True)}  # each task takes no further request
    async with served(handlers, steps, max_in_flight=1, max_queued=8) as (session, peer, log):
        await trio.testing.wait_all_tasks_blocked()
        del steps.spawned[:]
        peer.send(*(call(id, "remember", text=f"set by {id}") for id in range(1, 4)))
        answers = await peer.answers(3)
        assert {text_of(a) for a in answers.values()} == {"unset"}
        assert steps.spawned.count(HANDLER) == 3


async def test_a_handler_that_swallows_its_cancellation_leaves_the_next_queued_request_alone() -> None:
    # A handler that catches its Cancelled and returns (say, what it has so
    # far) leaves its scope cancelled: the task must not serve the next
    # queued request in it, or that request would be cancelled at its first wait.
    started = trio.Event()

    async def work(ctx: RequestContext, params: Any) -> Any:
        what = params.arguments["what"]
        if what == "stubborn":
            started.set()
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                return {"content": [{"type": "text", "text": "partial"}]}
        await trio.sleep(0.01)
        return {"content": [{"type": "text", "text": what}]}

    async with served({"tools/call": work}, max_in_flight=1, max_queued=8) as (session, peer, log):
        peer.send(call(1, "work", what="stubborn"), call(2, "work", what="next"))  # 2 waits behind 1
        with trio.fail_after(5):
            await started.wait()
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        answer = await peer.receive()
        while answer.get("id") != 2:  # (whatever becomes of 1's late result)
            answer = await peer.receive()
        assert text_of(answer) == "next"
