"""Property test: random sequences of client and server actions over the in-memory transport.

hypothesis draws a program — calls (fast, slow, with progress), calls cancelled after a random
number of scheduler steps, list changes announced by the server, pings, lists — and runs it
against a real Server and Client, in both protocol eras.  Whatever the interleaving:

* every call that was not cancelled returns its own answer (no answer goes to another call);
* a cancelled call raises Cancelled in its caller, and its handler is cancelled or had finished;
* the client hears every list change the server announced before the end (handshake era) or
  every change on its subscription (stateless era), at least once;
* when the program ends nothing is left: no pending request on either side, no handler running.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server

ACTIONS = st.one_of(
    st.tuples(st.just("call"), st.integers(0, 1000)),
    st.tuples(st.just("slow"), st.integers(0, 6)),
    st.tuples(st.just("progress"), st.integers(1, 4)),
    st.tuples(st.just("cancel_slow"), st.integers(0, 12)),
    st.tuples(st.just("change"), st.just(0)),
    st.tuples(st.just("ping"), st.just(0)),
    st.tuples(st.just("list"), st.just(0)),
)
PROGRAMS = st.lists(st.lists(ACTIONS, min_size=1, max_size=4), min_size=1, max_size=6)


def make_server(running: set[int], cancelled: set[int]) -> Server:
    server = Server("sequences", "1")

    @server.tool
    async def echo(n: int) -> str:
        return f"echo {n}"

    @server.tool
    async def slow(n: int, steps: int) -> str:
        running.add(n)
        try:
            for _ in range(steps):
                await trio.lowlevel.checkpoint()
            return f"slow {n}"
        except trio.Cancelled:
            cancelled.add(n)
            raise
        finally:
            running.discard(n)

    @server.tool
    async def counted(steps: int, ctx: Context) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        return f"counted {steps}"

    return server


stats_cancelled: list[int] = []  # handlers cancelled per program (to check the test reaches them)


async def run_program(program: list[list[tuple[str, int]]], version: str) -> None:
    running: set[int] = set()
    cancelled: set[int] = set()
    server = make_server(running, cancelled)
    changes = 0
    heard: list[str] = []
    counter = iter(range(1_000_000))

    async def on_list_changed(kind: str) -> None:
        heard.append(kind)

    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_client(b, versions=[version], on_list_changed=on_list_changed) as client:
            sub_cm = client.listen(tools=True) if client.modern else None
            sub = await sub_cm.__aenter__() if sub_cm is not None else None

            async def act(kind: str, arg: int) -> None:
                nonlocal changes
                n = next(counter)
                if kind == "call":
                    result = await client.call_tool("echo", {"n": arg})
                    assert result.content[0].text == f"echo {arg}"
                elif kind == "slow":
                    result = await client.call_tool("slow", {"n": n, "steps": arg})
                    assert result.content[0].text == f"slow {n}"
                elif kind == "progress":
                    seen: list[float] = []

                    async def on_progress(value: float, total: float | None, message: str | None) -> None:
                        seen.append(value)

                    result = await client.call_tool("counted", {"steps": arg}, on_progress=on_progress)
                    assert result.content[0].text == f"counted {arg}"
                    assert seen == sorted(seen) and len(seen) <= arg
                elif kind == "cancel_slow":
                    answered: list[Any] = []

                    async def call() -> None:
                        answered.append(await client.call_tool("slow", {"n": n, "steps": 50}))

                    async with trio.open_nursery() as inner:
                        inner.start_soon(call)
                        for _ in range(arg):
                            await trio.lowlevel.checkpoint()
                        inner.cancel_scope.cancel()
                    assert answered == []  # the caller never sees an answer after cancelling
                elif kind == "change":
                    changes += 1
                    server.tool(lambda: "x", name=f"extra_{n}")
                elif kind == "ping":
                    if not client.modern:
                        await client.ping()
                elif kind == "list":
                    assert "echo" in {t.name for t in await client.list_all_tools()}

            for step in program:
                async with trio.open_nursery() as group:  # the actions of a step run at once
                    for kind, arg in step:
                        group.start_soon(act, kind, arg)
            await trio.testing.wait_all_tasks_blocked()
            if changes:
                if sub is not None:
                    with trio.fail_after(5):
                        method, _ = await sub.__anext__()
                    assert method == "notifications/tools/list_changed"
                else:
                    with trio.fail_after(5):
                        while "tools" not in heard:
                            await trio.sleep(0.01)
            if sub_cm is not None:
                await sub_cm.__aexit__(None, None, None)
            await trio.testing.wait_all_tasks_blocked()
            # nothing left behind on either side
            assert client.session.statistics()["pending_requests"] == 0
            (server_session,) = server._sessions
            stats = server_session.statistics()
            assert stats["requests_in_progress"] == 0 and stats["pending_requests"] == 0
            assert running == set()
            stats_cancelled.append(len(cancelled))
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=PROGRAMS)
def test_random_sequences_leave_nothing_behind(version: str, program: list[list[tuple[str, int]]]) -> None:
    trio.run(run_program, program, version, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_sequences_do_cancel_running_handlers() -> None:
    """The cancellations above reach handlers that are running (not only unsent calls)."""
    stats_cancelled.clear()
    program = [[("cancel_slow", k)] for k in range(0, 13)]
    for version in ("2025-11-25", "2026-07-28"):
        trio.run(run_program, program, version, clock=trio.testing.MockClock(autojump_threshold=0))
    assert stats_cancelled and max(stats_cancelled) > 0, stats_cancelled
