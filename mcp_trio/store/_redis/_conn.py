"""The Redis store's connection: its keys, its Lua scripts, and the guard that
bounds every call and turns Redis failures into the store's errors."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import coredis
import trio
from coredis.commands.script import Script
from coredis.exceptions import ConnectionError as RedisConnectionError
from coredis.exceptions import RedisError

from .._base import StoreError, StoreUnavailable

# what a lost or refused connection looks like, from coredis, anyio and the OS
_UNAVAILABLE: tuple[type[BaseException], ...] = (
    RedisConnectionError,
    TimeoutError,
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
)


def redact(url: str) -> str:
    """``url`` without its password, to name the store in messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + host))


def leaf(exc: BaseException) -> BaseException:
    """The first exception that is not a group inside (nested) exception groups, or ``exc``."""
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [inner for member in exc.exceptions for inner in _leaves(member)]
    return [exc]


def store_error(url: str, what: str, exc: BaseException) -> BaseException:
    """The store's error for ``exc``, raised by coredis while doing ``what`` (an
    exception group counts when every exception inside is a Redis failure);
    anything else comes back unchanged."""
    leaves = _leaves(exc)
    first = leaves[0]
    if all(isinstance(e, _UNAVAILABLE) for e in leaves):
        return StoreUnavailable(f"the Redis store at {url} is unavailable ({what}): {first}")
    if all(isinstance(e, (*_UNAVAILABLE, RedisError)) for e in leaves):
        return StoreError(f"the Redis store at {url} refused {what}: {first}")
    return exc if len(leaves) > 1 else first


def ms(seconds: float) -> int:
    """Seconds as whole milliseconds, at least one (a time to live of 0 ms is refused by Redis)."""
    return max(1, math.ceil(seconds * 1000))


def text(value: str | bytes) -> str:
    """A value read from Redis, as text."""
    return value.decode() if isinstance(value, bytes) else value


def data(value: str | bytes) -> bytes:
    """A value read from Redis, as bytes."""
    return value if isinstance(value, bytes) else value.encode()


async def run(script: Script[bytes], keys: Sequence[str], args: Sequence[str | bytes | int] = ()) -> object:
    """Run a Lua script: its answer, as Redis gave it."""
    answer: object = await script(keys=list(keys), args=list(args))
    return answer


class RedisConnection:
    """A coredis client with the store's key prefix and time bound."""

    def __init__(self, client: coredis.Redis[bytes], *, url: str, prefix: str, timeout: float) -> None:
        if not timeout > 0:
            raise ValueError(
                f"the Redis store's timeout must be a positive number of seconds, not {timeout!r}"
            )
        self.client = client
        self.url = redact(url)
        self.prefix = prefix
        self.timeout = timeout

    def key(self, kind: str, name: str) -> str:
        """The key of ``name`` among the store's keys of ``kind`` (``s`` sessions, ...)."""
        return f"{self.prefix}{kind}:{name}"

    def script(self, lua: str) -> Script[bytes]:
        """A Lua script, loaded on first use (and again after Redis restarts)."""
        return self.client.register_script(lua)

    @contextmanager
    def guard(self, what: str) -> Iterator[None]:
        """Bound what runs inside by the store's timeout; Redis failures become
        :class:`StoreUnavailable` (cannot reach it) or :class:`StoreError`."""
        try:
            with trio.fail_after(self.timeout):
                yield
        except trio.TooSlowError:
            raise StoreUnavailable(
                f"the Redis store at {self.url} did not answer {what} within {self.timeout:g} s"
            ) from None
        except Exception as exc:
            error = store_error(self.url, what, exc)
            if isinstance(error, StoreError):
                raise error from leaf(exc)
            if error is exc:
                raise
            raise error from None  # the one exception of a group, unwrapped
