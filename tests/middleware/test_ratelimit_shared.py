"""RateLimit's buckets shared through a store: two workers serving one endpoint (in one process,
sharing a store in memory or on a real Redis) give a client ``burst`` requests, not twice that;
the store given explicitly; keys of this process kept locally; a store that fails falls back to
the local buckets with a warning, and is used again once back."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import McpError
from mcp_trio.client import Client, connect_http, connect_server
from mcp_trio.middleware import RATE_LIMITED, RateLimit, RequestInfo, SharingMiddleware
from mcp_trio.server import Server
from mcp_trio.store import Store, open_store
from tests._support.store import fresh_prefix
from tools.redis_server import RedisServer

RATE_LIMIT_LOGGER = "mcp_trio.middleware.ratelimit"


def make_server(limit: RateLimit) -> Server:
    server = Server("limited", "1", middleware=[limit])

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    return server


def limit(**options: Any) -> RateLimit:
    """Each worker's limit: alike (as every process of ``--workers`` makes its own)."""
    return RateLimit(rate=0.001, burst=3, methods={"tools/call"}, **options)


async def allowed(clients: list[Client], calls: int) -> int:
    """How many of ``calls`` tools/call, sent to each client in turn, were let through."""
    through = 0
    for i in range(calls):
        try:
            await clients[i % len(clients)].call_tool("add", {"a": 1, "b": 2})
            through += 1
        except McpError as refused:
            assert refused.code == RATE_LIMITED, refused
    return through


@asynccontextmanager
async def two_workers(kind: str | None, request: pytest.FixtureRequest) -> AsyncIterator[list[Client]]:
    """Two servers serving one endpoint (each with its own RateLimit), sharing a store of
    ``kind`` (``None``: no store); a client connected to each."""
    async with AsyncExitStack() as stack:
        if kind == "redis":
            redis: RedisServer = request.getfixturevalue("redis_server")
            prefix = fresh_prefix()
            stores: list[Store | None] = [
                await stack.enter_async_context(open_store(redis.url, prefix=prefix)) for _ in range(2)
            ]
        elif kind == "memory":
            stores = [Store.in_memory()] * 2
        else:
            stores = [None, None]
        nursery = await stack.enter_async_context(trio.open_nursery())
        stack.callback(nursery.cancel_scope.cancel)
        clients = []
        for i, store in enumerate(stores):
            serve = partial(make_server(limit()).serve_http, "127.0.0.1", 0, store=store, worker_id=f"w{i}")
            url = (await nursery.start(serve))[0]
            clients.append(await stack.enter_async_context(connect_http(url, versions=["2025-11-25"])))
        yield clients


@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=pytest.mark.interop)])
async def test_two_workers_sharing_a_store_let_a_client_through_burst_times_not_twice(
    kind: str, request: pytest.FixtureRequest
) -> None:
    with trio.fail_after(20):
        async with two_workers(kind, request) as clients:
            assert await allowed(clients, 10) == 3
        async with two_workers(None, request) as clients:  # each worker its own buckets: twice
            assert await allowed(clients, 10) == 6


async def test_a_store_given_is_shared_and_limits_alike_share_buckets_unless_named() -> None:
    store = Store.in_memory()

    def everyone(request: RequestInfo) -> str:
        return "everyone"

    servers = [make_server(limit(store=store, per=everyone)) for _ in range(2)]
    other = make_server(limit(store=store, per=everyone, name="other"))
    with trio.fail_after(10):
        async with (
            connect_server(servers[0]) as one,
            connect_server(servers[1]) as two,
            connect_server(other) as three,
        ):
            assert await allowed([one, two], 10) == 3
            assert await allowed([three], 5) == 3  # (named apart: buckets of its own)
    assert servers[0].middleware[0].store is store  # type: ignore[attr-defined]


async def test_a_key_of_this_process_keeps_a_local_bucket() -> None:
    """In memory a session has no id: its key is the session object, which means nothing to
    another process; its bucket stays this process's, one per session."""
    shared = limit(store=Store.in_memory(), per="session")
    server = make_server(shared)
    with trio.fail_after(10):
        async with connect_server(server) as one, connect_server(server) as two:
            assert await allowed([one], 5) == 3
            assert await allowed([two], 5) == 3
    assert len(shared) == 2  # (the local buckets)


async def test_serving_shares_the_buckets_only_while_it_serves_and_one_store_at_a_time() -> None:
    rate_limit = limit()
    assert isinstance(rate_limit, SharingMiddleware)
    one, two = make_server(rate_limit), make_server(rate_limit)  # (one limit in two servers)
    first, second = Store.in_memory(), Store.in_memory()
    assert rate_limit.store is None
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(one.serve_http, "127.0.0.1", 0, store=first))
            assert rate_limit.store is first
            with pytest.raises(ValueError, match="shares its buckets through the store memory: already"):
                await two.serve_http("127.0.0.1", 0, store=second)
            assert two.tasks.sharing is None  # (refused before anything changed)
            await nursery.start(partial(two.serve_http, "127.0.0.1", 0, store=first))  # the same: fine
            nursery.cancel_scope.cancel()
        assert rate_limit.store is None  # (no longer served: this process's buckets)
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(two.serve_http, "127.0.0.1", 0, store=second))
            assert rate_limit.store is second
            nursery.cancel_scope.cancel()


def test_a_store_without_buckets_is_refused() -> None:
    with pytest.raises(ValueError, match="keeps no buckets"):
        limit(store=dataclasses.replace(Store.in_memory(), buckets=None))
    with pytest.raises(ValueError, match="store_retry"):
        limit(store_retry=-1)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


@pytest.mark.interop
async def test_a_store_down_falls_back_to_local_buckets_warns_once_and_is_used_again(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=RATE_LIMIT_LOGGER)
    async with open_store(own_redis.url, timeout=1) as store:
        rate_limit = limit(store=store, per=lambda request: "everyone", store_retry=0.5)
        with trio.fail_after(30):
            async with connect_server(make_server(rate_limit)) as client:
                assert await allowed([client], 1) == 1  # (the shared bucket: 2 tokens left)
                own_redis.stop()
                assert await allowed([client], 5) == 3  # the local bucket, full: not refused outright
                warnings = [r.getMessage() for r in caplog.records if r.name == RATE_LIMIT_LOGGER]
                assert len(warnings) == 1, warnings  # (once, not per request)
                assert "the store failed" in warnings[0] and own_redis.url in warnings[0]
                own_redis.start()  # same port, empty: the shared bucket is full again
                await trio.sleep(0.6)  # (store_retry)
                assert await allowed([client], 5) == 3
                keys = [key async for key in store_keys(own_redis)]
                assert len(keys) == 1 and keys[0].startswith(b"mcp-trio:rl:"), keys


async def store_keys(server: RedisServer) -> AsyncIterator[bytes]:
    import coredis

    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=server.port)
    async with client:
        async for key in client.scan_iter(match="*"):
            yield key
