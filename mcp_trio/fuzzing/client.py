"""Fuzzing MCP clients: a fuzzing Streamable HTTP (or stdio) server and the client-side oracles.

``mcp-trio fuzz --client "CMD ARGS"`` starts :class:`FuzzServer` on
127.0.0.1 (port 0) for every example and launches ``CMD ARGS URL``; with
``--client-transport stdio``, :class:`StdioFuzzServer` and ``CMD ARGS RELAY...``
(the client starts the relay as its stdio server, see ``_relay.py``).  The
client does whatever it does (connect, list, call ...); the server follows a
:data:`Plan` drawn by hypothesis:

* ``answers``: per method, how its first, second ... call is answered: a
  result generated from the revision's result types, a mutated result, a
  JSON-RPC error with any code, the answer twice, a response to an unknown id
  or a non-JSON SSE event before the answer.  Calls the plan does not cover get
  the smallest valid result (:func:`minimal`).
* ``steps``: server-to-client messages sent on the response stream of the
  client's n-th request (after ``initialize``), before its answer: requests
  (``ping``, ``sampling/createMessage``, ``elicitation/create``,
  ``roots/list`` ...) and notifications with valid or mutated params, and
  requests of methods no client has.  Every step with messages ends with a
  ``ping`` (and the first step always has one): the client must answer it.

The plan is plain JSON, so a transcript holds it and :func:`replay_client`
runs it again against the same command.  Client-side oracles
(:func:`check_client`) look at everything the server saw: answers to our
requests (exactly one each, same id, the spec's error codes, results that
decode), no answers to notifications, request ids never reused, every message
valid for the negotiated revision, the Streamable HTTP headers a client MUST
send, and a process that exits by itself with status 0 within the time allowed.

The ``capabilities`` campaign (:func:`capability_plans`) sends, instead, requests that
need a client capability (``sampling/createMessage``, ``elicitation/create``,
``roots/list``, ``tasks/*``), each only when the client's ``initialize`` did not declare
it; the answer should be an error, -32601 (:func:`~.oracles.judge_capability_answer`).

A JSON-RPC batch of the client is served like single messages in 2025-03-26 (each request
answered on one response stream, 202 when it holds none) and refused with 400 (-32600)
elsewhere; a batch in a revision without batches is a ``valid-message`` violation.

In 2026-07-28 there is no session: the server answers ``server/discover``, refuses a
request whose ``_meta`` does not carry the revision and the client's capabilities, and
judges the request headers against the body (:func:`_check_stateless_headers`); its steps
are notifications only.  Server-to-client requests travel inside ``InputRequiredResult``
there, which the server does not send yet, so the client ``capabilities`` campaign skips
that revision (see :func:`mcp_trio.fuzzing.runner._skip_reason`).
"""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h11
import msgspec
import msgspec.inspect as mi
from hypothesis import strategies as st

from ..types import _versions
from . import oracles as orc
from .driver import CommandTarget, encode_bytes
from .strategies import (
    CLIENT_META_KEYS,
    EDGE_STRINGS,
    _mutate_params,
    advertised,
    client_methods,
    from_type,
    gate,
    json_values,
    texts,
    unadvertised_methods,
    valid_message,
)

__all__ = ["ClientRun", "ClientTarget", "FuzzServer", "StdioFuzzServer", "check_client", "minimal", "plans", "run_plan"]

Plan = dict[str, Any]
MAX_BODY = 8 * 1024 * 1024
ERROR_CODES = (-32700, -32600, -32601, -32602, -32603, -32000, -32002, -1, 0, 1, 2**31)
ANSWER_KINDS = ("result", "mutated", "error", "duplicate", "unknown-id", "junk-event")


class ClientTarget(CommandTarget):
    """A client launched against a fuzzing server, once per example.

    ``transport="http"``: launched as ``CMD ARGS URL`` (the fuzzing server's Streamable HTTP
    endpoint).  ``transport="stdio"``: launched as ``CMD ARGS SERVER...``, where ``SERVER...`` is
    the command of a small relay (``_relay.py``) the client starts as its stdio server and that
    connects back to the fuzzing server.  An argument that is exactly ``{server}`` is replaced
    by the URL, or by the relay's command as one shell-quoted string, instead of appending.
    """

    kind = "client"
    TRANSPORTS = ("http", "stdio")

    def __init__(self, command: str | Sequence[str], *, transport: str = "http", cwd: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        if transport not in self.TRANSPORTS:
            raise ValueError(f"unknown client transport {transport!r} (one of {', '.join(self.TRANSPORTS)})")
        super().__init__(command, cwd=cwd, env=env)
        self.transport = transport

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), **({"transport": self.transport} if self.transport != "http" else {})}

    def launch_argv(self, server: Sequence[str]) -> list[str]:
        """The client's command line, given the server's URL (``[url]``) or relay command."""
        if "{server}" in self.argv:
            joined = server[0] if len(server) == 1 else shlex.join(server)
            return [joined if arg == "{server}" else arg for arg in self.argv]
        return [*self.argv, *server]

    @classmethod
    def from_description(cls, desc: dict[str, Any]) -> ClientTarget:
        return cls(desc["command"], transport=desc.get("transport", "http"), cwd=desc.get("cwd"))


# ------------------------------------------------------------------ values


def minimal(tp: Any) -> Any:
    """The smallest value that decodes as ``tp``: required fields only, empty containers.

    It is what the fuzzing server answers when the plan says nothing, so a client
    always gets a valid answer that does not depend on hypothesis."""
    return _minimal(mi.type_info(tp))


def _minimal(t: Any) -> Any:
    if isinstance(t, mi.Metadata):
        return _minimal(t.type)
    if isinstance(t, mi.StructType):
        out = {f.encode_name: _minimal(f.type) for f in t.fields if f.required}
        if t.tag_field is not None:
            out[t.tag_field] = t.tag
        return out
    if isinstance(t, mi.LiteralType):
        return t.values[0]
    if isinstance(t, mi.EnumType):
        return next(iter(t.cls)).value
    if isinstance(t, mi.UnionType):
        simple = [o for o in t.types if not isinstance(o, mi.NoneType)]
        return _minimal(simple[0] if simple else t.types[0])
    if isinstance(t, mi.StrType):
        return "x" * (t.min_length or 0)
    if isinstance(t, mi.IntType | mi.FloatType):
        return t.ge if t.ge is not None else (t.gt + 1 if t.gt is not None else 0)
    if isinstance(t, mi.BoolType):
        return False
    if isinstance(t, mi.ListType | mi.VarTupleType | mi.SetType | mi.FrozenSetType):
        return [_minimal(t.item_type) for _ in range(getattr(t, "min_length", None) or 0)]
    if isinstance(t, mi.DictType):
        return {}
    if isinstance(t, mi.TupleType):
        return [_minimal(x) for x in t.item_types]
    return None


def default_result(revision: str, method: str) -> Any:
    spec = _versions.methods_for(revision).get(method)
    return minimal(spec.results[0]) if spec is not None and spec.results else {}


def server_methods(revision: str, kind: str) -> list[str]:
    """Methods a server may send to a client in ``revision``."""
    return sorted(m for m, s in _versions.methods_for(revision).items()
                  if s.direction in ("server", "both") and s.kind == kind and not s.input_request)


def initialize_result(revision: str) -> dict[str, Any]:
    return {"protocolVersion": revision,
            "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True, "listChanged": True},
                             "prompts": {"listChanged": True}, "logging": {}, "completions": {}},
            "serverInfo": {"name": "mcp-trio-fuzz-server", "version": "1"}}


# -------------------------------------------------------------- strategies


def _result_strategy(revision: str, method: str) -> st.SearchStrategy[Any]:
    spec = _versions.methods_for(revision)[method]
    return st.one_of([from_type(tp) for tp in spec.results]) if spec.results else st.just({})


@st.composite
def _answer(draw: Any, revision: str, method: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(ANSWER_KINDS))
    if kind == "result":
        return {"kind": "result", "result": draw(_result_strategy(revision, method))}
    if kind == "mutated":
        result = draw(_result_strategy(revision, method))
        mutated, note = _mutate_params(draw, {"params": result})
        return {"kind": "mutated", "result": mutated["params"], "note": note}
    if kind == "error":
        error: dict[str, Any] = {"code": draw(st.sampled_from(ERROR_CODES)), "message": draw(texts)}
        if draw(st.booleans()):
            error["data"] = draw(json_values)
        return {"kind": "error", "error": error}
    if kind == "junk-event":
        return {"kind": kind, "text": draw(st.sampled_from(["{", "not json", "[]", "null", '{"jsonrpc":"2.0"}',
                                                            *EDGE_STRINGS[:3]]))}
    return {"kind": kind}


@st.composite
def _injection(draw: Any, revision: str) -> dict[str, Any]:
    requests, notes = server_methods(revision, "request"), server_methods(revision, "notification")
    # (2026-07-28 has no server-to-client JSON-RPC requests: notifications only)
    kind = draw(st.sampled_from(["request", "notification", "mutated", "unknown-method"] if requests
                                else ["notification", "mutated"]))
    if kind == "unknown-method":
        method = draw(st.sampled_from(["nope", "tools/list", "fuzz/unknown", ""]))
        return {"note": "unknown_method", "message": {"jsonrpc": "2.0", "id": 1, "method": method}}
    method = draw(st.sampled_from(notes if kind == "notification" else requests if kind == "request"
                                  else requests + notes))
    msg = dict(draw(valid_message(revision, method, id_=1)))
    if kind == "mutated":
        msg, note = _mutate_params(draw, msg)
        return {"note": f"params:{note}", "message": msg}
    return {"note": "valid", "message": msg}


def plans(revision: str) -> st.SearchStrategy[Plan]:
    """What the fuzzing server does with one client (see the module docstring)."""
    methods = [m for m in client_methods(revision, "request")  # (these two are always answered validly)
               if m not in ("initialize", "server/discover")]
    per_method = st.sampled_from(methods).flatmap(
        lambda m: st.tuples(st.just(m), st.lists(_answer(revision, m), min_size=1, max_size=2)))
    answers = st.lists(per_method, max_size=4, unique_by=lambda mt: mt[0]).map(dict)
    steps = st.lists(st.lists(_injection(revision), max_size=3), max_size=4)
    return st.fixed_dictionaries({"answers": answers, "steps": steps})


def capability_plans(revision: str) -> st.SearchStrategy[Plan]:
    """Plans of the client ``capabilities`` campaign: steps of server-to-client requests that
    need a client capability (sampling, elicitation, roots, tasks), valid params.  The server
    sends only those the client did not declare in its initialize; calls are answered validly."""
    methods = unadvertised_methods(revision, {}, initialize_result(revision)["capabilities"], direction="server")
    probe = st.sampled_from(methods).flatmap(
        lambda m: valid_message(revision, m, id_=1).map(lambda msg: {"note": f"capability:{m}", "message": msg}))
    steps = st.lists(st.lists(probe, min_size=1, max_size=3), min_size=1, max_size=3)
    return st.fixed_dictionaries({"answers": st.just({}), "steps": steps})


# ------------------------------------------------------------------ server


@dataclass
class ServerLog:
    """Everything the fuzzing server saw and sent, for the oracles and the transcript."""

    started: float = field(default_factory=time.monotonic)
    events: list[dict[str, Any]] = field(default_factory=list)
    posts: list[dict[str, Any]] = field(default_factory=list)  # every HTTP request: method, headers, after_init
    client_messages: list[tuple[Any, bool]] = field(default_factory=list)  # (message, after initialize)
    unparsed: list[bytes] = field(default_factory=list)
    sent: dict[str, dict[str, Any]] = field(default_factory=dict)  # our request id key -> {method, note, message}
    notifications_sent: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # id key -> responses from the client
    negotiated: str | None = None
    session_id: str | None = None
    client_capabilities: dict[str, Any] = field(default_factory=dict)  # declared in initialize

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def log(self, direction: str, data: bytes, **extra: Any) -> None:
        self.events.append({"t": self.now(), "dir": direction, **encode_bytes(data[:65536]), **extra})


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

    def _reply(self, conn: h11.Connection, sock: socket.socket, status: int, body: bytes = b"",
               content_type: str = "application/json", extra: Sequence[tuple[str, str]] = ()) -> None:
        headers = [("Content-Length", str(len(body))), *extra]
        if body:
            headers.append(("Content-Type", content_type))
        self._send(conn, sock, h11.Response(status_code=status, headers=headers), h11.Data(data=body),
                   h11.EndOfMessage())

    # -- requests

    def _handle(self, conn: h11.Connection, sock: socket.socket, req: h11.Request, body: bytes) -> None:
        method = req.method.decode("latin-1")
        headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in req.headers]
        with self.cond:
            index = len(self.log.posts)
            self.log.posts.append({"method": method, "headers": headers, "after_init": self.log.session_id is not None})
            self.log.events.append({"t": self.log.now(), "dir": "http", "method": method, "headers": headers,
                                    "index": index})
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
            msg = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            with self.cond:
                self.log.unparsed.append(body)
            self._reply(conn, sock, 400, _dump({"jsonrpc": "2.0", "id": None,
                                                "error": {"code": -32700, "message": "parse error"}}))
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
            self._reply(conn, sock, 200, _dump({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": f"{msg['method']} is not a method of {self.revision}"}}))
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
                self._reply(conn, sock, 400, _dump({"jsonrpc": "2.0", "id": None, "error": {
                    "code": orc.INVALID_REQUEST, "message": "not accepted"}}))
            return
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        caps = meta.get(CLIENT_META_KEYS[1])
        if meta.get(CLIENT_META_KEYS[0]) != self.revision or not isinstance(caps, dict):
            self._reply(conn, sock, 400, _dump({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": orc.INVALID_PARAMS, "message": f"_meta must name {self.revision} and the client's "
                                                       "capabilities"}}))
            return
        with self.cond:
            self.log.negotiated = self.revision
            self.log.client_capabilities = caps
        if msg["method"] == "server/discover":
            result = {**default_result(self.revision, "server/discover"), "supportedVersions": [self.revision],
                      "capabilities": initialize_result(self.revision)["capabilities"]}
            body = _dump({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            self.log.log("send", body)
            self._reply(conn, sock, 200, body)
        else:
            self._answer_stream(conn, sock, [msg])

    def _batch(self, conn: h11.Connection, sock: socket.socket, batch: list[Any], index: int) -> None:
        """A JSON-RPC batch: in 2025-03-26 every request of it is answered on one response stream
        (202 when it holds none); elsewhere, empty, or holding ``initialize`` it is refused with
        400 and -32600 ("The initialize request MUST NOT be part of a JSON-RPC batch")."""
        requests = [m for m in batch if isinstance(m, dict) and isinstance(m.get("method"), str) and "id" in m]
        refused = (not batch or not _versions.supports_batching(self.revision) or self.log.session_id is None
                   or any(m["method"] == "initialize" for m in requests))
        if refused:
            with self.cond:
                self.log.posts[index]["refused_batch"] = bool(batch)
            self._reply(conn, sock, 400, _dump({"jsonrpc": "2.0", "id": None, "error": {
                "code": orc.INVALID_REQUEST, "message": "batch not accepted here"}}))
        elif not requests:
            self._reply(conn, sock, 202)
        else:
            self._answer_stream(conn, sock, requests)

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

    def _answer_stream(self, conn: h11.Connection, sock: socket.socket, requests: list[dict[str, Any]]) -> None:
        """Answer client requests (one, or a batch's) on an SSE stream: each one's step messages
        first, then the answers in order."""
        self._send(conn, sock, h11.Response(status_code=200, headers=[("Content-Type", "text/event-stream"),
                                                                      ("Cache-Control", "no-cache")]))
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
        injections = [inj for inj in (steps[step_no] if step_no < len(steps) else []) if not self._declared(inj)]
        if (injections or step_no == 0) and not self.stateless:  # (2026-07-28 has no ping)
            injections.append({"note": "probe", "message": {"jsonrpc": "2.0", "id": "probe", "method": "ping"}})
        return injections

    def _declared(self, inj: dict[str, Any]) -> bool:
        if not inj["note"].startswith("capability:"):
            return False
        path = gate(self.revision, inj["message"].get("method", ""))
        declared = path is None or advertised(self.log.client_capabilities, path)
        if declared:
            with self.cond:
                self.log.events.append({"t": self.log.now(), "dir": "skip", "note": inj["note"],
                                        "reason": "the client declared the capability"})
        return declared

    def _number(self, inj: dict[str, Any]) -> dict[str, Any]:
        """A fresh id for an injected request (ints stay ints), recorded for the oracles."""
        out = dict(inj["message"])
        with self.cond:
            if "id" in out:
                self.counter += 1
                out["id"] = 10_000 + self.counter if isinstance(out["id"], int) else f"fz-{self.counter}"
                self.log.sent[orc.idkey(out["id"])] = {"method": out.get("method"), "note": inj["note"],
                                                       "message": out}
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
        self._send(conn, sock, h11.Data(data=b"event: message\n" + b"".join(b"data: " + ln + b"\n" for ln in lines)
                                        + b"\n"))


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

    def _serve(self, fn: Any, *args: Any) -> None:
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
            msg = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            with self.cond:
                self.log.unparsed.append(data)
            self._write(_dump({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}}))
            return
        self._record(msg, None)
        is_request = isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg
        if self.stateless:
            if isinstance(msg, list):
                with self.cond:
                    self.log.events.append({"t": self.log.now(), "dir": "refused-batch"})
            if is_request:
                self._serve(self._stateless_post, None, None, msg)
            elif not (isinstance(msg, dict) and isinstance(msg.get("method"), str)):
                self._stateless_post(None, None, msg)  # a batch or a response: refused at once
        elif isinstance(msg, list):
            self._serve(self._batch_lines, msg)
        elif not is_request:
            return  # responses (recorded above) and notifications
        elif msg["method"] == "initialize":
            self._initialize(None, None, msg)  # in this thread: the session exists before the next line
        elif self.log.session_id is None:
            self._write(_dump({"jsonrpc": "2.0", "id": msg["id"], "error": {
                "code": -32601, "message": f"{msg['method']} is not a method of {self.revision}"}}))
        else:
            self._serve(self._answer_stream, None, None, [msg])

    def _batch_lines(self, batch: list[Any]) -> None:
        requests = [m for m in batch if isinstance(m, dict) and isinstance(m.get("method"), str) and "id" in m]
        if (not batch or not _versions.supports_batching(self.revision) or self.log.session_id is None
                or any(m["method"] == "initialize" for m in requests)):
            with self.cond:
                self.log.events.append({"t": self.log.now(), "dir": "refused-batch"})
            self._write(_dump({"jsonrpc": "2.0", "id": None, "error": {
                "code": orc.INVALID_REQUEST, "message": "batch not accepted here"}}))
        elif requests:
            answers = self._steps_then_answers(None, None, requests)
            parsed = []
            for data in answers:
                try:
                    json.loads(data)
                    parsed.append(data)
                except ValueError:  # a junk answer: a line of its own, before the array
                    self._event(None, None, data)
            self._event(None, None, b"[" + b",".join(parsed) + b"]")

    def _answer_stream(self, conn: Any, sock: Any, requests: list[dict[str, Any]]) -> None:
        for data in self._steps_then_answers(conn, sock, requests):
            self._event(conn, sock, data)

    def _send(self, conn: Any, sock: Any, *events: Any) -> None:
        pass  # (HTTP framing)

    def _reply(self, conn: Any, sock: Any, status: int, body: bytes = b"", extra: Any = None) -> None:
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


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


# ------------------------------------------------------------------ a run


@dataclass
class ClientRun:
    log: ServerLog
    exit_code: int | None
    hung: bool
    output: str
    revision: str = ""
    transport: str = "http"


def run_plan(target: ClientTarget, revision: str, plan: Plan, *, timeout: float, run_time: float) -> ClientRun:
    """Serve ``plan`` to one launch of the client; stop it if it is still running after ``run_time``."""
    stdio = target.transport == "stdio"
    server = StdioFuzzServer(plan, revision, timeout) if stdio else FuzzServer(plan, revision, timeout)
    argv = target.launch_argv(server.relay_argv if isinstance(server, StdioFuzzServer) else [server.url])
    hung = False
    with tempfile.TemporaryFile() as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, cwd=target.cwd, env=target.env,
                                    start_new_session=True)
            try:
                proc.wait(timeout=run_time)
            except subprocess.TimeoutExpired:
                hung = True
                _stop(proc)
        finally:
            server.close()
        out.seek(0)
        output = out.read()[-16384:].decode("utf-8", "replace")
    return ClientRun(server.log, proc.returncode if not hung else None, hung, output, revision, target.transport)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    for action in (proc.terminate, proc.kill):
        action()
        try:
            proc.wait(timeout=2.0)
            return
        except subprocess.TimeoutExpired:
            continue


# ----------------------------------------------------------------- oracles


def check_client(run: ClientRun, run_time: float) -> list[orc.Violation]:
    """Every client-side violation of one run."""
    log = run.log
    out: list[orc.Violation] = []
    if run.hung:
        out.append(orc.Violation("alive", f"the client was still running after {run_time} s", "hang"))
    elif run.exit_code != 0:
        out.append(orc.Violation("alive", f"the client exited with status {run.exit_code}", "exit-status"))
    if log.negotiated is None:
        out.append(orc.Violation("alive", "the client never sent initialize", "no-initialize")
                   if log.session_id is None and not _versions.is_stateless(run.revision) else
                   orc.Violation("alive", f"the client never sent a request naming {run.revision} in its _meta",
                                 "no-request"))
        return out
    out += _check_answers(log, alive=not run.hung and run.exit_code == 0)
    out += _check_messages(log)
    out += _check_headers(log) if run.transport == "http" else _check_stdio(log)
    return out


def _check_answers(log: ServerLog, alive: bool) -> list[orc.Violation]:
    out = []
    revision = log.negotiated or ""
    for key, sent in log.sent.items():
        got = log.answers.get(key, [])
        if not got:
            if sent["note"] == "probe" or alive:
                oracle, detail = ("alive", "no-ping-answer") if sent["note"] == "probe" else ("one-response",
                                                                                               "missing")
                out.append(orc.Violation(oracle, f"no answer to our {sent['method']!r} request (id {key})", detail))
            continue
        if len(got) > 1:
            out.append(orc.Violation("one-response", f"{len(got)} answers to our request id {key}", "extra"))
        msg = got[0]
        problem = orc._envelope_problem(msg)
        if problem:
            out.append(orc.Violation("valid-response", f"{problem}: {orc._excerpt(msg)}", "envelope"))
            continue
        if sent["note"].startswith("capability:"):
            note = orc.judge_capability_answer(sent["method"], msg)
            out += [note] if note is not None else []
            continue
        codes = _expected_codes(revision, sent)
        if codes is not None and ("error" not in msg or msg["error"]["code"] not in codes):
            out.append(orc.Violation("error-codes", f"expected error {sorted(codes)} to our {sent['method']!r} "
                                     f"({sent['note']}), got {orc._excerpt(msg)}", f"want-{min(codes)}"))
        elif codes is None and "result" in msg:
            problem = orc._result_problem(revision, sent["method"], msg["result"])
            if problem:
                out.append(orc.Violation("valid-response", f"the {sent['method']} result does not decode as "
                                         f"{revision}: {problem[:300]}", f"result:{sent['method']}"))
    for key, got in log.answers.items():
        if key not in log.sent:
            out.append(orc.Violation("no-response-to-notification",
                                     f"a response to an id we never sent: {orc._excerpt(got[0])}", "unknown-id"))
    return out


def _expected_codes(revision: str, sent: dict[str, Any]) -> set[int] | None:
    """The error codes an answer must carry (None: a result or any error will do)."""
    spec = _versions.methods_for(revision).get(sent["method"])
    if sent["note"] == "unknown_method" or spec is None or spec.direction == "client":
        return {orc.METHOD_NOT_FOUND}
    if sent["note"].startswith("params:"):
        try:
            msgspec.json.decode(_dump(sent["message"]), type=spec.message)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return orc.rejected_params_codes(spec, sent["message"].get("params"))
    return None


def _check_messages(log: ServerLog) -> list[orc.Violation]:
    from .strategies import accepts

    out = []
    seen: set[str] = set()
    revision = log.negotiated or ""
    for msg, after_init in log.client_messages:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            out.append(orc.Violation("valid-message", f"not a JSON-RPC 2.0 message: {orc._excerpt(msg)}",
                                     "envelope"))
            continue
        if "method" not in msg:
            continue  # responses: judged with the requests they answer
        if "id" in msg:
            if not orc._valid_id(msg["id"]):
                out.append(orc.Violation("client-ids", f"a request id that is not a string or an integer: "
                                         f"{orc._excerpt(msg)}", "bad-id"))
            elif after_init and orc.idkey(msg["id"]) in seen and not _versions.is_stateless(revision):
                # (the rule is per session; 2026-07-28 has none)
                out.append(orc.Violation("client-ids", f"request id {msg['id']!r} used twice in the session",
                                         "reused"))
            if after_init:
                seen.add(orc.idkey(msg["id"]))
        if after_init and not accepts(revision, msg):
            out.append(orc.Violation("valid-message", f"not a valid {revision} client message: "
                                     f"{orc._excerpt(msg)}", f"message:{msg.get('method')}"))
    return out


def _check_headers(log: ServerLog) -> list[orc.Violation]:
    if log.negotiated is not None and _versions.is_stateless(log.negotiated):
        return _check_stateless_headers(log)
    out: list[orc.Violation] = []
    if any(post.get("refused_batch") for post in log.posts if post["after_init"]) and not (
            log.negotiated and _versions.supports_batching(log.negotiated)):
        out.append(orc.Violation("valid-message", f"a JSON-RPC batch in {log.negotiated}, which has none "
                                 "(\"The body of the POST request MUST be a single JSON-RPC request, "
                                 "notification, or response\")", "batch"))
    needs_version = log.negotiated is not None and log.negotiated >= "2025-06-18"
    for post in log.posts:
        headers = dict(post["headers"])
        if post["method"] == "POST":
            accept = headers.get("accept", "")
            if "application/json" not in accept or "text/event-stream" not in accept:
                out.append(orc.Violation("client-http", f"a POST with Accept {accept!r}", "accept"))
        if not post["after_init"]:
            continue
        if headers.get("mcp-session-id") != log.session_id:
            out.append(orc.Violation("client-http", f"a {post['method']} after initialize with Mcp-Session-Id "
                                     f"{headers.get('mcp-session-id')!r}", "session-id"))
        if needs_version and headers.get("mcp-protocol-version") != log.negotiated:
            out.append(orc.Violation("client-http", f"a {post['method']} after initialize with "
                                     f"MCP-Protocol-Version {headers.get('mcp-protocol-version')!r}",
                                     "protocol-version"))
    return out


def _check_stdio(log: ServerLog) -> list[orc.Violation]:
    """What the HTTP checks judge from the POSTs, for a client on stdio: no JSON-RPC batch in a
    revision without batches, no response from a 2026-07-28 client (it has no server requests)."""
    revision = log.negotiated or ""
    out = []
    if any(e.get("dir") == "refused-batch" for e in log.events) and not _versions.supports_batching(revision):
        out.append(orc.Violation("valid-message", f"a JSON-RPC batch in {revision}, which has none", "batch"))
    if _versions.is_stateless(revision):
        for msg, _ in log.client_messages:
            if isinstance(msg, dict) and "method" not in msg:
                out.append(orc.Violation("valid-message", "a response from a 2026-07-28 client, which gets no "
                                         f"requests: {orc._excerpt(msg)}", "response"))
    return out


def _check_stateless_headers(log: ServerLog) -> list[orc.Violation]:
    """2026-07-28: every POST carries ``Accept`` and ``MCP-Protocol-Version``; every request the
    ``Mcp-Method`` (and ``Mcp-Name``) headers that mirror its body, and its version matches the
    ``_meta`` one (:func:`~mcp_trio.transports.http._headers.check_request_headers`); the body is
    a single request or notification, never a response or a batch."""
    from ..transports.http._headers import check_request_headers

    out: list[orc.Violation] = []
    version = log.negotiated or ""
    for post in log.posts:
        if post["method"] != "POST":
            continue
        headers = dict(post["headers"])
        accept = headers.get("accept", "")
        if "application/json" not in accept or "text/event-stream" not in accept:
            out.append(orc.Violation("client-http", f"a POST with Accept {accept!r}", "accept"))
        msg = post.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            kind = "a batch" if isinstance(msg, list) else "a response" if isinstance(msg, dict) else "no message"
            out.append(orc.Violation("valid-message", f"a POST body that is {kind} in {version} (\"The body of the "
                                     "HTTP POST MUST be a single JSON-RPC request or notification\")", "body"))
            continue
        if "id" not in msg:
            if headers.get("mcp-protocol-version") != version:
                out.append(orc.Violation("client-http", f"a {msg['method']} notification with MCP-Protocol-Version "
                                         f"{headers.get('mcp-protocol-version')!r}", "protocol-version"))
            continue
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        body_version = meta.get(CLIENT_META_KEYS[0])
        problem = check_request_headers(headers, msg["method"], params, body_version or version)
        if problem:
            out.append(orc.Violation("client-http", f"{msg['method']}: {problem}", "headers"))
        if body_version != version or not isinstance(meta.get(CLIENT_META_KEYS[1]), dict):
            out.append(orc.Violation("valid-message", f"a {msg['method']} request whose _meta does not name "
                                     f"{version} and the client's capabilities: {orc._excerpt(meta)}", "meta"))
    return out


def transcript_of(target: ClientTarget, revision: str, plan: Plan, run: ClientRun, violations: list[orc.Violation],
                  timeout: float, run_time: float, seed: int | None, fmt: str,
                  campaign: str = "client") -> dict[str, Any]:
    return {
        "format": fmt,
        "target": target.describe(),
        "revision": revision,
        "negotiated": run.log.negotiated,
        "campaign": campaign,
        **({"client_capabilities": run.log.client_capabilities} if campaign == "capabilities" else {}),
        "timeout": timeout,
        "run_time": run_time,
        **({"seed": seed} if seed is not None else {}),
        "plan": plan,
        "case": [],
        "violations": [v.to_json() for v in violations],
        "events": run.log.events,
        "exit_code": run.exit_code,
        "stderr": run.output[-4000:],
    }


# ------------------------------------------------------------------ runner


def client_hunt(cfg: Any, revision: str, stats: Any, campaign: str = "client") -> Any:
    """The ``client`` (or client ``capabilities``) campaign for :func:`mcp_trio.fuzzing.runner._search`:
    one client run per example."""
    from .runner import Hunt, TargetError

    target: ClientTarget = cfg.target

    def execute(plan: Plan) -> tuple[list[bytes], list[str], list[orc.Violation]]:
        stats.sessions += 1
        run = run_plan(target, revision, plan, timeout=cfg.timeout, run_time=cfg.run_time)
        if stats.sessions == 1 and not cfg.all_revisions and _speaks_another_revision(run):
            raise TargetError(f"the client does not speak {revision} (it sent initialize instead); "
                              "--all-revisions fuzzes it anyway")
        return [_dump(plan)], [], check_client(run, cfg.run_time)

    def replay_best(payloads: list[bytes], notes: list[str]) -> tuple[dict[str, Any], list[orc.Violation]]:
        return _replay_plan(target, revision, json.loads(payloads[0]), cfg.timeout, cfg.run_time, cfg.seed,
                            campaign)

    strategy = capability_plans(revision) if campaign == "capabilities" else plans(revision)
    if cfg.skip_probes:
        skip = frozenset(cfg.skip_probes)
        strategy = strategy.filter(lambda plan: not skip & plan_kinds(plan))
    return Hunt(strategy, execute, replay_best, lambda: None)


def _speaks_another_revision(run: ClientRun) -> bool:
    """A client asked for 2026-07-28 that opened with ``initialize`` (a handshake revision) and
    never sent a request of the stateless revision: it does not speak it, which is no finding."""
    return (_versions.is_stateless(run.revision) and run.log.negotiated is None
            and any(isinstance(m, dict) and m.get("method") == "initialize" for m, _ in run.log.client_messages))


def plan_kinds(plan: Plan) -> set[str]:
    """The probe kinds a plan uses, as ``--skip`` names them: injection notes with and without their
    detail (``params``, ``params:params_not_object``, ``unknown_method`` ...), the same for one
    method (``params@ping``), and answer kinds (``mutated``, ``junk-event`` ...)."""
    kinds: set[str] = set()
    for step in plan.get("steps") or []:
        for inj in step:
            note, method = inj["note"], inj["message"].get("method")
            kinds |= {note, note.split(":")[0], f"{note.split(':')[0]}@{method}"}
    return kinds | {a["kind"] for answers in (plan.get("answers") or {}).values() for a in answers}


def _replay_plan(target: ClientTarget, revision: str, plan: Plan, timeout: float, run_time: float,
                 seed: int | None, campaign: str = "client") -> tuple[dict[str, Any], list[orc.Violation]]:
    from .runner import TRANSCRIPT_FORMAT

    run = run_plan(target, revision, plan, timeout=timeout, run_time=run_time)
    violations = check_client(run, run_time)
    return transcript_of(target, revision, plan, run, violations, timeout, run_time, seed,
                         TRANSCRIPT_FORMAT, campaign), violations


def replay_client(data: dict[str, Any], *, target: Any = None,
                  timeout: float | None = None) -> tuple[dict[str, Any], list[orc.Violation]]:
    """Serve a client transcript's plan again to a fresh launch of the client."""
    if target is None:
        desc = data["target"]
        target = ClientTarget.from_description(desc)
    if not isinstance(target, ClientTarget):
        raise ValueError("a client transcript replays against a client (--client CMD)")
    return _replay_plan(target, data["revision"], data["plan"], timeout or data.get("timeout", 5.0),
                        data.get("run_time", 30.0), None, data.get("campaign", "client"))
