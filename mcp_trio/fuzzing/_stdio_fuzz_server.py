"""The fuzzing server of the client campaigns over stdio: the same plan, one JSON-RPC message
a line, reached through the relay (``_relay.py``) the client starts as its stdio server."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from . import oracles as orc
from ._fuzz_dialogue import Dialogue, error_body
from ._fuzz_server import MAX_BODY, Listener, Served
from ._plans import Plan

__all__ = ["StdioFuzzServer"]


class _Lines:
    """The :class:`~._fuzz_dialogue.Channel` over stdio: every message a line on the relay's
    connection, written whole under a lock (answers come from several threads)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.lock = threading.Lock()

    def reply(self, status: int, body: bytes = b"", extra: Sequence[tuple[str, str]] = ()) -> None:
        if body:
            self.event(body)

    def open_stream(self) -> None:
        pass  # (HTTP framing)

    def event(self, data: bytes) -> None:
        line = data.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"  # (only junk answers hold any)
        with self.lock:
            try:
                self.sock.sendall(line)
            except OSError:
                pass

    def close_stream(self) -> None:
        pass  # (HTTP framing)

    def shutdown(self) -> None:
        """No more lines: the relay, the client's server process, then exits by itself."""
        with self.lock:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class StdioFuzzServer(Served):
    """The same plan served over stdio, one JSON-RPC message per line.

    The client launches the relay (:attr:`relay_argv`) as its server; the relay connects here
    (127.0.0.1, port 0) and copies its stdin and stdout to and from this connection.  Every
    client request is served in a thread of its own (so the client's answers to our requests
    keep arriving while it waits for them); a 2025-03-26 batch is answered with one array.
    """

    def __init__(self, plan: Plan, revision: str, timeout: float) -> None:
        self.dialogue = Dialogue(plan, revision, timeout)
        self.log = self.dialogue.log
        self.lines: _Lines | None = None  # the relay's connection, once it came
        self.serving: list[threading.Thread] = []  # threads answering a client request
        self.listener = Listener(self._connection)
        relay = str(Path(__file__).with_name("_relay.py"))
        self.relay_argv = [sys.executable, relay, str(self.listener.port)]

    def close(self) -> None:
        super().close()
        if self.lines is not None:
            self.lines.sock.close()

    def _serve_in_thread(self, fn: Callable[..., None], *args: Any) -> None:
        self.serving.append(self.listener.spawn(fn, *args))

    def _connection(self, sock: socket.socket) -> None:
        if self.lines is not None:  # one client, one server process per run
            sock.close()
            return
        self.lines = _Lines(sock)
        self.listener.spawn(self._serve_lines, self.lines)

    def _serve_lines(self, lines: _Lines) -> None:
        sock = lines.sock
        sock.settimeout(0.2)
        buffer = b""
        try:
            while not self.listener.stopped.is_set():
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                for line in complete:
                    if line.strip():
                        self._line(lines, line.rstrip(b"\r"))
                if len(buffer) > MAX_BODY:  # no end of line in sight: not a message
                    with self.dialogue.cond:
                        self.log.unparsed.append(buffer[:65536])
                    buffer = b""
            if buffer.strip():  # the last message, without its newline
                self._line(lines, buffer.rstrip(b"\r"))
        except OSError:
            pass
        self.dialogue.note({"dir": "eof"})
        # The client closed its server's stdin: finish what is being answered (bounded), then
        # close, so that the relay, the client's server process, exits by itself.
        deadline = time.monotonic() + self.dialogue.timeout + 1
        for thread in list(self.serving):
            thread.join(max(0.0, deadline - time.monotonic()))
        lines.shutdown()

    def _line(self, lines: _Lines, data: bytes) -> None:
        self.log.log("recv", data)
        try:
            msg = orc.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            self.dialogue.unparsed(lines, data)
            return
        self.dialogue.record(msg, None)
        is_request = isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg
        if self.dialogue.stateless:
            if isinstance(msg, list):
                self.dialogue.note({"dir": "refused-batch"})
            if is_request:
                self._serve_in_thread(self.dialogue.stateless_message, lines, msg)
            elif not (isinstance(msg, dict) and isinstance(msg.get("method"), str)):
                self.dialogue.stateless_message(lines, msg)  # a batch or a response: refused at once
        elif isinstance(msg, list):
            self._serve_in_thread(self._batch, lines, msg)
        elif not is_request:
            return  # responses (recorded above) and notifications
        elif msg["method"] == "initialize" or self.log.session_id is None:
            self.dialogue.request(lines, msg)  # in this thread: the session exists before the next line
        else:
            self._serve_in_thread(self.dialogue.request, lines, msg)

    def _batch(self, lines: _Lines, batch: list[Any]) -> None:
        requests, refused = self.dialogue.batch_requests(batch)
        if refused:
            if not self.dialogue.answers_our_batch(batch):
                self.dialogue.note({"dir": "refused-batch"})
            lines.event(error_body(None, orc.INVALID_REQUEST, "batch not accepted here"))
        elif requests:
            answers = self.dialogue.steps_then_answers(lines, requests)
            parsed = []
            for data in answers:
                try:
                    orc.loads(data)
                    parsed.append(data)
                except ValueError:  # a junk answer: a line of its own, before the array
                    self.dialogue.send(lines, data)
            self.dialogue.send(lines, b"[" + b",".join(parsed) + b"]")
