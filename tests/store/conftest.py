"""Fixtures of the store tests: every store kind the contract tests run on (in
memory, and Redis on a real redis-server), one store or two sharing the same
data (two workers)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio.store import Store, open_store
from mcp_trio.testing import OpenPair
from tests._support.store import fresh_prefix
from tools.redis_server import RedisServer


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.interop)])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def pair(kind: str, request: pytest.FixtureRequest) -> AsyncIterator[tuple[Store, Store]]:
    """Two stores over the same data: two connections to one Redis (two workers),
    or the same in-memory store twice (two servers of one process)."""
    if kind == "memory":
        async with open_store(None) as store:
            yield store, store
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    prefix = fresh_prefix()
    async with open_store(server.url, prefix=prefix) as one, open_store(server.url, prefix=prefix) as two:
        yield one, two


@pytest.fixture
def store(pair: tuple[Store, Store]) -> Store:
    return pair[0]


@pytest.fixture
def store_time(kind: str) -> trio.testing.MockClock | None:
    """The clock of a test that waits for something to expire: virtual for the in-memory store,
    whose deadlines are trio's time (the test does not sleep), real for Redis, whose TTLs run on
    the server's clock. A test takes it as an argument: pytest-trio runs it on the clock given."""
    return trio.testing.MockClock(autojump_threshold=0) if kind == "memory" else None


@pytest.fixture
def open_pair(kind: str, request: pytest.FixtureRequest) -> OpenPair:
    """Opens two stores of ``kind`` over the same data, with store options (what
    ``mcp_trio.testing.check_store`` takes)."""

    @asynccontextmanager
    async def opened(**options: Any) -> AsyncIterator[tuple[Store, Store]]:
        if kind == "memory":
            async with open_store(None, **options) as store:
                yield store, store
            return
        server: RedisServer = request.getfixturevalue("redis_server")
        prefix = fresh_prefix()
        async with (
            open_store(server.url, prefix=prefix, **options) as one,
            open_store(server.url, prefix=prefix, **options) as two,
        ):
            yield one, two

    return opened
