"""Where a Streamable HTTP server keeps SSE events for clients that resume a
lost stream: the names of :mod:`mcp_trio.store`'s event store, where the code
is (the store is a lower layer, shared with the Redis store)."""

from __future__ import annotations

from ....store._events import DEFAULT_EVENT_STORE_BYTES as DEFAULT_EVENT_STORE_BYTES
from ....store._events import DEFAULT_EVENT_STORE_TOTAL_BYTES as DEFAULT_EVENT_STORE_TOTAL_BYTES
from ....store._events import EventStore as EventStore
from ....store._events import InMemoryEventStore as InMemoryEventStore

__all__ = ["DEFAULT_EVENT_STORE_BYTES", "DEFAULT_EVENT_STORE_TOTAL_BYTES", "EventStore", "InMemoryEventStore"]
