"""Where a Streamable HTTP server keeps SSE events for clients that resume a
lost stream: the :class:`EventStore` interface and :class:`InMemoryEventStore`,
which keeps the newest events of each session within a byte bound per session
and one for the whole store.  (The Redis store implements the same interface
on Redis Streams.)"""

from __future__ import annotations

from collections import deque
from typing import Protocol

DEFAULT_EVENT_STORE_BYTES = 1024 * 1024  # per session
DEFAULT_EVENT_STORE_TOTAL_BYTES = 64 * 1024 * 1024  # the whole store
_EVENT_OVERHEAD = 64  # bytes counted per event besides its data (ids, bookkeeping)


class EventStore(Protocol):
    """Keeps SSE events so a client can resume a stream it lost.

    Events are kept per session, each tagged with the SSE stream it went out
    on; ``event_id`` is the SSE ``id`` the transport gave it (unique within
    the session).  An implementation keeps the newest events within its
    bounds and may drop older ones at any time; ``forget`` drops a session's
    events when the session ends."""

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None:
        """Keep ``data``, sent on ``stream`` of the session as the event ``event_id``."""
        ...

    async def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream of ``event_id`` and its events after it, or ``None`` if unknown."""
        ...

    async def forget(self, session_id: str) -> None:
        """Drop every event of the session."""
        ...


class _SessionEvents:
    __slots__ = ("events", "size")

    def __init__(self) -> None:
        self.events: deque[tuple[str, str, bytes]] = deque()
        self.size = 0


class InMemoryEventStore:
    """The newest events of each session, oldest dropped first beyond any bound:
    ``max_events`` events and ``max_bytes`` bytes per session, ``max_total_bytes``
    for all sessions together (the sessions that stored least recently lose
    theirs first).  An event counts its data plus 64 bytes; one larger than a
    bound is not kept.  A ``Last-Event-ID`` whose event was dropped is unknown
    (``replay_after`` gives ``None``)."""

    def __init__(
        self,
        max_events: int = 1024,
        max_bytes: int = DEFAULT_EVENT_STORE_BYTES,
        max_total_bytes: int = DEFAULT_EVENT_STORE_TOTAL_BYTES,
    ) -> None:
        if max_events < 0 or max_bytes < 0 or max_total_bytes < 0:
            raise ValueError("event store bounds must not be negative")
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.max_total_bytes = max_total_bytes
        self._sessions: dict[str, _SessionEvents] = {}  # least recently stored first
        self._total = 0

    @property
    def size(self) -> int:
        """Bytes held, as the bounds count them."""
        return self._total

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None:
        kept = self._sessions.pop(session_id, None)
        if kept is None:
            kept = _SessionEvents()
        self._sessions[session_id] = kept  # now the most recent
        kept.events.append((stream, event_id, data))
        size = len(data) + _EVENT_OVERHEAD
        kept.size += size
        self._total += size
        while kept.events and (len(kept.events) > self.max_events or kept.size > self.max_bytes):
            self._drop_oldest(kept)
        if self._total > self.max_total_bytes:
            for sid in list(self._sessions):  # least recently stored first
                other = self._sessions[sid]
                while other.events and self._total > self.max_total_bytes:
                    self._drop_oldest(other)
                if not other.events:
                    del self._sessions[sid]
                if self._total <= self.max_total_bytes:
                    break

    def _drop_oldest(self, kept: _SessionEvents) -> None:
        _, _, data = kept.events.popleft()
        size = len(data) + _EVENT_OVERHEAD
        kept.size -= size
        self._total -= size

    async def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        kept = self._sessions.get(session_id)
        if kept is None:
            return None
        for i, (stream, eid, _) in enumerate(kept.events):
            if eid == event_id:
                later = [(e, d) for s, e, d in list(kept.events)[i + 1 :] if s == stream]
                return stream, later
        return None

    async def forget(self, session_id: str) -> None:
        kept = self._sessions.pop(session_id, None)
        if kept is not None:
            self._total -= kept.size

    def __len__(self) -> int:
        return sum(len(kept.events) for kept in self._sessions.values())
