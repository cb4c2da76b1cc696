""":func:`open_store`: the store a URL names, in memory or on Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ._base import DEFAULT_MAX_QUEUED, DEFAULT_PREFIX, StoreError
from ._events import DEFAULT_EVENT_STORE_BYTES
from ._memory import Store

DEFAULT_EVENT_TTL = 3600.0  # seconds a session's events outlive its last one (Redis)
DEFAULT_TIMEOUT = 5.0  # seconds any one call on a Redis store may take
_MEMORY_URLS = (None, "", "memory:", "memory://")
REDIS_EXTRA = "pip install 'mcp-trio[redis]'"


@asynccontextmanager
async def open_store(
    url: str | None = None,
    *,
    prefix: str = DEFAULT_PREFIX,
    timeout: float = DEFAULT_TIMEOUT,
    max_events: int = 1024,
    max_event_bytes: int = DEFAULT_EVENT_STORE_BYTES,
    event_ttl: float = DEFAULT_EVENT_TTL,
    max_queued: int = DEFAULT_MAX_QUEUED,
) -> AsyncIterator[Store]:
    """Open the store that ``url`` names, and close it on leaving.

    * ``None``, ``""`` or ``"memory:"``: a new in-memory store (:meth:`Store.in_memory`).
    * ``"redis://[[user]:password@]host[:port][/db]"`` or ``"rediss://..."`` (TLS):
      a Redis store (Redis 7 or later), which needs the ``redis`` extra
      (``pip install 'mcp-trio[redis]'``).  Every key starts with ``prefix``;
      every call is bounded by ``timeout`` seconds (then :class:`StoreUnavailable`).
      Opening checks that the server answers, and raises
      :class:`StoreUnavailable` naming the URL if it does not.

    ``max_events`` and ``max_event_bytes`` bound the events kept per session
    (``event_ttl`` seconds after the last one, on Redis); ``max_queued`` the
    messages a bus subscription may hold unread.  Any other URL is a
    ``ValueError``."""
    if url in _MEMORY_URLS:
        yield Store.in_memory(max_events=max_events, max_event_bytes=max_event_bytes, max_queued=max_queued)
        return
    assert url is not None
    scheme = url.partition(":")[0].lower()
    if scheme not in ("redis", "rediss"):
        raise ValueError(f"store URL {url!r}: expected 'memory:', 'redis://HOST:PORT/DB' or 'rediss://...'")
    try:
        from ._redis import open_redis_store
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "coredis":
            raise
        raise StoreError(f"the Redis store ({url}) needs coredis: {REDIS_EXTRA}") from exc
    async with open_redis_store(
        url,
        prefix=prefix,
        timeout=timeout,
        max_events=max_events,
        max_event_bytes=max_event_bytes,
        event_ttl=event_ttl,
        max_queued=max_queued,
    ) as store:
        yield store
