"""Tasks on Redis, with their leases.

A task is a hash (``t:<task id>``: the record as msgpack, and beside it what
the scripts check: owner, creation time, ttl, whether it is leased, whether it
is terminal) that expires ``ttl`` seconds after creation.  Its lease is a key
(``tl:<task id>``) with a millisecond expiry that :meth:`RedisTaskStore.renew`
pushes back.  An owner's tasks are a sorted set by creation time
(``to:<owner>``), which lives as long as the longest-lived of them; members
whose task expired are removed when the owner's tasks are listed.  Each
operation is one Lua script, so the checks and the change are atomic."""

from __future__ import annotations

import builtins
import time
from typing import Any

import msgspec

from .._base import StoreError, TaskRecord, check_ttl, lease_lost, new_task
from ._conn import RedisConnection, ms, run

# KEYS: task, lease, owner's set; ARGV: record, owner, created, ttl (ms), lease (ms or ''), terminal, id, ttl
_CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local leased = '0'
if ARGV[5] ~= '' then
  leased = '1'
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[5])
end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'o', ARGV[2], 'c', ARGV[3], 't', ARGV[8], 'l', leased, 'x', ARGV[6])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[7])
if redis.call('PTTL', KEYS[3]) < tonumber(ARGV[4]) then redis.call('PEXPIRE', KEYS[3], ARGV[4]) end
return 1
"""

_READ = """
local function read(task, lease)
  local m = redis.call('HMGET', task, 'r', 'c', 't', 'l')
  if not m[1] then return false end
  return {m[1], m[2], m[3], m[4], redis.call('EXISTS', lease)}
end
"""

# KEYS: task, lease
_GET = _READ + "return read(KEYS[1], KEYS[2])\n"

# KEYS: owner's set; ARGV: prefix
_LIST = (
    _READ
    + """
local found = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local task = read(ARGV[1] .. 't:' .. id, ARGV[1] .. 'tl:' .. id)
  if task then table.insert(found, task) else redis.call('ZREM', KEYS[1], id) end
end
return found
"""
)

# KEYS: task, lease; ARGV: record, terminal, owner
_UPDATE = """
local m = redis.call('HMGET', KEYS[1], 'o', 'l', 'x')
if not m[1] then return 0 end
if m[1] ~= ARGV[3] then return -1 end
if m[2] == '1' and m[3] == '0' and redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'r', ARGV[1], 'x', ARGV[2])
return 1
"""

# KEYS: task, lease; ARGV: lease (ms)
_RENEW = """
local m = redis.call('HMGET', KEYS[1], 'l', 'x')
if m[1] ~= '1' then return 0 end
if m[2] == '0' and redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
return 1
"""

# KEYS: task, lease; ARGV: prefix, id
_DELETE = """
local owner = redis.call('HGET', KEYS[1], 'o')
redis.call('DEL', KEYS[2])
if not owner then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', ARGV[1] .. 'to:' .. owner, ARGV[2])
return 1
"""


class RedisTaskStore:
    """Task records and their leases on Redis (see the module's docstring)."""

    def __init__(self, redis: RedisConnection) -> None:
        self._redis = redis
        self._create = redis.script(_CREATE)
        self._get = redis.script(_GET)
        self._list = redis.script(_LIST)
        self._update = redis.script(_UPDATE)
        self._renew = redis.script(_RENEW)
        self._delete = redis.script(_DELETE)
        self._encode = msgspec.msgpack.Encoder().encode
        self._decode = msgspec.msgpack.Decoder(TaskRecord).decode

    def _keys(self, task_id: str) -> list[str]:
        return [self._redis.key("t", task_id), self._redis.key("tl", task_id)]

    def _read(self, found: Any) -> TaskRecord:
        value, created, ttl, leased, lease_held = found
        record = self._decode(value)
        record.created_at = float(created)
        record.ttl = float(ttl)
        record.leased = leased == b"1"
        if record.leased and not record.terminal and not lease_held:
            return lease_lost(record, time.time())
        return record

    async def create(self, record: TaskRecord, *, lease: float | None = None) -> TaskRecord:
        kept = new_task(record, lease)
        args: list[str | bytes | int] = [
            self._encode(kept),
            kept.owner,
            repr(kept.created_at),
            ms(kept.ttl),
            "" if lease is None else ms(lease),
            "1" if kept.terminal else "0",
            kept.task_id,
            repr(kept.ttl),
        ]
        with self._redis.guard("creating a task"):
            created = await run(
                self._create, [*self._keys(record.task_id), self._redis.key("to", record.owner)], args
            )
        if not created:
            raise StoreError(f"a task with id {record.task_id!r} already exists")
        return kept

    async def get(self, task_id: str) -> TaskRecord | None:
        with self._redis.guard("reading a task"):
            found = await run(self._get, self._keys(task_id))
        return self._read(found) if isinstance(found, list) else None

    async def update(self, record: TaskRecord) -> bool:
        args = [self._encode(record), "1" if record.terminal else "0", record.owner]
        with self._redis.guard("updating a task"):
            done = await run(self._update, self._keys(record.task_id), args)
        if done == -1:
            raise ValueError(f"task {record.task_id!r}: its owner cannot change")
        return done == 1

    async def renew(self, task_id: str, lease: float) -> bool:
        check_ttl(lease, "lease")
        with self._redis.guard("renewing a task's lease"):
            return await run(self._renew, self._keys(task_id), [ms(lease)]) == 1

    async def list(self, owner: str) -> builtins.list[TaskRecord]:
        with self._redis.guard("listing tasks"):
            found = await run(self._list, [self._redis.key("to", owner)], [self._redis.prefix])
        assert isinstance(found, builtins.list)
        return [self._read(task) for task in found]

    async def delete(self, task_id: str) -> bool:
        with self._redis.guard("deleting a task"):
            return await run(self._delete, self._keys(task_id), [self._redis.prefix, task_id]) == 1
