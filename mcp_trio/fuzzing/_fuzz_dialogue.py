"""What the fuzzing server of the client campaigns says to the client, whatever the transport.

A :class:`Dialogue` follows a :data:`~._plans.Plan` and logs everything it saw and sent
(:class:`ServerLog`): it answers ``initialize`` (or, in 2026-07-28, ``server/discover``, and
refuses a request whose ``_meta`` does not name the revision and the client's capabilities),
and answers every other request with the plan's step messages first (waiting, bounded, for the
client's answers to our requests among them), then the answer the plan says.  It writes
through a :class:`Channel`: an HTTP exchange (:mod:`._fuzz_server`) or lines
(:mod:`._stdio_fuzz_server`).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..types import _versions
from . import oracles as orc
from ._connection import log_event
from ._plans import Plan, default_result, initialize_result
from .strategies import CLIENT_META_KEYS, advertised, gate

__all__ = ["Channel", "Dialogue", "ServerLog", "error_body"]


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
    #: what we sent that no valid id names: batches, requests with an invalid id, junk events
    #: ({note, message}); the oracles match the client's id-null answers against them
    unnamed_sent: list[dict[str, Any]] = field(default_factory=list)
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


class Channel(Protocol):
    """Where a :class:`Dialogue` writes to the client: one HTTP exchange, or the stdio lines."""

    def reply(self, status: int, body: bytes = b"", extra: Sequence[tuple[str, str]] = ()) -> None:
        """A whole answer (over stdio: its body, if any, as a line)."""

    def open_stream(self) -> None:
        """Start an answer of several messages (over stdio: nothing)."""

    def event(self, data: bytes) -> None:
        """One message of the answer opened (over stdio: a line)."""

    def close_stream(self) -> None:
        """End the answer opened (over stdio: nothing)."""


class Dialogue:
    """The plan followed with one client: its log, the steps taken and the answers awaited.

    Thread-safe: every transport thread reading the client or answering it shares it;
    :meth:`stop` ends the waits for the client's answers.
    """

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

    def stop(self) -> None:
        self.stopped.set()
        with self.cond:
            self.cond.notify_all()

    def note(self, event: dict[str, Any]) -> None:
        """Add an event (not a message) to the transcript, with its time."""
        with self.cond:
            self.log.events.append({"t": self.log.now(), **event})

    def send(self, channel: Channel, data: bytes) -> None:
        """Log and write one message of an answer."""
        self.log.log("send", data)
        channel.event(data)

    # -- what the client sent

    def unparsed(self, channel: Channel, data: bytes) -> None:
        """Not JSON: kept for the oracles, answered with -32700."""
        with self.cond:
            self.log.unparsed.append(data)
        channel.reply(400, error_body(None, -32700, "parse error"))

    def record(self, msg: Any, index: int | None) -> None:
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

    def batch_requests(self, batch: list[Any]) -> tuple[list[dict[str, Any]], bool]:
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

    def answers_our_batch(self, batch: list[Any]) -> bool:
        """Whether ``batch`` holds only responses and we sent a batch first: a client answering
        our batch with one did not break a revision without batches first (we did)."""
        with self.cond:
            sent = any(isinstance(u["message"], list) for u in self.log.unnamed_sent)
        return sent and all(isinstance(m, dict) and "method" not in m for m in batch)

    # -- the answers

    def request(self, channel: Channel, msg: dict[str, Any]) -> None:
        """A request of a session revision: ``initialize``, one before it (refused), or one the
        plan answers."""
        if msg["method"] == "initialize":
            self.initialize(channel, msg)
        elif self.log.session_id is None:
            # a stateless client's server/discover probe, or anything before initialize
            channel.reply(
                200, error_body(msg["id"], -32601, f"{msg['method']} is not a method of {self.revision}")
            )
        else:
            self.answer(channel, [msg])

    def initialize(self, channel: Channel, msg: dict[str, Any]) -> None:
        params = msg.get("params")
        declared = params.get("capabilities") if isinstance(params, dict) else None
        with self.cond:
            self.log.session_id = self.log.session_id or uuid.uuid4().hex
            self.log.negotiated = self.revision
            self.log.client_capabilities = declared if isinstance(declared, dict) else {}
        body = _dump({"jsonrpc": "2.0", "id": msg["id"], "result": initialize_result(self.revision)})
        self.log.log("send", body)
        channel.reply(200, body, extra=[("Mcp-Session-Id", self.log.session_id)])

    def stateless_message(self, channel: Channel, msg: Any) -> None:
        """2026-07-28: no session; each request names the revision and the client's capabilities
        in its ``_meta`` ("A request missing any required field is malformed; the server MUST
        reject it with JSON-RPC error code -32602 (Invalid params). On HTTP, the response status
        MUST be 400"); ``server/discover`` is answered with this server's revision."""
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str) or "id" not in msg:
            # notifications: 202; batches and responses (a 2026 client sends neither): 400
            if isinstance(msg, dict) and isinstance(msg.get("method"), str):
                channel.reply(202)
            else:
                channel.reply(400, error_body(None, orc.INVALID_REQUEST, "not accepted"))
            return
        params = msg.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        meta = meta if isinstance(meta, dict) else {}
        caps = meta.get(CLIENT_META_KEYS[1])
        if meta.get(CLIENT_META_KEYS[0]) != self.revision or not isinstance(caps, dict):
            message = f"_meta must name {self.revision} and the client's capabilities"
            channel.reply(400, error_body(msg["id"], orc.INVALID_PARAMS, message))
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
            channel.reply(200, body)
        else:
            self.answer(channel, [msg])

    def answer(self, channel: Channel, requests: list[dict[str, Any]]) -> None:
        """Answer client requests (one, or a batch's) in one answer of several messages: each
        one's step messages first, then the answers in order."""
        channel.open_stream()
        for data in self.steps_then_answers(channel, requests):
            self.send(channel, data)
        channel.close_stream()

    def steps_then_answers(self, channel: Channel, requests: list[dict[str, Any]]) -> list[bytes]:
        """Send the plan's step messages for ``requests`` and wait (bounded) for the client's
        answers to our requests among them; returns the answers to ``requests`` the plan says."""
        claimed = [self._claim(msg) for msg in requests]
        injections = [inj for step_no, _ in claimed for inj in self._step(step_no)]
        waiting = []
        for inj in injections:
            out, keys = self._number(inj)
            waiting += keys
            self.send(channel, _dump(out))
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
            self.note({"dir": "skip", "note": inj["note"], "reason": "the client declared the capability"})
        return declared

    def _number(self, inj: dict[str, Any]) -> tuple[Any, list[str]]:
        """The message of an injection as sent, and the id keys of the answers to wait for.

        A request gets a fresh id (ints stay ints), recorded for the oracles; an id that is no
        string or integer is sent as the plan has it.  A batch's members are numbered likewise;
        in a revision without batches, answers to them are optional (refusing the whole batch
        is fine), so none is waited for."""
        message = inj["message"]
        if not isinstance(message, list):
            out, key = self._number_one(inj["note"], message, lenient=False, alone=True)
            return out, [key] if key is not None else []
        lenient = not _versions.supports_batching(self.revision)
        members = [self._number_one(inj["note"], m, lenient, alone=False) for m in message]
        out = [m for m, _ in members]
        with self.cond:
            self.log.unnamed_sent.append({"note": inj["note"], "message": out})
        return out, [key for _, key in members if key is not None and not lenient]

    def _number_one(self, note: str, message: Any, lenient: bool, alone: bool) -> tuple[Any, str | None]:
        """One message numbered (see :meth:`_number`); ``alone``: not a batch's member (the batch
        is recorded whole)."""
        if not isinstance(message, dict):
            return message, None
        out = dict(message)
        with self.cond:
            if "id" not in out:
                self.log.notifications_sent.append(out)
                return out, None
            if not orc._valid_id(out["id"]):
                if alone:
                    self.log.unnamed_sent.append({"note": note, "message": out})
                return out, None
            self.counter += 1
            out["id"] = 10_000 + self.counter if isinstance(out["id"], int) else f"fz-{self.counter}"
            key = orc.idkey(out["id"])
            self.log.sent[key] = {
                "method": out.get("method"),
                "note": note,
                "message": out,
                **({"lenient": True} if lenient else {}),
            }
        return out, key

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
            with self.cond:
                self.log.unnamed_sent.append({"note": "junk-event", "message": spec["text"]})
            return [spec["text"].encode("utf-8", "surrogatepass"), _dump(valid)]
        return [_dump(valid)]


def error_body(rid: Any, code: int, message: str) -> bytes:
    """A JSON-RPC error response, encoded."""
    return _dump({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})


def _dump(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
