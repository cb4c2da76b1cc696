"""Session records and the events of resumable SSE streams, on Redis.

A session's record is a string (``s:<session id>``, msgpack) that expires with
its time to live.  Its events are a Redis Stream (``e:<session id>``) with the
bytes it holds kept beside it (``eb:<session id>``): each event is added, and
the oldest dropped beyond the bounds of count and bytes, by one Lua script,
which also pushes both keys' expiry ``event_ttl`` seconds ahead."""

from __future__ import annotations

import random
import time

import msgspec
import trio

from .._base import Changes, SessionRecord, StoreError, apply_changes, check_ttl
from .._events import _EVENT_OVERHEAD
from ._conn import RedisConnection, data, ms, run, text

_GET = """
local value = redis.call('GET', KEYS[1])
if not value then return false end
return {value, redis.call('PTTL', KEYS[1])}
"""

# KEYS: the record; ARGV: the value read, the value to write, ttl (ms): 1 if written, 0 if the
# record changed (or went) since it was read
_SWAP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""
_SWAP_TRIES = 32  # a record changed by others this often in a row is an error

# KEYS: the stream, its byte count; ARGV: stream, event id, data, max events, max bytes, ttl (ms), overhead
_STORE = """
local overhead = tonumber(ARGV[7])
local max_events = tonumber(ARGV[4])
local max_bytes = tonumber(ARGV[5])
redis.call('XADD', KEYS[1], '*', 's', ARGV[1], 'e', ARGV[2], 'd', ARGV[3])
local total = redis.call('INCRBY', KEYS[2], string.len(ARGV[3]) + overhead)
local count = redis.call('XLEN', KEYS[1])
while count > 0 and (count > max_events or total > max_bytes) do
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
  redis.call('XDEL', KEYS[1], first[1])
  total = redis.call('INCRBY', KEYS[2], -(string.len(first[2][6]) + overhead))
  count = count - 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[6])
redis.call('PEXPIRE', KEYS[2], ARGV[6])
return count
"""


class RedisSessionStore:
    """Session records on Redis, each a string with the record's time to live."""

    def __init__(self, redis: RedisConnection) -> None:
        self._redis = redis
        self._get = redis.script(_GET)
        self._swap = redis.script(_SWAP)
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(SessionRecord).decode

    async def get(self, session_id: str) -> SessionRecord | None:
        with self._redis.guard("reading a session"):
            found = await run(self._get, [self._redis.key("s", session_id)])
        if not isinstance(found, list):
            return None
        value, pttl = found
        assert isinstance(value, bytes) and isinstance(pttl, int)
        record = self._decode(value)
        record.expires_at = time.time() + max(pttl, 0) / 1000
        return record

    async def put(self, record: SessionRecord, *, ttl: float) -> SessionRecord:
        check_ttl(ttl)
        now = time.time()
        kept = msgspec.structs.replace(record, created_at=record.created_at or now, expires_at=now + ttl)
        with self._redis.guard("writing a session"):
            await self._redis.client.set(
                self._redis.key("s", record.session_id), self._encode(kept), px=ms(ttl)
            )
        return kept

    async def change(self, session_id: str, changes: Changes, *, ttl: float) -> SessionRecord | None:
        check_ttl(ttl)
        key = self._redis.key("s", session_id)
        for attempt in range(_SWAP_TRIES):  # compare and set: a change made meanwhile is kept
            if attempt:
                await trio.sleep(random.uniform(0, 0.001 * attempt))  # (contenders spread out)
            with self._redis.guard("changing a session"):
                read = await self._redis.client.get(key)
                if read is None:
                    return None
                now = time.time()
                kept = apply_changes(self._decode(read), changes)
                kept.expires_at = now + ttl
                if await run(self._swap, [key], [read, self._encode(kept), ms(ttl)]) == 1:
                    return kept
        raise StoreError(f"session {session_id}: its record kept changing under {_SWAP_TRIES} tries")

    async def touch(self, session_id: str, *, ttl: float) -> bool:
        check_ttl(ttl)
        with self._redis.guard("extending a session"):
            return await self._redis.client.pexpire(self._redis.key("s", session_id), ms(ttl))

    async def delete(self, session_id: str) -> bool:
        with self._redis.guard("deleting a session"):
            return await self._redis.client.delete([self._redis.key("s", session_id)]) > 0

    async def take(self, session_id: str) -> SessionRecord | None:
        with self._redis.guard("deleting a session"):
            value = await self._redis.client.getdel(self._redis.key("s", session_id))
        return None if value is None else self._decode(value)


class RedisEventStore:
    """The events of each session on a Redis Stream: the newest ``max_events``
    within ``max_bytes`` (an event counts its data plus 64 bytes, as in
    memory), kept ``event_ttl`` seconds after the session's last event.  An
    event larger than ``max_bytes`` is not kept, and neither are those before
    it (a client resuming from one of them would miss it)."""

    def __init__(self, redis: RedisConnection, *, max_events: int, max_bytes: int, event_ttl: float) -> None:
        if max_events < 0 or max_bytes < 0:
            raise ValueError("event store bounds must not be negative")
        check_ttl(event_ttl, "event_ttl")
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.event_ttl = event_ttl
        self._redis = redis
        self._store = redis.script(_STORE)

    def _keys(self, session_id: str) -> list[str]:
        return [self._redis.key("e", session_id), self._redis.key("eb", session_id)]

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None:
        args: list[str | bytes | int] = [
            stream,
            event_id,
            data,
            self.max_events,
            self.max_bytes,
            ms(self.event_ttl),
            _EVENT_OVERHEAD,
        ]
        with self._redis.guard("storing an event"):
            await run(self._store, self._keys(session_id), args)

    async def replay_after(
        self, session_id: str, event_id: str
    ) -> tuple[str, list[tuple[str, bytes]]] | None:
        with self._redis.guard("reading events"):
            entries = await self._redis.client.xrange(
                self._redis.key("e", session_id), count=max(1, self.max_events)
            )
        wanted = event_id.encode()
        for i, entry in enumerate(entries):
            fields = entry.field_values
            if fields[b"e"] == wanted:
                stream = fields[b"s"]
                later = [
                    (text(e.field_values[b"e"]), data(e.field_values[b"d"]))
                    for e in entries[i + 1 :]
                    if e.field_values[b"s"] == stream
                ]
                return text(stream), later
        return None

    async def forget(self, session_id: str) -> None:
        with self._redis.guard("forgetting events"):
            await self._redis.client.delete(self._keys(session_id))
