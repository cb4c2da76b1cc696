"""The fuzzing server of the client campaigns, over Streamable HTTP: it follows a
:data:`~._plans.Plan` and logs everything it saw and sent (:class:`ServerLog`).

:class:`FuzzServer` listens on 127.0.0.1 (port 0), a thread per connection, plain HTTP/1.1
(h11).  It answers ``initialize`` (or, in 2026-07-28, ``server/discover``, and refuses a
request whose ``_meta`` does not name the revision and the client's capabilities), serves a
2025-03-26 batch like single messages and refuses one elsewhere, and answers every other
request on an SSE stream: the plan's step messages first (waiting, bounded, for the client's
answers to our requests among them), then the answer the plan says.  The stdio variant is
:class:`~._stdio_fuzz_server.StdioFuzzServer`.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import h11

from ..types import _versions
from . import oracles as orc
from ._connection import log_event
from ._plans import Plan, default_result, initialize_result
from .driver import loads
from .strategies import CLIENT_META_KEYS, advertised, gate

__all__ = ["FuzzServer", "ServerLog"]

MAX_BODY = 8 * 1024 * 1024


@dataclass
class ServerLog:
    """Everything the fuzzing server saw and sent, for the oracles and the transcript."""

    started: float = field(default_factory=time.monotonic)
    events: list[dict[str, Any]] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(
        default_factory=list
    )  # every HTTP request: method, headers, after_init
    client_messages: list[tuple[Any, bool]] = field(default_factory=list)  # (message, after initialize)
    unparsed: list[bytes] = field(default_factory=list)
    sent: dict[str, dict[str, Any]] = field(
        default_factory=dict
    )  # our request id key -> {method, note, message}
    notifications_sent: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, list[dict[str, Any]]] = field(
        default_factory=dict
    )  # id key -> responses from the client
    negotiated: str | None = None
    session_id: str | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)  # declared in initialize

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def log(self, direction: str, data: bytes, **extra: Any) -> None:
        log_event(self.events, self.now(), direction, data, **extra)


class FuzzServer:
    """A Streamable HTTP endpoint on 127.0.0.1 that follows a :data:`Plan` (thread per connection)."""

    def __init__(self, plan: Plan, revision: str, timeout: float) -> None:
        self.plan = plan
        self.revision = revision
        self.timeout = timeout
        self.log = ServerLog()
        self.cond = threading.Condition()
        self.stopped = threading.Event()
        self.stateless = _versions.is_stateless(revision)
        self.calls: dict[str, int] = {}
        self.request_no = 0
        self.counter = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/mcp"
        self.threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def _spawn(self, fn: Any, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self.threads.append(t)
        t.start()

    def close(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()
        for t in list(self.threads):
            t.join(timeout=2.0)
        self.listener.close()

    # -- connections

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                sock, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._connection(sock)

    def _connection(self, sock: socket.socket) -> None:
        self._spawn(self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=64 * 1024)
        sock.settimeout(0.2)
        try:
            while not self.stopped.is_set():
                request = self._read_request(conn, sock)
                if request is None:
                    return
                req, body = request
                self._handle(conn, sock, req, body)
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
        while not self.stopped.is_set():
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

    def _send(self, conn: h11.Connection, sock: socket.socket, *events: Any) -> None:
        sock.sendall(b"".join(conn.send(e) or b"" for e in events))

    def _reply(
        self,
        conn: h11.Connection,
        sock: socket.socket,
        status: int,
        body: bytes = b"",
        content_type: str = "application/json",
        extra: Sequence[tuple[str, str]] = (),
    ) -> None:
        headers = [("Content-Length", str(len(body))), *extra]
        if body:
            headers.append(("Content-Type", content_type))
        self._send(
            conn,
            sock,
            h11.Response(status_code=status, headers=headers),
            h11.Data(data=body),
            h11.EndOfMessage(),
        )

    # -- requests

    def _handle(self, conn: h11.Connection, sock: socket.socket, req: h11.Request, body: bytes) -> None:
        method = req.method.decode("latin-1")
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in req.headers]
        with self.cond:
            index = len(self.log.posts)
            self.log.posts.append(
                {"method": method, "headers": headers, "after_init": self.log.session_id is not None}
            )
            self.log.events.append(
                {"t": self.log.now(), "dir": "http", "method": method, "headers": headers, "index": index}
            )
            if body:
                self.log.log("recv", body, http=index)
        if method == "DELETE":
            self._reply(conn, sock, 200)
        elif method != "POST":
            self._reply(conn, sock, 405, extra=[("Allow", "POST, DELETE")])
        else:
            self._post(conn, sock, body, index)

    def _post(self, conn: h11.Connection, sock: socket.socket, body: bytes, index: int) -> None:
        try:
            msg = loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            with self.cond:
                self.log.unparsed.append(body)
            self._reply(
                conn,
                sock,
                400,
                error_body(None, -32700, "parse error"),
            )
            return
        self._record(msg, index)
        if self.stateless:
            self._stateless_post(conn, sock, msg)
            return
        if isinstance(msg, list):
            self._batch(conn, sock, msg, index)
            return
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str) or "id" not in msg:
            self._reply(conn, sock, 202)  # responses, notifications
            return
        if msg["method"] == "initialize":
            self._initialize(conn, sock, msg)
        elif self.log.session_id is None:
            # a stateless client's server/discover probe, or anything before initialize
            self._reply(
                conn,
                sock,
                200,
                error_body(msg["id"], -32601, f"{msg['method']} is not a method of {self.revision}"),
            )
        else:
            self._answer_stream(conn, sock, [msg])

    def _record(self, msg: Any, index: int | None) -> None:
        """Log a client message (a batch's members one by one); wake whoever waits for an answer."""
        with self.cond:
            after = self.log.session_id is not None or self.stateless  # (2026-07-28: no handshake)
            if index is not None:
                self.log.posts[index]["message"] = msg
            for m in msg if isinstance(msg, list) else [msg]:
                self.log.client_messages.append((m, after))
                if isinstance(m, dict) and "method" not in m and orc._valid_id(m.get("id")):
                    self.log.answers.setdefault(orc.idkey(m["id"]), []).append(m)
            self.cond.notify_all()

    def _stateless_post(self, conn: h11.Connection, sock: socket.socket, msg: Any) -> None:
        """2026-07-28: no session; each request names the revision and the client's capabilities
        in its ``_meta`` ("A request missing any required field is malformed; the server MUST
        reject it with JSON-RPC error code -32602 (Invalid params). On HTTP, the response status
        MUST be 400"); ``server/discover`` is answered with this server's revision."""
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str) or "id" not in msg:
            # notifications: 202; batches and responses (a 2026 client sends neither): 400
            if isinstance(msg, dict) and isinstance(msg.get("method"), str):
                self._reply(conn, sock, 202)
            else:
                self._reply(
                    conn,
                    sock,
                    400,
                    error_body(None, orc.INVALID_REQUEST, "not accepted"),
                )
            return
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        caps = meta.get(CLIENT_META_KEYS[1])
        if meta.get(CLIENT_META_KEYS[0]) != self.revision or not isinstance(caps, dict):
            self._reply(
                conn,
                sock,
                400,
                error_body(
                    msg["id"],
                    orc.INVALID_PARAMS,
                    f"_meta must name {self.revision} and the client's capabilities",
                ),
            )
            return
        with self.cond:
            self.log.negotiated = self.revision
            self.log.client_capabilities = caps
        if msg["method"] == "server/discover":
            result = {
                **default_result(self.revision, "server/discover"),
                "supportedVersions": [self.revision],
                "capabilities": initialize_result(self.revision)["capabilities"],
            }
            body = _dump({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            self.log.log("send", body)
            self._reply(conn, sock, 200, body)
        else:
            self._answer_stream(conn, sock, [msg])

    def _batch(self, conn: h11.Connection, sock: socket.socket, batch: list[Any], index: int) -> None:
        """A JSON-RPC batch: in 2025-03-26 every request of it is answered on one response stream
        (202 when it holds none); elsewhere, empty, or holding ``initialize`` it is refused with
        400 and -32600 ("The initialize request MUST NOT be part of a JSON-RPC batch")."""
        requests, refused = self._batch_requests(batch)
        if refused:
            with self.cond:
                self.log.posts[index]["refused_batch"] = bool(batch)
            self._reply(
                conn,
                sock,
                400,
                error_body(None, orc.INVALID_REQUEST, "batch not accepted here"),
            )
        elif not requests:
            self._reply(conn, sock, 202)
        else:
            self._answer_stream(conn, sock, requests)

    def _batch_requests(self, batch: list[Any]) -> tuple[list[dict[str, Any]], bool]:
        """The requests of a batch, and whether the batch is refused (empty, in a revision
        without batches, before the session, or holding ``initialize``)."""
        requests = [
            m for m in batch if isinstance(m, dict) and isinstance(m.get("method"), str) and "id" in m
        ]
        refused = (
            not batch
            or not _versions.supports_batching(self.revision)
            or self.log.session_id is None
            or any(m["method"] == "initialize" for m in requests)
        )
        return requests, refused

    def _initialize(self, conn: h11.Connection, sock: socket.socket, msg: dict[str, Any]) -> None:
        params = msg.get("params")
        declared = params.get("capabilities") if isinstance(params, dict) else None
        with self.cond:
            self.log.session_id = self.log.session_id or uuid.uuid4().hex
            self.log.negotiated = self.revision
            self.log.client_capabilities = declared if isinstance(declared, dict) else {}
        body = _dump({"jsonrpc": "2.0", "id": msg["id"], "result": initialize_result(self.revision)})
        self.log.log("send", body)
        self._reply(conn, sock, 200, body, extra=[("Mcp-Session-Id", self.log.session_id)])

    def _answer_stream(
        self, conn: h11.Connection, sock: socket.socket, requests: list[dict[str, Any]]
    ) -> None:
        """Answer client requests (one, or a batch's) on an SSE stream: each one's step messages
        first, then the answers in order."""
        self._send(
            conn,
            sock,
            h11.Response(
                status_code=200,
                headers=[("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")],
            ),
        )
        for data in self._steps_then_answers(conn, sock, requests):
            self._event(conn, sock, data)
        self._send(conn, sock, h11.EndOfMessage())

    def _steps_then_answers(self, conn: Any, sock: Any, requests: list[dict[str, Any]]) -> list[bytes]:
        """Send the plan's step messages for ``requests`` and wait (bounded) for the client's
        answers to our requests among them; returns the answers to ``requests`` the plan says."""
        claimed = [self._claim(msg) for msg in requests]
        injections = [inj for step_no, _ in claimed for inj in self._step(step_no)]
        waiting = []
        for inj in injections:
            out = self._number(inj)
            if "id" in out:
                waiting.append(orc.idkey(out["id"]))
            self._event(conn, sock, _dump(out))
        self._await_answers(waiting)
        answers: list[bytes] = []
        for msg, (_, call_no) in zip(requests, claimed, strict=True):
            planned = (self.plan.get("answers") or {}).get(msg["method"]) or []
            spec = planned[call_no] if call_no < len(planned) else {"kind": "default"}
            answers += self._answer(msg, spec)
        return answers

    def _claim(self, msg: dict[str, Any]) -> tuple[int, int]:
        """The step number of a client request and which call of its method it is."""
        with self.cond:
            step_no = self.request_no
            self.request_no += 1
            call_no = self.calls.get(msg["method"], 0)
            self.calls[msg["method"]] = call_no + 1
        return step_no, call_no

    def _step(self, step_no: int) -> list[dict[str, Any]]:
        """The messages of step ``step_no``, ending with a ping probe when it has any (the first
        always has one).  A capability probe for a capability the client declared is left out:
        it would be an ordinary request, not a violation."""
        steps = self.plan.get("steps") or []
        injections = [
            inj for inj in (steps[step_no] if step_no < len(steps) else []) if not self._declared(inj)
        ]
        if (injections or step_no == 0) and not self.stateless:  # (2026-07-28 has no ping)
            injections.append(
                {"note": "probe", "message": {"jsonrpc": "2.0", "id": "probe", "method": "ping"}}
            )
        return injections

    def _declared(self, inj: dict[str, Any]) -> bool:
        if not inj["note"].startswith("capability:"):
            return False
        path = gate(self.revision, inj["message"].get("method", ""))
        declared = path is None or advertised(self.log.client_capabilities, path)
        if declared:
            with self.cond:
                self.log.events.append(
                    {
                        "t": self.log.now(),
                        "dir": "skip",
                        "note": inj["note"],
                        "reason": "the client declared the capability",
                    }
                )
        return declared

    def _number(self, inj: dict[str, Any]) -> dict[str, Any]:
        """A fresh id for an injected request (ints stay ints), recorded for the oracles."""
        out = dict(inj["message"])
        with self.cond:
            if "id" in out:
                self.counter += 1
                out["id"] = 10_000 + self.counter if isinstance(out["id"], int) else f"fz-{self.counter}"
                self.log.sent[orc.idkey(out["id"])] = {
                    "method": out.get("method"),
                    "note": inj["note"],
                    "message": out,
                }
            else:
                self.log.notifications_sent.append(out)
        return out

    def _await_answers(self, keys: list[str]) -> None:
        deadline = time.monotonic() + self.timeout
        with self.cond:
            while not self.stopped.is_set() and not all(k in self.log.answers for k in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(min(left, 0.1))

    def _answer(self, msg: dict[str, Any], spec: dict[str, Any]) -> list[bytes]:
        rid, kind = msg["id"], spec["kind"]
        valid = {"jsonrpc": "2.0", "id": rid, "result": default_result(self.revision, msg["method"])}
        if kind in ("result", "mutated"):
            return [_dump({"jsonrpc": "2.0", "id": rid, "result": spec["result"]})]
        if kind == "error":
            return [_dump({"jsonrpc": "2.0", "id": rid, "error": spec["error"]})]
        if kind == "duplicate":
            return [_dump(valid), _dump(valid)]
        if kind == "unknown-id":
            return [_dump({**valid, "id": f"fz-unknown-{rid}"}), _dump(valid)]
        if kind == "junk-event":
            return [spec["text"].encode("utf-8", "surrogatepass"), _dump(valid)]
        return [_dump(valid)]

    def _event(self, conn: h11.Connection, sock: socket.socket, data: bytes) -> None:
        self.log.log("send", data)
        lines = data.replace(b"\r\n", b"\n").split(b"\n")
        self._send(
            conn,
            sock,
            h11.Data(data=b"event: message\n" + b"".join(b"data: " + ln + b"\n" for ln in lines) + b"\n"),
        )


def error_body(rid: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response, encoded."""
    return _dump({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
