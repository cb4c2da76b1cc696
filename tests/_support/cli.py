"""``mcp-trio serve`` as a real process: started and read until it listens (``serving``), its
parser, the headers and ``initialize`` body of the raw HTTP calls, and ``--workers`` helpers."""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2

from mcp_trio._cli import _serve
from mcp_trio._cli._config import resolve
from tests._support.paths import ROOT

HTTP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


@contextlib.contextmanager
def serving_everything_over_http(*options: str, transport: str = "--http") -> Iterator[str]:
    """``mcp-trio serve examples/everything.py --http 127.0.0.1:0 *options`` (or ``--ws`` with
    ``transport``); yields its URL (``https://`` or ``wss://`` with ``--certfile``)."""
    argv = [
        sys.executable,
        "-m",
        "mcp_trio._cli",
        "serve",
        "examples/everything.py",
        transport,
        "127.0.0.1:0",
    ]
    proc = subprocess.Popen(
        [*argv, *options], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert " at " in line and "://127.0.0.1:" in line, line
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


class Served:
    """A running ``mcp-trio serve`` subprocess; its stderr is read by a thread."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        argv = [sys.executable, "-m", "mcp_trio._cli", "serve", *args]
        environ = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **(env or {})}
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=environ,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._changed:
                self.lines.append(raw.decode(errors="replace"))
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # EOF
            self._changed.notify_all()

    def wait_for(self, text: str, timeout: float = 20) -> str:
        """The first stderr line holding ``text`` (waiting for it)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.lines and self.lines[-1] == "" and self.proc.poll() is not None):
                    raise AssertionError(f"no {text!r} on stderr: {''.join(self.lines)}")
                self._changed.wait(left)

    @property
    def url(self) -> str:
        line = self.wait_for(" at ")
        return line.split(" at ")[1].split()[0]

    def finish(self, timeout: float = 20) -> tuple[int, str]:
        """Wait for the exit: (code, all of stderr)."""
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        deadline = time.monotonic() + 5
        with self._changed:
            while not (self.lines and self.lines[-1] == "") and time.monotonic() < deadline:
                self._changed.wait(0.1)
        return code, "".join(self.lines)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        # stderr is the reader's until its end of file: a child of the process (a worker)
        # may hold it open for a while after the process itself is gone.
        self._reader.join(10)
        streams = [self.proc.stdin, self.proc.stdout]
        if not self._reader.is_alive():
            streams.append(self.proc.stderr)
        for stream in streams:
            if stream is not None:
                stream.close()


@contextlib.contextmanager
def serving(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    served = Served(args, cwd, env)
    watchdog = threading.Timer(60, served.proc.kill)  # no test hangs (a blocked readline ends)
    watchdog.start()
    try:
        yield served
    finally:
        watchdog.cancel()
        served.close()


def session_headers(client: httpx2.Client, url: str, **extra: str) -> dict[str, str]:
    """Initialize a session; the headers of its further requests."""
    r = client.post(url, headers={**HTTP_HEADERS, **extra}, json=INIT)
    assert r.status_code == 200, r.text
    headers = {
        **HTTP_HEADERS,
        **extra,
        "mcp-session-id": r.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert client.post(url, headers=headers, json=initialized).status_code == 202
    return headers


def serve_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    _serve.add_parser(parser.add_subparsers())
    return parser


def parsed(argv: list[str], environ: dict[str, str]) -> argparse.Namespace:
    parser = serve_parser()
    args = parser.parse_args(["serve", "app.py", *argv])
    resolve(args.func.args[0], args, environ)
    return args


PROGRAM = str(ROOT / "tests" / "programs" / "pid_server.py")


CALL = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "pid", "arguments": {}}}


HEADERS = {**HTTP_HEADERS, "mcp-protocol-version": "2025-11-25"}


FRESH = httpx2.Limits(max_keepalive_connections=0)  # a new connection per request


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
