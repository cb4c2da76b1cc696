"""A real ``redis-server`` for tests, on a free loopback port, with nothing
saved to disk.

The server itself is :class:`benchmarks._redis.RedisServer` (the benchmarks
start theirs with it too); here, if ``redis-server`` is not on PATH it is
installed from Debian's package (``apt-get install -y redis-server``) when the
tests run as root, as ``tools/conformance/runner.py`` installs Node; otherwise
starting it fails saying what to install.  The tests' ``redis_server`` fixture
(tests/conftest.py) is one for the test session; a test may start a
:class:`RedisServer` of its own (which it may stop and restart)."""

from __future__ import annotations

from benchmarks import _redis
from benchmarks._redis import RedisUnavailable
from tools.debian import Unavailable, ensure_command

__all__ = ["RedisServer", "RedisUnavailable", "redis_server_path"]


def redis_server_path() -> str:
    """The path of ``redis-server``, installing Debian's package first if it is missing."""
    try:
        return ensure_command("redis-server", "redis-server", "the store tests (Redis 7 or later)")
    except Unavailable as exc:
        raise RedisUnavailable(str(exc)) from None


class RedisServer(_redis.RedisServer):
    """A ``redis-server`` subprocess on ``127.0.0.1:port`` (a free one unless given),
    installed first if it is missing (:func:`redis_server_path`)."""

    def executable(self) -> str:
        return self.command or redis_server_path()
