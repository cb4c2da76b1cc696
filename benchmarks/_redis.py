"""A ``redis-server`` of one's own, on a free loopback port, with nothing saved to disk.

:class:`RedisServer` starts one (``start``: bounded wait for its ``PING`` answer), stops it and
restarts it; the benchmarks use it for the shared session store (``--store redis://...``) and
``tools/redis_server.py`` builds its fixture on it (that one also installs Debian's package
when the command is missing).  Without a ``command``, ``redis-server`` is looked up on PATH and
in the system directories (:func:`find_redis_server`).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

__all__ = ["RedisServer", "RedisUnavailable", "find_redis_server"]

START_TIMEOUT = 15.0  # seconds for redis-server to answer PING
STOP_TIMEOUT = 10.0
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class RedisUnavailable(RuntimeError):
    """redis-server is missing and cannot be installed, or did not start."""


def find_redis_server() -> str:
    """The path of ``redis-server`` (PATH, then the system directories).

    Raises:
        RedisUnavailable: it is not installed (the message says how to install it).
    """
    found = shutil.which("redis-server") or shutil.which("redis-server", path=SYSTEM_PATH)
    if found is None:
        raise RedisUnavailable(
            "redis-server is not installed: install Redis 7 or later "
            "(Debian/Ubuntu: sudo apt-get install redis-server), or give its path"
        )
    return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _answers_ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """A ``redis-server`` subprocess on ``127.0.0.1:port`` (a free one unless given).

    ``command`` is the ``redis-server`` to run (default: :meth:`executable`, looked up when
    it starts); its log and working directory are ``directory``.
    """

    def __init__(self, directory: Path, port: int | None = None, *, command: str | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.command = command
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        """The process id while it runs."""
        return self.process.pid if self.process is not None else None

    def executable(self) -> str:
        """The ``redis-server`` to run: ``command`` if given, else :func:`find_redis_server`."""
        return self.command or find_redis_server()

    def start(self) -> None:
        """Start it, and wait (bounded) until it answers PING."""
        assert self.process is None, "already running"
        self.directory.mkdir(parents=True, exist_ok=True)
        log = self.directory / "redis.log"
        command = [
            self.executable(),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.directory),
            "--logfile", str(log),
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers_ping(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                output = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise RedisUnavailable(
                    f"redis-server did not answer PING on port {self.port} "
                    f"within {START_TIMEOUT:g} s:\n{output}"
                )
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL if it lingers)."""
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def restart(self) -> None:
        """Stop it and start it again on the same port (empty: nothing is saved)."""
        self.stop()
        self.start()

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
