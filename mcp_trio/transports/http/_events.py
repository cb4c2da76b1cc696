"""Where a Streamable HTTP server keeps SSE events for clients that resume a
lost stream: the :class:`EventStore` interface and :class:`InMemoryEventStore`,
which keeps the newest ``max_events`` events of each session."""

from __future__ import annotations

from collections import deque
from typing import Protocol


class EventStore(Protocol):
    """Keeps SSE events so a client can resume a stream it lost."""

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None: ...

    async def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream of ``event_id`` and its events after it, or ``None`` if unknown."""
        ...

    async def forget(self, session_id: str) -> None: ...


class InMemoryEventStore:
    """The newest ``max_events`` events of each session."""

    def __init__(self, max_events: int = 1024) -> None:
        self.max_events = max_events
        self._events: dict[str, deque[tuple[str, str, bytes]]] = {}

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None:
        events = self._events.get(session_id)
        if events is None:
            events = self._events[session_id] = deque(maxlen=self.max_events)
        events.append((stream, event_id, data))

    async def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        events = self._events.get(session_id, ())
        for i, (stream, eid, _) in enumerate(events):
            if eid == event_id:
                later = [(e, d) for s, e, d in list(events)[i + 1 :] if s == stream]
                return stream, later
        return None

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(e) for e in self._events.values())
