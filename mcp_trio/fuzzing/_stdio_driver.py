"""The raw stdio driver: launch a server as a command and speak MCP over its stdin and stdout.

:class:`StdioTarget` launches the command; :class:`StdioConnection` writes bytes to its
stdin, reads stdout line by line (each line should be one JSON-RPC message) and keeps a tail
of stderr.  Synchronous, with a deadline on every wait.
"""

from __future__ import annotations

import os
import queue
import select
import subprocess
import threading
import time
from collections.abc import Sequence
from typing import Any

from ._connection import CommandTarget, Connection, Headers

__all__ = ["StdioConnection", "StdioTarget"]

STDERR_TAIL = 16 * 1024


class StdioConnection(Connection):
    kind = "stdio"

    def __init__(self, target: StdioTarget) -> None:
        super().__init__()
        self.proc = subprocess.Popen(
            target.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=target.cwd,
            env=target.env,
            start_new_session=True,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr = bytearray()
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()
        self._eof = False

    def _read_stdout(self) -> None:
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        buf = bytearray()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if buf.strip():
                    self._lines.put(bytes(buf))
                self._lines.put(None)
                return
            buf += chunk
            while (nl := buf.find(b"\n")) >= 0:
                line = bytes(buf[:nl]).rstrip(b"\r")
                del buf[: nl + 1]
                if line.strip():
                    self._lines.put(line)

    def _read_stderr(self) -> None:
        fd = self.proc.stderr.fileno()  # type: ignore[union-attr]
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self._stderr += chunk
            if len(self._stderr) > 2 * STDERR_TAIL:
                del self._stderr[:-STDERR_TAIL]

    def _write(self, data: bytes, deadline: float) -> bool:
        fd = self.proc.stdin.fileno()  # type: ignore[union-attr]
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                _, writable, _ = select.select([], [fd], [], left)
                if writable:
                    view = view[os.write(fd, view) :]
            except (BrokenPipeError, OSError):
                return False
        return True

    def _send(
        self, payloads: Sequence[bytes], want: set[Any], deadline: float, headers: Headers, startup: float
    ) -> None:
        for data in payloads:
            self.log("send", data)
        blob = b"".join(p + b"\n" for p in payloads)
        if not self._write(blob, deadline):
            self.events.append(
                {"t": self.now(), "dir": "note", "text": "writing to stdin failed or timed out"}
            )
        self.wait(want, max(0.0, deadline - time.monotonic()), startup)

    def wait(self, want: set[Any], timeout: float, startup: float = 0.0) -> None:
        """Read until every id in ``want`` is answered, the output ends, or ``timeout``; while
        the process has not said a word yet, the wait is ``startup`` if that is longer."""
        if not want:
            self.drain(0.0)
            return
        starting = startup > timeout and not self.received
        deadline = time.monotonic() + (startup if starting else timeout)
        while not self._eof:
            if starting and self.received:
                starting = False  # it has started: from now on, time to answer
                deadline = time.monotonic() + timeout
            if want <= self.answered():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                line = self._lines.get(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            if not self._take(line):
                return

    def drain(self, settle: float) -> None:
        """Take what is already there, waiting at most ``settle`` seconds for more."""
        deadline = time.monotonic() + settle
        while not self._eof:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.0)) if left > 0 else self._lines.get_nowait()
            except queue.Empty:
                return
            if not self._take(line):
                return

    def _take(self, line: bytes | None) -> bool:
        """Keep a line read from stdout (and refuse a request in it); False at the end of output."""
        if line is None:
            self._eof = True
            return False
        self._got(line)
        self._answer_server_requests()
        return True

    def _send_reply(self, reply: bytes) -> None:
        self.log("send", reply, auto=True)
        self._write(reply + b"\n", time.monotonic() + 1.0)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def settle_exit(self, grace: float) -> None:
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def stderr_tail(self) -> str:
        return bytes(self._stderr[-STDERR_TAIL:]).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        for sig in ("wait", "terminate", "kill"):
            if sig != "wait":
                try:
                    getattr(self.proc, sig)()
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                continue
        for t in self._threads:
            t.join(timeout=1.0)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


class StdioTarget(CommandTarget):
    """A server launched as a command; MCP over its stdin/stdout."""

    kind = "stdio"

    def open(self) -> StdioConnection:
        return StdioConnection(self)
