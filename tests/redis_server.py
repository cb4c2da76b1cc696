"""A real ``redis-server`` for tests, on a free loopback port, with nothing
saved to disk.

If ``redis-server`` is not on PATH it is installed from Debian's package
(``apt-get install -y redis-server``) when the tests run as root, as
``tests/conformance/runner.py`` installs Node; otherwise the fixture fails
saying what to install.  Use the ``redis_server`` fixture (one server for the
test session; give each test a prefix of its own) or :class:`RedisServer`
directly (a server of a test's own, which it may stop and restart)."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

START_TIMEOUT = 15.0  # seconds for redis-server to answer PING
STOP_TIMEOUT = 10.0
INSTALL_TIMEOUT = 600.0


class RedisUnavailable(RuntimeError):
    """redis-server is missing and cannot be installed, or did not start."""


def _install_with_apt() -> None:
    """``apt-get install -y redis-server`` (after ``apt-get update`` if the first try fails)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = Path(tempfile.gettempdir()) / "mcp-trio-redis-install.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # one install at a time, across test processes
        if shutil.which("redis-server"):
            return
        install = ["apt-get", "install", "-y", "--no-install-recommends", "redis-server"]
        for step in ([install], [["apt-get", "update"], install]):
            failed = None
            for command in step:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, env=env, check=False
                )
                if done.returncode != 0:
                    failed = f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}"
                    break
            if failed is None and shutil.which("redis-server"):
                return
        raise RedisUnavailable(f"could not install Debian's redis-server package: {failed}")


def redis_server_path() -> str:
    """The path of ``redis-server``, installing Debian's package first if it is missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise RedisUnavailable(
            "the store tests need redis-server (Redis 7 or later) on PATH: install it "
            "(Debian/Ubuntu: sudo apt-get install redis-server); the tests install it "
            "themselves only when they run as root on a system with apt-get"
        )
    _install_with_apt()
    found = shutil.which("redis-server")
    assert found
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
    """A ``redis-server`` subprocess on ``127.0.0.1:port`` (a free one unless given)."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start it, and wait (bounded) until it answers PING."""
        assert self.process is None, "already running"
        self.directory.mkdir(parents=True, exist_ok=True)
        log = self.directory / "redis.log"
        command = [
            redis_server_path(),
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


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server for the test session (each test should use a prefix of its own)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()
