"""Fixtures of the store tests: every store kind the contract tests run on (in
memory, and Redis on a real redis-server), one store or two sharing the same
data (two workers)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcp_trio.store import Store, open_store
from tests.redis_server import RedisServer, redis_server

__all__ = ["redis_server"]

_prefixes = itertools.count()


def fresh_prefix() -> str:
    """A key prefix no other test uses, so tests share one redis-server."""
    return f"test{next(_prefixes)}:"


@asynccontextmanager
async def open_for(kind: str, request: pytest.FixtureRequest, **options: Any) -> AsyncIterator[Store]:
    """A store of ``kind`` opened with ``options`` (Redis: on the session's server, a fresh prefix)."""
    if kind == "memory":
        async with open_store(None, **options) as store:
            yield store
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    async with open_store(server.url, prefix=fresh_prefix(), **options) as store:
        yield store


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
