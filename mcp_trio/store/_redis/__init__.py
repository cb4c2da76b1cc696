"""The Redis store (the ``redis`` extra): coredis, which runs on anyio, so under trio.

Keys, all under the store's prefix (``mcp-trio:`` by default), each with a
time to live or deleted at the end of what it belongs to: ``s:<session>`` a
session record, ``e:<session>`` and ``eb:<session>`` its events, ``t:<task>``
and ``tl:<task>`` a task and its lease, ``to:<owner>`` an owner's tasks; the
bus's channels are ``b:<channel>``.  Needs one Redis 7 (or compatible) server,
not a cluster (the task scripts reach keys they compute)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import trio
from coredis.exceptions import ConnectionError as RedisConnectionError

from .._base import StoreError
from .._memory import Store
from ._bus import RedisBus
from ._conn import RedisConnection, leaf, redact, store_error
from ._sessions import RedisEventStore, RedisSessionStore
from ._tasks import RedisTaskStore

MAX_CONNECTIONS = 64  # a store's connections to Redis, besides the bus's subscriber


@asynccontextmanager
async def open_redis_store(
    url: str,
    *,
    prefix: str,
    timeout: float,
    max_events: int,
    max_event_bytes: int,
    event_ttl: float,
    max_queued: int,
) -> AsyncIterator[Store]:
    """The Redis store at ``url`` (see :func:`~mcp_trio.store.open_store`)."""
    client: coredis.Redis[bytes] = coredis.Redis.from_url(
        url,
        # the store's guard bounds each call by ``timeout``; coredis's own bounds, later, are
        # for what runs outside a call (the bus's subscriber connection)
        connect_timeout=2 * timeout,
        stream_timeout=2 * timeout,
        pool_timeout=2 * timeout,
        max_connections=MAX_CONNECTIONS,
    )
    redis = RedisConnection(client, url=url, prefix=prefix, timeout=timeout)
    try:
        async with client, trio.open_nursery() as nursery:
            with redis.guard("PING"):
                await client.ping()
            store = Store(
                sessions=RedisSessionStore(redis),
                events=RedisEventStore(
                    redis, max_events=max_events, max_bytes=max_event_bytes, event_ttl=event_ttl
                ),
                tasks=RedisTaskStore(redis),
                bus=RedisBus(redis, nursery, max_queued=max_queued),
                url=redact(url),
                shared=True,
            )
            try:
                yield store
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # from the client's task group: never let one escape
        error = store_error(redact(url), "connecting", group)
        if isinstance(error, StoreError):
            raise error from leaf(group)
        if error is group:
            raise
        raise error from None  # the one exception of the group, unwrapped
    except (OSError, TimeoutError, RedisConnectionError) as exc:
        raise store_error(redact(url), "connecting", exc) from exc
