"""What the workers sharing sessions through a store say to each other: the
bus messages (:class:`_Note`), how a worker listens to its channels, and the
part of a session record a replica is restored from (:class:`Restored`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import msgspec
import trio

from ...store import Store, StoreError
from .._base import RequestId

log = logging.getLogger("mcp_trio.http")

_RESUBSCRIBE = 0.5  # seconds between attempts to subscribe again to a failed bus


async def listen(
    store: Store,
    channels: tuple[str, ...],
    take: Callable[[bytes], Awaitable[None]],
    who: str,
    *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Hand every message of the bus ``channels`` to ``take`` until cancelled;
    when the bus fails (the store's backend went away), subscribe again after a
    pause, for as long as it takes (messages published meanwhile are lost).
    ``task_status.started()`` once subscribed; a failure before that is raised."""
    started = False
    while True:
        try:
            async with store.bus.subscribe(*channels) as messages:
                if not started:
                    started = True
                    task_status.started()
                async for message in messages:
                    await take(message.data)
        except (StoreError, BaseExceptionGroup) as exc:
            error = _store_error(exc)
            if error is None or not started:
                raise
            log.warning("the bus subscription of %s ended (%s); subscribing again", who, error)
        await trio.sleep(_RESUBSCRIBE)


def _store_error(exc: BaseException) -> StoreError | None:
    """The store error ``exc`` is, or the first of a group of nothing else."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        found = [_store_error(e) for e in exc.exceptions]
        if found and all(e is not None for e in found):
            return found[0]
    return None


def check_worker_id(worker_id: str) -> str:
    """``worker_id``, if it can name a worker in request and event ids."""
    if not worker_id or not all(c.isalnum() or c in "-_" for c in worker_id):
        raise ValueError(f"worker_id must be letters, digits, '-' and '_' only, not {worker_id!r}")
    return worker_id


def principal_key(principal: Hashable | None) -> str | None:
    """How a session's principal is written in its record (compared as text)."""
    return None if principal is None else principal if isinstance(principal, str) else repr(principal)


@dataclass
class Restored:
    """What a replica's engine and server take from the session record
    (the engine reads ``version``, ``client_info``, ``client_capabilities``)."""

    version: str
    client_info: dict[str, Any]
    client_capabilities: dict[str, Any]
    log_level: str | None = None
    subscriptions: list[str] = field(default_factory=list)
    first_worker: str | None = None  # the one that answered initialize


class _Note(msgspec.Struct, omit_defaults=True):
    """One bus message between workers."""

    # frame | initialized | end | ack | get | held | update | probe
    # | follow | followed | unfollow | event | close | done (a POST stream's)
    kind: str
    session: str
    data: bytes = b""
    key: str = ""  # a POST stream's (follow, unfollow, event, done); an update's, an ack's
    event_id: str = ""
    cancel: RequestId | None = None  # a frame's notifications/cancelled: its request id
    origin: str | None = None  # the worker that sent a frame to every worker
    log_level: str | None = None
    subscriptions: list[str] | None = None


_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(_Note).decode
_Outgoing = tuple[str, bytes, Callable[[], Awaitable[None]] | None]  # channel, data, if unheard
_batch_members = msgspec.json.Decoder(list[msgspec.Raw]).decode


def _json(value: Any, default: bytes) -> bytes:
    return default if value is None else msgspec.json.encode(value)


def _from_json(data: bytes) -> dict[str, Any]:
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}
