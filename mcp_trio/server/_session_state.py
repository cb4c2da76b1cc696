"""What handlers keep per session (``ctx.get_state`` / ``ctx.set_state``), for
:class:`~._open_sessions.OpenSessions`, which owns it.

A session served by one process keeps its values as they are, in memory, for as long as the
session lives.  A session that a store shares between workers (``serve_http(store=...)``,
``mcp-trio serve --workers``) keeps them in its record in the store, as JSON, so the worker
serving its next request finds them: there a value must be something msgspec encodes (the
built-in types, dataclasses, Structs, TypedDicts, enums, datetimes ...), read back as the type
the reader names.  Reading or writing then costs one round trip to the store, and a store that
cannot be reached raises :class:`~mcp_trio.store.StoreError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

if TYPE_CHECKING:
    from ..store import SessionRecord
    from ..transports._base import SharedRecord

__all__ = ["ABSENT", "Absent", "check_key", "decode", "load", "save", "typed"]

T = TypeVar("T")

#: The prefix of the keys of handler state in ``SessionRecord.data``.
_PREFIX = "state:"


class Absent:
    __slots__ = ()


ABSENT = Absent()


def check_key(key: object) -> None:
    if not isinstance(key, str) or not key:
        raise TypeError(f"a session state key is a non-empty str, not {key!r}")


def typed(key: str, value: object, kind: type[T]) -> T:
    """``value`` (kept in memory) as a ``kind``: itself if it is one, else converted by msgspec."""
    try:
        if isinstance(value, kind):
            return value
    except TypeError:  # (a kind isinstance cannot check: list[int], a TypedDict ...)
        pass
    try:
        converted: T = msgspec.convert(value, kind, from_attributes=True)
    except (msgspec.ValidationError, TypeError) as exc:
        raise TypeError(
            f"session state {key!r} is a {type(value).__name__}, not a {_name(kind)}: {exc}"
        ) from None
    return converted


def decode(key: str, data: bytes, kind: type[T]) -> T:
    """``data`` (JSON kept in the store) as a ``kind``."""
    try:
        decoded: T = msgspec.json.decode(data, type=kind)
    except (msgspec.ValidationError, TypeError) as exc:
        raise TypeError(f"session state {key!r} does not decode as a {_name(kind)}: {exc}") from None
    return decoded


async def load(record: SharedRecord, key: str) -> bytes | None:
    """The JSON of ``key`` in the session's record, or None."""
    kept = await record.sessions.get(record.session_id)
    return None if kept is None else kept.data.get(_PREFIX + key)


async def save(record: SharedRecord, key: str, value: object, *, delete: bool = False) -> None:
    """Write ``value`` as ``key`` in the session's record (or take ``key`` out)."""
    data = b""
    if not delete:
        try:
            data = msgspec.json.encode(value)
        except (TypeError, msgspec.EncodeError) as exc:
            raise TypeError(
                f"session state {key!r} is shared with the other workers through the store, so it "
                f"must be JSON-encodable, which a {type(value).__name__} is not ({exc}); keep "
                "what cannot be encoded in the lifespan's value instead"
            ) from None

    def change(kept: SessionRecord) -> dict[str, Any]:
        values = dict(kept.data)
        if delete:
            values.pop(_PREFIX + key, None)
        else:
            values[_PREFIX + key] = data
        return {"data": values}

    if await record.sessions.change(record.session_id, change, ttl=record.ttl) is None:
        raise LookupError(f"session {record.session_id} is no longer in the store: it ended or expired")


def _name(kind: object) -> str:
    return kind.__name__ if isinstance(kind, type) else repr(kind)
