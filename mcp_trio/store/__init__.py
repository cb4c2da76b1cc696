"""What the workers of a server share, so that any request of a session can
land on any of them: session records, the events of resumable SSE streams,
tasks (with leases), a publish/subscribe bus and the token buckets of rate
limits.

The in-memory store is the default; a Redis store (the ``redis`` extra) shares
them between processes and hosts.  :func:`open_store` opens either from a URL.
Each part is a ``typing.Protocol``, so another backend can take its place:

* :class:`SessionStore` of :class:`SessionRecord` (``InMemorySessionStore``);
* :class:`EventStore` (``InMemoryEventStore``), the contract the Streamable
  HTTP transport uses;
* :class:`TaskStore` of :class:`TaskRecord` (``InMemoryTaskStore``);
* :class:`Bus` with its :class:`Subscription` of :class:`BusMessage` (``InMemoryBus``);
* :class:`Buckets` (``InMemoryBuckets``), what ``RateLimit`` takes from when
  served with the store (``Store.buckets``; ``None``: each worker its own).
"""

from __future__ import annotations

from ._base import DEFAULT_PREFIX as DEFAULT_PREFIX
from ._base import LEASE_LOST_MESSAGE as LEASE_LOST_MESSAGE
from ._base import Buckets as Buckets
from ._base import Bus as Bus
from ._base import BusMessage as BusMessage
from ._base import BusOverflow as BusOverflow
from ._base import Changes as Changes
from ._base import SessionRecord as SessionRecord
from ._base import SessionStore as SessionStore
from ._base import StoreError as StoreError
from ._base import StoreUnavailable as StoreUnavailable
from ._base import Subscription as Subscription
from ._base import TaskRecord as TaskRecord
from ._base import TaskStatus as TaskStatus
from ._base import TaskStore as TaskStore
from ._events import EventStore as EventStore
from ._events import InMemoryEventStore as InMemoryEventStore
from ._memory import InMemoryBuckets as InMemoryBuckets
from ._memory import InMemoryBus as InMemoryBus
from ._memory import InMemorySessionStore as InMemorySessionStore
from ._memory import InMemoryTaskStore as InMemoryTaskStore
from ._memory import Store as Store
from ._open import open_store as open_store

__all__ = [
    "DEFAULT_PREFIX",
    "LEASE_LOST_MESSAGE",
    "Buckets",
    "Bus",
    "BusMessage",
    "BusOverflow",
    "Changes",
    "EventStore",
    "InMemoryBuckets",
    "InMemoryBus",
    "InMemoryEventStore",
    "InMemorySessionStore",
    "InMemoryTaskStore",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreError",
    "StoreUnavailable",
    "Subscription",
    "TaskRecord",
    "TaskStatus",
    "TaskStore",
    "open_store",
]
