"""The Redis store (the ``redis`` extra): coredis, which runs on anyio, so under trio.

Keys, all under the store's prefix (``mcp-trio:`` by default), each with a
time to live or deleted at the end of what it belongs to: ``s:<session>`` a
session record, ``e:<session>`` and ``eb:<session>`` its events, ``t:<task>``
and ``tl:<task>`` a task and its lease, ``to:<owner>`` an owner's tasks,
``rl:<key>`` a rate limit's bucket (until it would be full again); the bus's
channels are ``b:<channel>``.  Needs one Redis 7 (or compatible) server,
not a cluster (the task scripts reach keys they compute)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import coredis
import trio
from anyio import BrokenResourceError, ClosedResourceError, WouldBlock
from coredis.exceptions import ConnectionError as RedisConnectionError

from .._base import StoreError
from .._memory import Store
from ._buckets import RedisBuckets
from ._bus import RedisBus
from ._conn import RedisConnection, leaf, leaves, redact, store_error
from ._sessions import RedisEventStore, RedisSessionStore
from ._tasks import RedisTaskStore

# What coredis's own tasks may raise when cancelled with the store (streams closed under them).
_TEARDOWN = (ClosedResourceError, BrokenResourceError, WouldBlock, RedisConnectionError)

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
                buckets=RedisBuckets(redis),
            )
            try:
                yield store
            finally:
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:  # from the client's task group: never let one escape
        cancelled, rest = group.split(trio.Cancelled)
        if cancelled is not None and (rest is None or all(isinstance(e, _TEARDOWN) for e in leaves(rest))):
            # Cancelled from outside (a server stopping): coredis's tasks, cancelled with it,
            # may trip on their own closed streams on the way out; the cancellation goes on.
            raise leaf(cancelled) from None
        error = store_error(redact(url), "connecting", group)
        if isinstance(error, StoreError):
            raise error from leaf(group)
        if error is group:
            raise
        raise error from None  # the one exception of the group, unwrapped
    except (OSError, TimeoutError, RedisConnectionError) as exc:
        raise store_error(redact(url), "connecting", exc) from exc
