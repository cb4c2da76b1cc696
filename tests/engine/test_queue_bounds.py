"""The bound on requests waiting for a handler slot in all the sessions drawing on one
:class:`QueueBudget` (``max_queued_total``: a server's, or the one shared by sessions given
none), over a transport the reader reads (stdio, WebSocket): past it a request is refused at
once with -32603 and the session goes on; a stopping session drops its queue; two servers in
one process do not share a budget."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio import McpError, QueueBudget, RequestContext, open_memory_transport_pair, open_session
from mcp_trio._engine._queue import SHARED_BUDGET
from mcp_trio.client import connect
from mcp_trio.server import Server
from tests._support.engine import SERVER_CAPS, tool_result

SERVER = {"role": "server", "info": {"name": "s", "version": "1"}, "capabilities": SERVER_CAPS}
CLIENT = {"role": "client", "info": {"name": "c", "version": "1"}}


async def test_requests_past_max_queued_total_are_refused_in_any_session() -> None:
    gate = trio.Event()

    async def slow(ctx: RequestContext, params: Any) -> Any:
        await gate.wait()
        return tool_result("done")

    options = {
        "request_handlers": {"tools/call": slow},
        "max_in_flight": 1,
        "max_queued": 10,
        "max_queued_total": 2,
    }
    a1, b1 = open_memory_transport_pair()
    a2, b2 = open_memory_transport_pair()
    outcomes: dict[str, Any] = {}

    async def call(client: Any, key: str) -> None:
        try:
            result = await client.request("tools/call", {"name": "x"})
            outcomes[key] = result.content[0].text
        except McpError as exc:
            outcomes[key] = exc

    async with (
        open_session(a1, **SERVER, **options),
        open_session(a2, **SERVER, **options),
        open_session(b1, **CLIENT) as first,
        open_session(b2, **CLIENT) as second,
    ):
        await first.connect()
        await second.connect()
        async with trio.open_nursery() as nursery:
            for key in ("a1", "a2", "a3"):  # one runs, two wait: the process's queue is full
                nursery.start_soon(call, first, key)
                await trio.testing.wait_all_tasks_blocked()
            assert SHARED_BUDGET.count == 2
            for key in ("b1", "b2"):  # a free slot runs at once; nothing more may wait
                nursery.start_soon(call, second, key)
                await trio.testing.wait_all_tasks_blocked()
            refused = outcomes["b2"]
            assert isinstance(refused, McpError) and refused.code == -32603
            assert "max_queued_total=2" in refused.message
            gate.set()
        assert [outcomes[k] for k in ("a1", "a2", "a3", "b1")] == ["done"] * 4
        result = await second.request("tools/call", {"name": "x"})  # the session goes on
        assert result.content[0].text == "done"
    assert SHARED_BUDGET.count == 0


async def test_a_stopping_session_drops_its_queue() -> None:
    started = 0

    async def forever(ctx: RequestContext, params: Any) -> Any:
        nonlocal started
        started += 1
        await trio.sleep_forever()

    a, b = open_memory_transport_pair()
    async with open_session(b, **CLIENT) as client:
        async with open_session(
            a, **SERVER, request_handlers={"tools/call": forever}, max_in_flight=2, max_queued=50
        ) as server:
            await client.connect()
            async with trio.open_nursery() as nursery:
                for _ in range(40):
                    nursery.start_soon(client.request, "tools/call", {"name": "x"})
                await trio.testing.wait_all_tasks_blocked()
                assert server.statistics()["requests_queued"] == 38 and SHARED_BUDGET.count == 38
                nursery.cancel_scope.cancel()
    assert started == 2  # nothing was started from the queue as the session stopped
    assert SHARED_BUDGET.count == 0


def test_queue_bounds_must_not_be_negative() -> None:
    a, _ = open_memory_transport_pair()
    with pytest.raises(ValueError, match="max_queued_total"):
        from mcp_trio._engine._session import new_session

        new_session(a, role="server", info={"name": "s", "version": "1"}, max_queued_total=-1)


async def test_two_servers_in_one_process_queue_against_budgets_of_their_own() -> None:
    gate = trio.Event()
    busy, other = (Server(name, max_in_flight=1, max_queued=10, max_queued_total=2) for name in "ab")

    @busy.tool()
    async def slow() -> str:
        await gate.wait()
        return "done"

    @other.tool()
    async def fast() -> str:
        return "done"

    own = busy.session_options["queue_budget"]
    assert isinstance(own, QueueBudget) and own is not other.session_options["queue_budget"]
    outcomes: list[Any] = []

    async def call(client: Any, name: str) -> None:
        try:
            outcomes.append((await client.call_tool(name, {})).content[0].text)
        except McpError as exc:
            outcomes.append(exc)

    async with connect(busy) as first, connect(other) as second, trio.open_nursery() as nursery:
        for _ in range(4):  # one runs, two wait (the first server's budget is full), one refused
            nursery.start_soon(call, first, "slow")
            await trio.testing.wait_all_tasks_blocked()
        assert own.count == 2 and len(outcomes) == 1 and isinstance(outcomes[0], McpError)
        assert "max_queued_total=2" in outcomes[0].message
        # The other server's sessions queue against their own budget: not refused.
        async with trio.open_nursery() as calls:
            for _ in range(3):
                calls.start_soon(call, second, "fast")
        assert outcomes[1:] == ["done"] * 3
        gate.set()
    assert outcomes[1:].count("done") == 6 and own.count == 0


async def test_sessions_given_one_budget_share_it() -> None:
    gate = trio.Event()

    async def slow(ctx: RequestContext, params: Any) -> Any:
        await gate.wait()
        return tool_result("done")

    budget = QueueBudget()
    options = {"request_handlers": {"tools/call": slow}, "max_in_flight": 1, "max_queued_total": 1}
    (a1, b1), (a2, b2) = open_memory_transport_pair(), open_memory_transport_pair()
    outcomes: list[Any] = []

    async def call(client: Any) -> None:
        try:
            outcomes.append((await client.request("tools/call", {"name": "x"})).content[0].text)
        except McpError as exc:
            outcomes.append(exc.message)

    async with (
        open_session(a1, **SERVER, **options, queue_budget=budget),
        open_session(a2, **SERVER, **options, queue_budget=budget),
        open_session(b1, **CLIENT) as first,
        open_session(b2, **CLIENT) as second,
    ):
        await first.connect()
        await second.connect()
        async with trio.open_nursery() as nursery:
            for client in (first, first, second, second):  # each runs one; one waits; one refused
                nursery.start_soon(call, client)
                await trio.testing.wait_all_tasks_blocked()
            assert budget.count == 1 and SHARED_BUDGET.count == 0
            gate.set()
    assert outcomes.count("done") == 3 and sum("max_queued_total=1" in o for o in outcomes) == 1
