"""The fuzzing server of the client campaigns over stdio: the same plan, one JSON-RPC message
a line, reached through the relay (``_relay.py``) the client starts as its stdio server."""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import oracles as orc
from ._fuzz_server import MAX_BODY, FuzzServer, error_body
from ._plans import Plan

__all__ = ["StdioFuzzServer"]

#: The HTTP connection and socket the shared handlers take: never used over stdio
#: (this class's _send, _reply and _event write lines instead).
_NO_HTTP: Any = None


class StdioFuzzServer(FuzzServer):
    """The same plan served over stdio, one JSON-RPC message per line.

    The client launches the relay (:attr:`relay_argv`) as its server; the relay connects here
    (127.0.0.1, port 0) and copies its stdin and stdout to and from this connection.  Every
    client request is served in a thread of its own (so the client's answers to our requests
    keep arriving while it waits for them); a 2025-03-26 batch is answered with one array.
    """

    def __init__(self, plan: Plan, revision: str, timeout: float) -> None:
        self.write_lock = threading.Lock()
        self.conn: socket.socket | None = None
        self.serving: list[threading.Thread] = []  # threads answering a client request
        super().__init__(plan, revision, timeout)
        port = self.listener.getsockname()[1]
        self.relay_argv = [sys.executable, str(Path(__file__).with_name("_relay.py")), str(port)]

    def close(self) -> None:
        super().close()
        if self.conn is not None:
            self.conn.close()

    def _serve_in_thread(self, fn: Any, *args: Any) -> None:
        self._spawn(fn, *args)
        self.serving.append(self.threads[-1])

    def _connection(self, sock: socket.socket) -> None:
        if self.conn is not None:  # one client, one server process per run
            sock.close()
            return
        self.conn = sock
        self._spawn(self._serve_lines, sock)

    def _serve_lines(self, sock: socket.socket) -> None:
        sock.settimeout(0.2)
        buffer = b""
        try:
            while not self.stopped.is_set():
                try:
                    chunk = sock.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._line(line.rstrip(b"\r"))
                if len(buffer) > MAX_BODY:  # no end of line in sight: not a message
                    with self.cond:
                        self.log.unparsed.append(buffer[:65536])
                    buffer = b""
            if buffer.strip():  # the last message, without its newline
                self._line(buffer.rstrip(b"\r"))
        except OSError:
            pass
        with self.cond:
            self.log.events.append({"t": self.log.now(), "dir": "eof"})
        # The client closed its server's stdin: finish what is being answered (bounded), then
        # close, so that the relay, the client's server process, exits by itself.
        deadline = time.monotonic() + self.timeout + 1
        for thread in list(self.serving):
            thread.join(max(0.0, deadline - time.monotonic()))
        with self.write_lock:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _line(self, data: bytes) -> None:
        self.log.log("recv", data)
        try:
            msg = orc.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            with self.cond:
                self.log.unparsed.append(data)
            self._write(error_body(None, -32700, "parse error"))
            return
        self._record(msg, None)
        is_request = isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg
        if self.stateless:
            if isinstance(msg, list):
                with self.cond:
                    self.log.events.append({"t": self.log.now(), "dir": "refused-batch"})
            if is_request:
                self._serve_in_thread(self._stateless_post, _NO_HTTP, _NO_HTTP, msg)
            elif not (isinstance(msg, dict) and isinstance(msg.get("method"), str)):
                self._stateless_post(_NO_HTTP, _NO_HTTP, msg)  # a batch or a response: refused at once
        elif isinstance(msg, list):
            self._serve_in_thread(self._batch_lines, msg)
        elif not is_request:
            return  # responses (recorded above) and notifications
        elif msg["method"] == "initialize":
            self._initialize(
                _NO_HTTP, _NO_HTTP, msg
            )  # in this thread: the session exists before the next line
        elif self.log.session_id is None:
            self._write(error_body(msg["id"], -32601, f"{msg['method']} is not a method of {self.revision}"))
        else:
            self._serve_in_thread(self._answer_stream, None, None, [msg])

    def _batch_lines(self, batch: list[Any]) -> None:
        requests, refused = self._batch_requests(batch)
        if refused:
            with self.cond:
                self.log.events.append({"t": self.log.now(), "dir": "refused-batch"})
            self._write(error_body(None, orc.INVALID_REQUEST, "batch not accepted here"))
        elif requests:
            answers = self._steps_then_answers(None, None, requests)
            parsed = []
            for data in answers:
                try:
                    orc.loads(data)
                    parsed.append(data)
                except ValueError:  # a junk answer: a line of its own, before the array
                    self._event(None, None, data)
            self._event(None, None, b"[" + b",".join(parsed) + b"]")

    def _answer_stream(self, conn: Any, sock: Any, requests: list[dict[str, Any]]) -> None:
        for data in self._steps_then_answers(conn, sock, requests):
            self._event(conn, sock, data)

    def _send(self, conn: Any, sock: Any, *events: Any) -> None:
        pass  # (HTTP framing)

    def _reply(
        self,
        conn: Any,
        sock: Any,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        extra: Any = (),
    ) -> None:
        if body:
            self._write(body)

    def _event(self, conn: Any, sock: Any, data: bytes) -> None:
        self.log.log("send", data)
        self._write(data)

    def _write(self, data: bytes) -> None:
        line = data.replace(b"\r", b" ").replace(b"\n", b" ") + b"\n"  # (only junk answers hold any)
        with self.write_lock:
            if self.conn is None:
                return
            try:
                self.conn.sendall(line)
            except OSError:
                pass
