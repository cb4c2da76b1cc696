"""The buckets of rate limits on Redis: a hash per bucket (``rl:<key>``: its tokens and
when they were counted), taken from by one Lua script, so that workers taking from one
bucket at once cannot take more than it holds.

The script reads the time from Redis (``TIME``), not from the caller: the workers of
several hosts then share one clock, and a worker whose clock is behind or ahead can
neither refill a bucket early nor drain it late.  Each bucket expires once it would be
full again (its missing tokens at the rate), so Redis keeps only the buckets in use."""

from __future__ import annotations

from .._base import StoreError, check_bucket
from ._conn import RedisConnection, run, text

# KEYS: the bucket; ARGV: rate (tokens a second), burst.  The seconds to wait (0: taken), as text
# (a Lua number would come back cut to an integer).
_TAKE = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local tokens = burst
local kept = redis.call('HMGET', KEYS[1], 'tokens', 'at')
if kept[1] and kept[2] then
  tokens = math.min(burst, tonumber(kept[1]) + math.max(0, now - tonumber(kept[2])) * rate)
end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens), 'at', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((burst - tokens) / rate * 1000)))
return string.format('%.17g', wait)
"""


class RedisBuckets:
    """Token buckets on Redis (see the module's rules)."""

    def __init__(self, redis: RedisConnection) -> None:
        self._redis = redis
        self._take = redis.script(_TAKE)

    async def take(self, key: str, *, rate: float, burst: int) -> float:
        check_bucket(rate, burst)
        with self._redis.guard("taking from a rate limit's bucket"):
            answer = await run(self._take, [self._redis.key("rl", key)], [repr(float(rate)), burst])
        if not isinstance(answer, (str, bytes)):
            raise StoreError(f"the Redis store at {self._redis.url} answered {answer!r} for a bucket")
        return float(text(answer))
