"""The in-memory store, the default: session records, tasks and a bus held in
this process (two servers of one process share them by sharing the objects).
Times to live run on the trio clock, so a mock clock drives them in tests.
Also the :class:`Store` that bundles a store's parts."""

from __future__ import annotations

import builtins
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import msgspec
import trio

from ._base import (
    DEFAULT_MAX_QUEUED,
    Buckets,
    Bus,
    BusMessage,
    BusOverflow,
    Changes,
    SessionRecord,
    SessionStore,
    StoreError,
    TaskRecord,
    TaskStore,
    apply_changes,
    check_bucket,
    check_ttl,
    lease_lost,
    new_task,
)
from ._events import DEFAULT_EVENT_STORE_BYTES, EventStore, InMemoryEventStore

_SWEEP_FLOOR = 1024  # entries kept before the first sweep of expired ones


class _Expiring:
    """Deadlines on the trio clock, and the sweep of expired entries whenever
    the number kept has doubled since the last one."""

    def __init__(self) -> None:
        self._sweep_at = _SWEEP_FLOOR

    def _maybe_sweep(self) -> None:
        if len(self) <= self._sweep_at:
            return
        now = trio.current_time()
        for key in [key for key, deadline in self._deadlines() if deadline <= now]:
            self._expired(key)
        self._sweep_at = max(_SWEEP_FLOOR, 2 * len(self))

    def __len__(self) -> int:
        raise NotImplementedError

    def _deadlines(self) -> Iterator[tuple[str, float]]:
        raise NotImplementedError

    def _expired(self, key: str) -> None:
        raise NotImplementedError


class InMemorySessionStore(_Expiring):
    """Session records in a dict, each with its deadline; expired ones are
    dropped when read, and swept whenever the store doubles in size.  Records
    are values: change one with :meth:`put`, not in place."""

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, tuple[SessionRecord, float]] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def get(self, session_id: str) -> SessionRecord | None:
        entry = self._records.get(session_id)
        if entry is None:
            return None
        if entry[1] <= trio.current_time():
            del self._records[session_id]
            return None
        return entry[0]

    async def put(self, record: SessionRecord, *, ttl: float) -> SessionRecord:
        check_ttl(ttl)
        now = time.time()
        kept = msgspec.structs.replace(record, created_at=record.created_at or now, expires_at=now + ttl)
        self._records[record.session_id] = (kept, trio.current_time() + ttl)
        self._maybe_sweep()
        return kept

    async def touch(self, session_id: str, *, ttl: float) -> bool:
        check_ttl(ttl)
        record = await self.get(session_id)
        if record is None:
            return False
        record = msgspec.structs.replace(record, expires_at=time.time() + ttl)
        self._records[session_id] = (record, trio.current_time() + ttl)
        return True

    async def change(self, session_id: str, changes: Changes, *, ttl: float) -> SessionRecord | None:
        record = await self.get(session_id)  # (no checkpoint in between: nobody else writes)
        if record is None:
            return None
        return await self.put(apply_changes(record, changes), ttl=ttl)

    async def delete(self, session_id: str) -> bool:
        return self._records.pop(session_id, None) is not None

    async def take(self, session_id: str) -> SessionRecord | None:
        record = await self.get(session_id)
        self._records.pop(session_id, None)
        return record

    def _deadlines(self) -> Iterator[tuple[str, float]]:
        return ((key, deadline) for key, (_, deadline) in self._records.items())

    def _expired(self, key: str) -> None:
        del self._records[key]


class InMemoryBuckets(_Expiring):
    """Token buckets in a dict (key -> tokens, when counted, when full again) on the trio
    clock; one full again is as good as none, and is swept whenever the dict doubles in
    size.  Atomic as every step runs without a checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self._buckets: dict[str, tuple[float, float, float]] = {}

    def __len__(self) -> int:
        return len(self._buckets)

    async def take(self, key: str, *, rate: float, burst: int) -> float:
        check_bucket(rate, burst)
        now = trio.current_time()
        entry = self._buckets.get(key)
        tokens = float(burst) if entry is None else min(float(burst), entry[0] + (now - entry[1]) * rate)
        wait = 0.0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = (1.0 - tokens) / rate
        self._buckets[key] = (tokens, now, now + (burst - tokens) / rate)
        self._maybe_sweep()
        return wait

    def _deadlines(self) -> Iterator[tuple[str, float]]:
        return ((key, full) for key, (_, _, full) in self._buckets.items())

    def _expired(self, key: str) -> None:
        del self._buckets[key]


class _Task:
    __slots__ = ("deadline", "lease", "record")

    def __init__(self, record: TaskRecord, deadline: float, lease: float | None) -> None:
        self.record = record
        self.deadline = deadline
        self.lease = lease  # the lease's deadline, if leased


class InMemoryTaskStore(_Expiring):
    """Task records in a dict with an index by owner; a lease is a deadline on
    the trio clock that :meth:`renew` pushes back."""

    def __init__(self) -> None:
        super().__init__()
        self._tasks: dict[str, _Task] = {}
        self._owners: dict[str, dict[str, None]] = {}  # owner -> its task ids, oldest first

    def __len__(self) -> int:
        return len(self._tasks)

    def _live(self, task_id: str) -> _Task | None:
        entry = self._tasks.get(task_id)
        if entry is not None and entry.deadline <= trio.current_time():
            self._expired(task_id)
            return None
        return entry

    @staticmethod
    def _lost(entry: _Task) -> bool:
        return entry.lease is not None and not entry.record.terminal and entry.lease <= trio.current_time()

    async def create(self, record: TaskRecord, *, lease: float | None = None) -> TaskRecord:
        kept = new_task(record, lease)
        if self._live(record.task_id) is not None:
            raise StoreError(f"a task with id {record.task_id!r} already exists")
        clock = trio.current_time()
        self._tasks[record.task_id] = _Task(
            kept, clock + record.ttl, None if lease is None else clock + lease
        )
        self._owners.setdefault(record.owner, {})[record.task_id] = None
        self._maybe_sweep()
        return kept

    async def get(self, task_id: str) -> TaskRecord | None:
        entry = self._live(task_id)
        if entry is None:
            return None
        return lease_lost(entry.record, time.time()) if self._lost(entry) else entry.record

    async def update(self, record: TaskRecord) -> bool:
        entry = self._live(record.task_id)
        if entry is None or self._lost(entry):
            return False
        if record.owner != entry.record.owner:
            raise ValueError(f"task {record.task_id!r}: its owner cannot change")
        entry.record = msgspec.structs.replace(
            record, created_at=entry.record.created_at, ttl=entry.record.ttl, leased=entry.record.leased
        )
        return True

    async def renew(self, task_id: str, lease: float) -> bool:
        check_ttl(lease, "lease")
        entry = self._live(task_id)
        if entry is None or entry.lease is None or self._lost(entry):
            return False
        entry.lease = trio.current_time() + lease
        return True

    async def list(self, owner: str) -> builtins.list[TaskRecord]:
        found = []
        for task_id in list(self._owners.get(owner, ())):
            record = await self.get(task_id)
            if record is not None:
                found.append(record)
        return found

    async def delete(self, task_id: str) -> bool:
        entry = self._tasks.get(task_id)
        if entry is None:
            return False
        self._expired(task_id)
        return True

    def _deadlines(self) -> Iterator[tuple[str, float]]:
        return ((key, entry.deadline) for key, entry in self._tasks.items())

    def _expired(self, key: str) -> None:
        entry = self._tasks.pop(key)
        owned = self._owners.get(entry.record.owner)
        if owned is not None:
            owned.pop(key, None)
            if not owned:
                del self._owners[entry.record.owner]


class QueuedSubscription:
    """A bus subscription fed through a bounded queue (``max_queued`` messages).

    Iterating it ends when the subscription is left; it raises
    :class:`BusOverflow` once the messages queued before the overflow are read."""

    def __init__(self, channels: tuple[str, ...], max_queued: int) -> None:
        if max_queued < 1:
            raise ValueError("a subscription must be able to queue at least one message")
        self.channels = channels
        self.max_queued = max_queued
        self._send, self._receive = trio.open_memory_channel[BusMessage](max_queued)
        self._failure: StoreError | None = None

    def offer(self, message: BusMessage) -> None:
        """Queue ``message``, or cut the subscription off if its queue is full."""
        try:
            self._send.send_nowait(message)
        except trio.WouldBlock:
            self.fail(
                BusOverflow(
                    f"the subscription to {', '.join(self.channels)} fell behind: "
                    f"more than {self.max_queued} messages were waiting to be read"
                )
            )
        except trio.ClosedResourceError:
            pass  # already cut off

    def fail(self, error: StoreError) -> None:
        """End the subscription: after the queued messages, reading raises ``error``."""
        if self._failure is None:
            self._failure = error
        self._send.close()

    def close(self) -> None:
        """End the subscription: after the queued messages, iteration stops."""
        self._send.close()

    def __aiter__(self) -> QueuedSubscription:
        return self

    async def __anext__(self) -> BusMessage:
        try:
            return await self._receive.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            if self._failure is not None:
                raise self._failure from None
            raise StopAsyncIteration from None

    async def receive(self) -> BusMessage:
        """The next message; :class:`StoreError` once the subscription is over."""
        try:
            return await self.__anext__()
        except StopAsyncIteration:
            raise StoreError(f"the subscription to {', '.join(self.channels)} is closed") from None


class InMemoryBus:
    """The bus of one process: a message is queued on every subscription of its channel."""

    def __init__(self, *, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self.max_queued = max_queued
        self._subscribers: dict[str, set[QueuedSubscription]] = {}

    async def publish(self, channel: str, data: bytes) -> int:
        subscriptions = list(self._subscribers.get(channel, ()))
        for subscription in subscriptions:
            subscription.offer(BusMessage(channel, data))
        return len(subscriptions)

    @asynccontextmanager
    async def subscribe(self, *channels: str) -> AsyncIterator[QueuedSubscription]:
        subscription = QueuedSubscription(channels, self.max_queued)
        for channel in channels:
            self._subscribers.setdefault(channel, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscription.close()
            for channel in channels:
                subscribers = self._subscribers.get(channel)
                if subscribers is not None:
                    subscribers.discard(subscription)
                    if not subscribers:
                        del self._subscribers[channel]


@dataclass(frozen=True, eq=False)
class Store:
    """What the workers of one server share: session records, the events of
    resumable SSE streams, tasks, a bus and, unless ``None``, the buckets of rate
    limits (a store made without them leaves each worker its own).

    ``shared`` says whether other processes can see it (a Redis store) or
    only this one (the in-memory store); ``url`` names it (without any
    password)."""

    sessions: SessionStore
    events: EventStore
    tasks: TaskStore
    bus: Bus
    url: str = "memory:"
    shared: bool = False
    buckets: Buckets | None = None

    @classmethod
    def in_memory(
        cls,
        *,
        max_events: int = 1024,
        max_event_bytes: int = DEFAULT_EVENT_STORE_BYTES,
        max_queued: int = DEFAULT_MAX_QUEUED,
    ) -> Store:
        """A store held in this process (the default): fast, and gone with it."""
        return cls(
            sessions=InMemorySessionStore(),
            events=InMemoryEventStore(max_events=max_events, max_bytes=max_event_bytes),
            tasks=InMemoryTaskStore(),
            bus=InMemoryBus(max_queued=max_queued),
            buckets=InMemoryBuckets(),
        )
