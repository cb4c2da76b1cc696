"""A store of each kind for the store tests (memory, or a real Redis with a key prefix of its own)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from mcp_trio.store import Store, open_store
from tools.redis_server import RedisServer

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
