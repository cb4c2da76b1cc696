"""The fuzzing server of the client campaigns, over Streamable HTTP: it follows a
:data:`~._plans.Plan` and logs everything it saw and sent (:class:`ServerLog`).

:class:`FuzzServer` listens on 127.0.0.1 (port 0) (:class:`Listener`, a thread per
connection), plain HTTP/1.1 (h11).  What it says is its :class:`~._fuzz_dialogue.Dialogue`'s:
it serves a 2025-03-26 batch like single messages and refuses one elsewhere, and answers
every request but ``initialize`` (and, in 2026-07-28, ``server/discover``) on an SSE stream.
The stdio variant is :class:`~._stdio_fuzz_server.StdioFuzzServer`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

import h11

from . import oracles as orc
from ._fuzz_dialogue import Dialogue, error_body
from ._fuzz_dialogue import ServerLog as ServerLog
from ._fuzz_dialogue import _dump as _dump
from ._plans import Plan
from .driver import loads

__all__ = ["FuzzServer", "Listener", "ServerLog"]

MAX_BODY = 8 * 1024 * 1024


class Listener:
    """A socket on 127.0.0.1 (port 0) whose connections are handed to ``on_connection`` from
    a thread of its own; every thread it starts is joined (bounded) on :meth:`close`."""

    def __init__(self, on_connection: Callable[[socket.socket], None]) -> None:
        self.on_connection = on_connection
        self.stopped = threading.Event()
        self.threads: list[threading.Thread] = []
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.1)
        self.port: int = self.socket.getsockname()[1]
        self.spawn(self._accept)

    def spawn(self, fn: Callable[..., None], *args: Any) -> threading.Thread:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self.threads.append(t)
        t.start()
        return t

    def close(self) -> None:
        self.stopped.set()
        for t in list(self.threads):
            t.join(timeout=2.0)
        self.socket.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                sock, _ = self.socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.on_connection(sock)


class _Exchange:
    """The :class:`~._fuzz_dialogue.Channel` of one HTTP connection: answers as h11 events."""

    def __init__(self, conn: h11.Connection, sock: socket.socket) -> None:
        self.conn = conn
        self.sock = sock

    def _send(self, *events: Any) -> None:
        self.sock.sendall(b"".join(self.conn.send(e) or b"" for e in events))

    def reply(self, status: int, body: bytes = b"", extra: Sequence[tuple[str, str]] = ()) -> None:
        headers = [("Content-Length", str(len(body))), *extra]
        if body:
            headers.append(("Content-Type", "application/json"))
        self._send(h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage())

    def open_stream(self) -> None:
        headers = [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")]
        self._send(h11.Response(status_code=200, headers=headers))

    def event(self, data: bytes) -> None:
        lines = data.replace(b"\r\n", b"\n").split(b"\n")
        self._send(
            h11.Data(data=b"event: message\n" + b"".join(b"data: " + ln + b"\n" for ln in lines) + b"\n")
        )

    def close_stream(self) -> None:
        self._send(h11.EndOfMessage())


class Served:
    """What a fuzz server offers whatever its transport (:class:`FuzzServer` here, the stdio
    one): the plan its dialogue follows, and the end of both its dialogue and its listener."""

    dialogue: Dialogue
    listener: Listener

    @property
    def plan(self) -> Plan:
        return self.dialogue.plan

    @property
    def revision(self) -> str:
        return self.dialogue.revision

    @property
    def timeout(self) -> float:
        """Seconds the client gets to answer our requests of a step."""
        return self.dialogue.timeout

    def close(self) -> None:
        self.dialogue.stop()
        self.listener.close()


class FuzzServer(Served):
    """A Streamable HTTP endpoint on 127.0.0.1 that follows a :data:`Plan` (thread per connection)."""

    def __init__(self, plan: Plan, revision: str, timeout: float) -> None:
        self.dialogue = Dialogue(plan, revision, timeout)
        self.log = self.dialogue.log
        self.listener = Listener(self._connection)
        self.url = f"http://127.0.0.1:{self.listener.port}/mcp"

    # -- connections

    def _connection(self, sock: socket.socket) -> None:
        self.listener.spawn(self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        exchange = _Exchange(conn, sock)
        sock.settimeout(0.2)
        try:
            while not self.listener.stopped.is_set():
                request = self._read_request(conn, sock)
                if request is None:
                    return
                req, body = request
                self._handle(exchange, req, body)
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (OSError, h11.ProtocolError):
            return
        finally:
            sock.close()

    def _read_request(self, conn: h11.Connection, sock: socket.socket) -> tuple[h11.Request, bytes] | None:
        req: h11.Request | None = None
        body = bytearray()
        while not self.listener.stopped.is_set():
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    continue
                conn.receive_data(data)
                if not data:
                    return None
            elif isinstance(event, h11.Request):
                req = event
            elif isinstance(event, h11.Data):
                body += event.data
                if len(body) > MAX_BODY:
                    return None
            elif isinstance(event, h11.EndOfMessage):
                return (req, bytes(body)) if req is not None else None
            else:
                return None
        return None

    # -- requests

    def _handle(self, exchange: _Exchange, req: h11.Request, body: bytes) -> None:
        method = req.method.decode("latin-1")
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in req.headers]
        log = self.log
        with self.dialogue.cond:
            index = len(log.posts)
            log.posts.append({"method": method, "headers": headers, "after_init": log.session_id is not None})
            log.events.append(
                {"t": log.now(), "dir": "http", "method": method, "headers": headers, "index": index}
            )
            if body:
                log.log("recv", body, http=index)
        if method == "DELETE":
            exchange.reply(200)
        elif method != "POST":
            exchange.reply(405, extra=[("Allow", "POST, DELETE")])
        else:
            self._post(exchange, body, index)

    def _post(self, exchange: _Exchange, body: bytes, index: int) -> None:
        try:
            msg = loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            self.dialogue.unparsed(exchange, body)
            return
        self.dialogue.record(msg, index)
        if self.dialogue.stateless:
            self.dialogue.stateless_message(exchange, msg)
        elif isinstance(msg, list):
            self._batch(exchange, msg, index)
        elif not isinstance(msg, dict) or not isinstance(msg.get("method"), str) or "id" not in msg:
            exchange.reply(202)  # responses, notifications
        else:
            self.dialogue.request(exchange, msg)

    def _batch(self, exchange: _Exchange, batch: list[Any], index: int) -> None:
        """A JSON-RPC batch: in 2025-03-26 every request of it is answered on one response stream
        (202 when it holds none); elsewhere, empty, or holding ``initialize`` it is refused with
        400 and -32600 ("The initialize request MUST NOT be part of a JSON-RPC batch")."""
        requests, refused = self.dialogue.batch_requests(batch)
        if refused:
            ours = self.dialogue.answers_our_batch(batch)  # (answering our batch with one: no breach)
            with self.dialogue.cond:
                self.log.posts[index]["refused_batch"] = bool(batch) and not ours
            exchange.reply(400, error_body(None, orc.INVALID_REQUEST, "batch not accepted here"))
        elif not requests:
            exchange.reply(202)
        else:
            self.dialogue.answer(exchange, requests)
