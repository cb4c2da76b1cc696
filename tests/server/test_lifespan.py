"""Server(lifespan=...): entered once before the first request and left after the last, by
whichever ways of serving overlap; its value reachable from Context; failures raised, not lost."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx2 as httpx
import pytest
import trio

from mcp_trio.client import connect_server
from mcp_trio.server import Context, Server
from tests._support.http_server import ACCEPT, init

pytestmark = pytest.mark.trio


@dataclass
class Pool:
    """What a lifespan typically opens: here, a record of what happened to it."""

    events: list[str] = field(default_factory=list)
    open: bool = False


def pool_server(pool: Pool, *, fail_entering: bool = False, fail_leaving: bool = False) -> Server:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[Pool]:
        pool.events.append(f"enter {server.info['name']}")
        if fail_entering:
            raise ConnectionRefusedError("the database is down")
        pool.open = True
        async with trio.open_nursery() as nursery:  # (a background task for the server's life)
            nursery.start_soon(trio.sleep_forever)
            yield pool
            nursery.cancel_scope.cancel()
        pool.open = False
        pool.events.append("exit")
        if fail_leaving:
            raise ConnectionResetError("the pool did not close cleanly")

    server = Server("pooled", lifespan=lifespan)

    @server.tool
    async def query(ctx: Context) -> str:
        got = ctx.lifespan_value(Pool)
        got.events.append("query")
        return f"open={got.open}"

    @server.tool
    async def wrong(ctx: Context) -> str:
        return str(ctx.lifespan_value(dict))

    return server


async def test_the_value_is_reachable_and_the_lifespan_wraps_every_request() -> None:
    pool = Pool()
    async with connect_server(pool_server(pool)) as client:
        assert pool.events == ["enter pooled"]
        assert (await client.call_tool("query")).content[0].text == "open=True"  # type: ignore[union-attr]
        wrong = await client.call_tool("wrong")
        assert wrong.isError and "gave a Pool, not a dict" in wrong.content[0].text  # type: ignore[union-attr]
    assert pool.events == ["enter pooled", "query", "exit"] and not pool.open


async def test_a_server_without_lifespan_says_how_to_give_one() -> None:
    server = Server("plain")

    @server.tool
    async def query(ctx: Context) -> str:
        return str(ctx.lifespan_value(Pool))

    async with connect_server(server) as client:
        result = await client.call_tool("query")
    assert result.isError and "Server(lifespan=...)" in result.content[0].text  # type: ignore[union-attr]


async def test_overlapping_ways_of_serving_share_one_entry() -> None:
    pool = Pool()
    server = pool_server(pool)
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(server.serve_http, "127.0.0.1", 0)
        async with connect_server(server) as client:  # (a second way of serving, meanwhile)
            await client.call_tool("query")
            async with httpx.AsyncClient(timeout=5) as http:
                r = await http.post(url, headers=ACCEPT, json=init("2025-11-25"))
                assert r.status_code == 200
        assert pool.events == ["enter pooled", "query"] and pool.open  # (HTTP still serves)
        nursery.cancel_scope.cancel()
    assert pool.events == ["enter pooled", "query", "exit"]
    async with connect_server(server) as client:  # (once left, the next way of serving enters again)
        await client.call_tool("query")
    assert pool.events == ["enter pooled", "query", "exit", "enter pooled", "query", "exit"]


async def test_http_listens_only_once_the_lifespan_is_entered_and_not_at_all_if_it_fails() -> None:
    pool = Pool()
    with pytest.raises(ConnectionRefusedError, match="the database is down"):
        await pool_server(pool, fail_entering=True).serve_http("127.0.0.1", 0)
    assert pool.events == ["enter pooled"]

    entered = trio.Event()

    @asynccontextmanager
    async def slow(server: Server) -> AsyncIterator[None]:
        await trio.sleep(0.2)
        entered.set()
        yield

    async with trio.open_nursery() as nursery:
        await nursery.start(Server("slow", lifespan=slow).serve_http, "127.0.0.1", 0)
        assert entered.is_set()
        nursery.cancel_scope.cancel()


async def test_every_waiting_way_of_serving_gets_the_failure_and_a_later_one_tries_again() -> None:
    pool = Pool()
    server = pool_server(pool, fail_entering=True)
    failures: list[BaseException] = []

    async def session() -> None:
        try:
            async with connect_server(server):
                pass
        except BaseException as exc:  # (what each one raises)
            failures.append(exc)

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(session)
    assert len(failures) == 3 and all("the database is down" in str(f) for f in failures)
    assert pool.events == ["enter pooled"]  # (entered once for the three)
    with pytest.raises(ConnectionRefusedError):
        async with connect_server(server):
            pass
    assert pool.events == ["enter pooled", "enter pooled"]


async def test_a_failure_leaving_is_raised_by_the_last_way_of_serving() -> None:
    pool = Pool()
    server = pool_server(pool, fail_leaving=True)
    with pytest.raises(ConnectionResetError, match="did not close cleanly"):
        with trio.move_on_after(0.2):  # (serving ends as it usually does: cancelled)
            await server.serve_http("127.0.0.1", 0)
    assert pool.events == ["enter pooled", "exit"]


async def test_a_lifespan_that_is_not_a_function_is_refused() -> None:
    with pytest.raises(TypeError, match="lifespan must be a function of the server"):
        Server("x", lifespan=Pool())  # type: ignore[arg-type]
