"""What every store holds and offers: the records (msgspec Structs), the
interfaces (``typing.Protocol``) of the session records, the tasks, the bus
and the rate limits' buckets, and the store's errors."""

from __future__ import annotations

import builtins
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, NamedTuple, Protocol

import msgspec

DEFAULT_PREFIX = "mcp-trio:"
DEFAULT_MAX_QUEUED = 1024  # messages a bus subscription holds before it is cut off

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL_STATUSES: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
LEASE_LOST_MESSAGE = "The worker running the task stopped: its lease expired."


class StoreError(Exception):
    """A store could not do what was asked; the message says why."""


class StoreUnavailable(StoreError):
    """The store's backend (Redis) cannot be reached or stopped answering.

    Raised instead of waiting: every call on a Redis store is bounded by the
    store's ``timeout``.  The store reconnects by itself once the backend is
    back; the call may simply be retried."""


class BusOverflow(StoreError):
    """A bus subscription fell behind: more messages arrived than it may queue.

    Raised by the subscription's iteration, which then ends; messages were
    lost, so the subscriber should resynchronise (and may subscribe again)."""


class SessionRecord(msgspec.Struct, kw_only=True):
    """What every worker must know of a session to serve any of its requests.

    JSON-valued fields hold the JSON text as ``bytes`` (as the client sent
    it), so the store never decodes them.  ``created_at`` and ``expires_at``
    are wall-clock seconds (``time.time()``); ``expires_at`` is set by
    :meth:`SessionStore.put` and :meth:`SessionStore.touch`."""

    session_id: str
    protocol_version: str
    client_info: bytes = b"null"
    client_capabilities: bytes = b"{}"
    log_level: str | None = None
    subscriptions: list[str] = msgspec.field(default_factory=list)
    stream_worker: str | None = None
    #: The workers that restored a replica of the session (and the one that answered
    #: ``initialize``): those a ``DELETE`` waits for.
    replicas: list[str] = msgspec.field(default_factory=list)
    """The worker holding the session's GET stream, if one is open."""
    principal: str | None = None
    """Whom the session belongs to (the authenticated principal), if anyone."""
    data: dict[str, bytes] = msgspec.field(default_factory=dict)
    """Anything else a transport or server keeps with the session."""
    created_at: float = 0.0
    expires_at: float = 0.0


class TaskRecord(msgspec.Struct, kw_only=True):
    """A task (2025-11-25 tasks, or the Tasks extension) as every worker sees it.

    ``result`` is JSON text: the tool's result once ``completed``, or the
    JSON-RPC error once ``failed`` by one (``None`` while running).  ``worker``
    names the worker running it.  Times are wall-clock seconds; ``ttl`` is in
    seconds from creation, after which the task is gone."""

    task_id: str
    owner: str
    session_id: str | None = None
    status: TaskStatus = "working"
    status_message: str | None = None
    result: bytes | None = None
    worker: str | None = None
    data: dict[str, bytes] = msgspec.field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0
    ttl: float = 0.0
    leased: bool = False
    """Whether a lease guards the task (then it fails when the lease expires)."""

    @property
    def terminal(self) -> bool:
        """Whether the task is completed, failed or cancelled."""
        return self.status in TERMINAL_STATUSES


def check_ttl(ttl: float, what: str = "ttl") -> None:
    """Refuse a time to live that is not a positive number of seconds."""
    if not ttl > 0:
        raise ValueError(f"{what} must be a positive number of seconds, not {ttl!r}")


def check_bucket(rate: float, burst: int) -> None:
    """Refuse a bucket's rate that is not positive, or a burst below one."""
    if not 0 < rate < float("inf"):
        raise ValueError(f"a bucket's rate must be a positive number of tokens a second, not {rate!r}")
    if burst < 1:
        raise ValueError(f"a bucket's burst must be at least 1, not {burst!r}")


def new_task(record: TaskRecord, lease: float | None) -> TaskRecord:
    """``record`` as a store keeps it when created (its ttl and ``lease`` checked,
    its times and ``leased`` set)."""
    check_ttl(record.ttl, "a task's ttl")
    if lease is not None:
        check_ttl(lease, "lease")
    now = time.time()
    return msgspec.structs.replace(
        record,
        created_at=record.created_at or now,
        updated_at=record.updated_at or now,
        leased=lease is not None,
    )


def lease_lost(record: TaskRecord, now: float) -> TaskRecord:
    """``record`` as reported once its lease expired: failed."""
    return msgspec.structs.replace(record, status="failed", status_message=LEASE_LOST_MESSAGE, updated_at=now)


#: What :meth:`SessionStore.change` sets: fields and values, or a function of the record giving them.
Changes = Mapping[str, Any] | Callable[[SessionRecord], Mapping[str, Any]]


def apply_changes(record: SessionRecord, changes: Changes) -> SessionRecord:
    """``record`` with ``changes`` made (see :meth:`SessionStore.change`)."""
    return msgspec.structs.replace(record, **(changes(record) if callable(changes) else changes))


class SessionStore(Protocol):
    """Session records, each kept for a time to live (seconds)."""

    async def get(self, session_id: str) -> SessionRecord | None:
        """The session's record, or ``None`` if unknown or expired."""
        ...

    async def put(self, record: SessionRecord, *, ttl: float) -> SessionRecord:
        """Keep ``record`` (replacing any) for ``ttl`` seconds; the record as kept."""
        ...

    async def touch(self, session_id: str, *, ttl: float) -> bool:
        """Keep the session's record ``ttl`` seconds from now; ``False`` if it is gone."""
        ...

    async def change(self, session_id: str, changes: Changes, *, ttl: float) -> SessionRecord | None:
        """Set the record's fields named in ``changes`` (the others as they are, whoever else
        changes them meanwhile) and keep it ``ttl`` seconds from now: the record as kept, or
        ``None`` if it is gone.  ``changes`` may be a function of the record as read, called
        again if another change came first (to add to a list without losing another's)."""
        ...

    async def delete(self, session_id: str) -> bool:
        """Forget the session's record; ``False`` if there was none."""
        ...

    async def take(self, session_id: str) -> SessionRecord | None:
        """Forget the session's record and return it as it was (``None``: there was none),
        in one step: a :meth:`change` after it finds the record gone."""
        ...


class TaskStore(Protocol):
    """Task records, each kept for its ``ttl``, and the leases of running tasks.

    A task created with a ``lease`` is guarded by it: the worker running it
    calls :meth:`renew` before the lease runs out; once it has run out (the
    worker died) the task is reported ``failed`` and can no longer be updated."""

    async def create(self, record: TaskRecord, *, lease: float | None = None) -> TaskRecord:
        """Keep a new task for ``record.ttl`` seconds, leased for ``lease`` seconds if given.

        Raises :class:`StoreError` if the id is taken."""
        ...

    async def get(self, task_id: str) -> TaskRecord | None:
        """The task, ``failed`` if its lease expired while not terminal; ``None`` if gone."""
        ...

    async def update(self, record: TaskRecord) -> bool:
        """Replace the task's record (its ttl still counts from creation).

        ``False``, and nothing changed, when the task is gone or its lease expired."""
        ...

    async def renew(self, task_id: str, lease: float) -> bool:
        """Extend the task's lease to ``lease`` seconds from now; ``False`` if it was lost."""
        ...

    async def list(self, owner: str) -> builtins.list[TaskRecord]:
        """The owner's tasks, oldest first (as :meth:`get` reports them)."""
        ...

    async def delete(self, task_id: str) -> bool:
        """Forget the task; ``False`` if there was none."""
        ...


class BusMessage(NamedTuple):
    """A message received from the bus: the channel it was published on, and its bytes."""

    channel: str
    data: bytes


class Subscription(Protocol):
    """The messages of the channels subscribed to, in order, as an async iterator."""

    def __aiter__(self) -> AsyncIterator[BusMessage]: ...

    async def receive(self) -> BusMessage:
        """The next message; raises :class:`BusOverflow` if the subscription fell behind."""
        ...


class Bus(Protocol):
    """Publish/subscribe between workers.

    Delivery is at most once, to the subscriptions open when a message is
    published (none are kept for later subscribers); each subscription gets
    the messages of its channels in the order they were published by one
    publisher.  A subscription holds at most ``max_queued`` unread messages:
    beyond that it is cut off with :class:`BusOverflow`."""

    async def publish(self, channel: str, data: bytes) -> int:
        """Send ``data`` to every subscription of ``channel``: how many listeners took it
        (0: nobody listens; the subscriptions of one process to one Redis count once)."""
        ...

    def subscribe(self, *channels: str) -> AbstractAsyncContextManager[Subscription]:
        """Subscribe to ``channels``; when entered, messages published afterwards arrive."""
        ...


class Buckets(Protocol):
    """Token buckets shared by every worker (what :class:`~mcp_trio.middleware.RateLimit`
    draws from when served with a store).

    A bucket holds up to ``burst`` tokens and gains ``rate`` tokens a second; an unknown
    bucket is full.  :meth:`take` is atomic: however many workers take from one bucket at
    once, no more tokens are taken than it held.  A bucket is forgotten once it would be
    full again (a full bucket and an unknown one are the same), so memory stays bounded by
    the buckets in use.  Times are the store's own clock (one clock for every worker)."""

    async def take(self, key: str, *, rate: float, burst: int) -> float:
        """Take a token from ``key``'s bucket: ``0.0`` if one was taken, else the seconds
        until one is there (nothing taken)."""
        ...
