"""Oracles: what a peer must never do, each with the specification text it enforces.

:func:`classify` reads one frame the way the specification does and says what
must come back (:class:`Expect`); :func:`check` compares that with what did
come back over a :class:`~mcp_trio.fuzzing.driver.Connection` and returns the
:class:`Violation` list.  The expectations come from the bytes alone, never
from how the target behaved, so the same case means the same thing on replay.
The reading of the frames (:func:`classify`, :class:`Expect`) lives in :mod:`._expect`,
the oracles and the rules they grade by (:data:`ORACLES`, :data:`RULES`) in :mod:`._rules`,
both re-exported here; this module holds :class:`Violation`, :func:`check` and the
``capabilities`` oracle.  Each violation names the rule it breaks, which grades it: a MUST
a violation, a SHOULD a deviation, a judgement call a note.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from ..types import _versions
from ._connection import STREAM_GRACE
from ._connection import loads as loads
from ._expect import HEADER_MISMATCH as HEADER_MISMATCH
from ._expect import INVALID_PARAMS as INVALID_PARAMS
from ._expect import INVALID_REQUEST as INVALID_REQUEST
from ._expect import METHOD_NOT_FOUND as METHOD_NOT_FOUND
from ._expect import PARSE_ERROR as PARSE_ERROR
from ._expect import SAFE_INT as SAFE_INT
from ._expect import Expect as Expect
from ._expect import IdExpect as IdExpect
from ._expect import _valid_id as _valid_id
from ._expect import classify as classify
from ._expect import classify_payload as classify_payload
from ._expect import idkey as idkey
from ._expect import rejected_params_codes as rejected_params_codes
from ._rules import ORACLES as ORACLES
from ._rules import RULES as RULES
from ._rules import Oracle as Oracle
from ._rules import grade_of, rule_for
from .strategies import accepts, advertised, gate

__all__ = ["ORACLES", "CaseView", "Expect", "Oracle", "Violation", "check", "classify", "classify_payload"]


@dataclass
class Violation:
    """A rule broken by the peer.  ``rule`` names the sentence (:data:`~._rules.RULES`; by
    default the one :func:`~._rules.rule_for` gives the oracle and detail) and ``severity`` its
    grade: ``"violation"`` for a MUST, ``"deviation"`` for a SHOULD, ``"note"`` for a judgement
    call; ``"flaky"`` marks a candidate that did not show again on replay."""

    oracle: str
    message: str
    detail: str = ""
    severity: str = ""
    rule: str = ""

    def __post_init__(self) -> None:
        if not self.rule:
            self.rule = rule_for(self.oracle, self.detail)
        if not self.severity:
            self.severity = grade_of(self.rule)

    @property
    def key(self) -> str:
        return f"{self.oracle}:{self.detail}" if self.detail else self.oracle

    def to_json(self, revision: str | None = None) -> dict[str, Any]:
        o = ORACLES.get(self.oracle)
        return {
            "oracle": self.oracle,
            "key": self.key,
            "message": self.message,
            "severity": self.severity,
            **({"spec": o.spec, "source": o.source} if o else {}),
            "cites": RULES[self.rule].cite(revision),
        }


# ------------------------------------------------------------------ check


@dataclass
class CaseView:
    """What the oracles look at for one case."""

    revision: str
    transport: str
    payloads: Sequence[bytes]
    received: Sequence[Any]  # driver.Received since the case started
    http: Sequence[Any]  # driver.HttpExchange since the case started
    junk: Sequence[bytes]
    alive: bool
    exit_code: int | None
    probe_id: str | None
    probe_answered: bool
    cancelled: set[str]
    previously_answered: set[str]
    initialized: bool = True
    timeout: float = 5.0
    #: The receiver's advertised capabilities when the case is judged for capability use
    #: (the ``capabilities`` campaign); None: not judged.
    capabilities: dict[str, Any] | None = None


def _responses(received: Sequence[Any]) -> list[Any]:
    out = []
    for rec in received:
        for msg in rec.message if isinstance(rec.message, list) else [rec.message]:
            if isinstance(msg, dict) and "method" not in msg:
                out.append(msg)
    return out


def id_may_be_absent(revision: str | None) -> bool:
    """Whether an error for input whose id cannot be read may leave the id out: 2025-11-25 and
    later type the error response's id as optional and never null ("Error responses MUST include
    the same ID as the request they correspond to (except in error cases where the ID could not be
    read due a malformed request)", basic/index); earlier revisions and JSON-RPC 2.0 require the
    member ("If there was an error in detecting the id [...] it MUST be Null")."""
    return revision is not None and revision >= "2025-11-25"


def _envelope_problem(msg: dict[str, Any], revision: str | None = None) -> str | None:
    if msg.get("jsonrpc") != "2.0":
        return 'jsonrpc is not "2.0"'
    if ("result" in msg) == ("error" in msg):
        return "a response must carry exactly one of result and error"
    if "id" not in msg and not ("error" in msg and id_may_be_absent(revision)):
        return "a response without an id"
    if "error" in msg:
        err = msg["error"]
        if (
            not isinstance(err, dict)
            or not isinstance(err.get("code"), int)
            or isinstance(err.get("code"), bool)
        ):
            return "the error has no integer code"
        if not isinstance(err.get("message"), str):
            return "the error has no string message"
    elif not isinstance(msg["result"], dict):
        return "the result is not an object"
    return None


def _result_problem(revision: str, method: str, result: Any) -> str | None:
    spec = _versions.methods_for(revision).get(method)
    if spec is None or not spec.results:
        return None
    data = json.dumps(result).encode()
    errors = []
    for tp in spec.results:
        try:
            msgspec.json.decode(data, type=tp)
            return None
        except msgspec.ValidationError as exc:
            errors.append(f"{tp.__name__}: {exc}")
    return "; ".join(errors)


def _excerpt(data: Any, limit: int = 200) -> str:
    text = (
        data.decode("utf-8", "replace") if isinstance(data, bytes) else json.dumps(data, ensure_ascii=False)
    )
    return text if len(text) <= limit else text[:limit] + "..."


def check(view: CaseView) -> list[Violation]:
    """Every violation the case shows."""
    out: list[Violation] = []
    if not view.alive:
        out.append(Violation("alive", f"the peer exited (status {view.exit_code})", "exited"))
    elif view.probe_id is not None and not view.probe_answered:
        out.append(
            Violation(
                "alive",
                f"no answer to the ping sent after the case within {view.timeout} s",
                "no-ping-answer",
            )
        )
    if view.junk:
        out.append(
            Violation("stdout", f"not a JSON-RPC message on stdout: {_excerpt(view.junk[0])!r}", "junk")
        )

    # HTTP: a refused body needs no JSON-RPC answer; the status is checked instead
    expects = [
        classify_payload(p, view.revision, view.transport, initialized=view.initialized)
        for p in view.payloads
    ]
    waived: set[int] = set()
    if view.transport == "http":
        for ex in view.http:
            if ex.payload is None or ex.payload >= len(expects):
                continue
            e = expects[ex.payload]
            out.extend(_check_http(ex, e))
            if ex.status is None or ex.status >= 300:
                waived.add(ex.payload)
    total = Expect()
    for i, e in enumerate(expects):
        if view.transport == "http":
            e.null_allowed += len(e.null_required)  # over HTTP the status code carries it (checked above)
            e.null_required = []
            if i in waived:
                # refused with an HTTP error: a JSON-RPC error in the body is allowed, not required
                for x in e.ids.values():
                    x.lenient = True
                e.null_allowed += 1
        total.merge(e)
    waived_ids: set[str] = set()

    responses = _responses(view.received)
    by_id: dict[str, list[dict[str, Any]]] = {}
    nulls: list[dict[str, Any]] = []
    malformed: dict[str, int] = {}  # id -> responses with that id that are not valid responses
    for msg in responses:
        problem = _envelope_problem(msg, view.revision)
        if problem:
            detail = "null-id" if "id" not in msg and "error" in msg else "envelope"
            oracle = "error-codes" if detail == "null-id" else "valid-response"
            why = " (JSON-RPC wants id null)" if detail == "null-id" else ""
            out.append(Violation(oracle, f"{problem}{why}: {_excerpt(msg)}", detail))
            if _valid_id(msg.get("id")):  # (an answer all the same: broken, not missing)
                malformed[idkey(msg["id"])] = malformed.get(idkey(msg["id"]), 0) + 1
            continue
        if msg.get("id") is None:
            nulls.append(msg)
        else:
            by_id.setdefault(idkey(msg["id"]), []).append(msg)
    probe_key = idkey(view.probe_id) if view.probe_id is not None else None
    null_pool = list(nulls)

    # the errors that must come with id null are matched first, then ids that may be answered so
    for code in total.null_required:
        match = next((n for n in null_pool if n.get("error", {}).get("code") == code), None)
        if match is None:
            other = next((n for n in null_pool if "error" in n), None)
            if other is not None:
                null_pool.remove(other)
                out.append(
                    Violation(
                        "error-codes",
                        f"expected error {code} with id null, got {other['error']['code']}",
                        f"want-{code}",
                    )
                )
            else:
                out.append(
                    Violation(
                        "error-codes",
                        f"no error {code} (with id null) for a message that calls for it",
                        f"missing-{code}",
                    )
                )
        else:
            null_pool.remove(match)
    if view.transport == "http" and _versions.is_stateless(view.revision):
        # 2026-07-28 HTTP checks the Mcp-* headers against the body first: HeaderMismatch (-32020)
        # is a fair answer to any request whose headers the fuzzer could not mirror
        for x in total.ids.values():
            if x.codes is not None:
                x.codes = x.codes | {HEADER_MISMATCH}
    for key, x in total.ids.items():
        got = by_id.get(key, [])
        broken = malformed.get(key, 0)
        if not got and not broken and x.null_ok and x.count:
            match = next((n for n in null_pool if x.codes is None or n["error"].get("code") in x.codes), None)
            if match is not None:
                null_pool.remove(match)
                continue
        if (
            len(got) + broken < x.count
            and not x.lenient
            and key not in view.cancelled
            and key not in waived_ids
        ):
            if view.alive and got and x.count > 1:
                # the id was reused: the requester broke "MUST NOT have been previously used" first
                out.append(
                    Violation(
                        "one-response",
                        f"{len(got)} response(s) to request id {key}, sent {x.count} times (a reused id)",
                        "reused-id-stream" if view.transport == "http" else "reused-id",
                    )
                )
            elif view.alive:
                out.append(
                    Violation(
                        "one-response", f"no response to request id {key} within {view.timeout} s", "missing"
                    )
                )
        if len(got) + broken > max(x.count, 1) or (x.count == 0 and got and not x.lenient):
            out.append(
                Violation("one-response", f"{len(got) + broken} responses to request id {key}", "extra")
            )
        for msg in got:
            if x.codes is not None:
                if "error" not in msg:
                    out.append(
                        Violation(
                            "error-codes",
                            f"expected error {sorted(x.codes)} for id {key}, got a result: {_excerpt(msg)}",
                            f"result-instead-of-{min(x.codes)}",
                        )
                    )
                elif msg["error"]["code"] not in x.codes:
                    out.append(
                        Violation(
                            "error-codes",
                            f"expected error {sorted(x.codes)} for id {key}, got "
                            f"{msg['error']['code']}: {_excerpt(msg)}",
                            f"want-{min(x.codes)}",
                        )
                    )
            elif x.must_error and "error" not in msg:
                out.append(
                    Violation(
                        "error-codes",
                        f"expected an error for id {key}, got a result: {_excerpt(msg)}",
                        "result-instead-of-error",
                    )
                )
            elif x.method is not None and "result" in msg:
                problem = _result_problem(view.revision, x.method, msg["result"])
                if problem:
                    out.append(
                        Violation(
                            "valid-response",
                            f"the {x.method} result does not decode as {view.revision}: {problem[:300]}",
                            f"result:{x.method}",
                        )
                    )
    for key, got in by_id.items():
        if key in total.ids or key == probe_key:
            continue
        if key in view.previously_answered:
            out.append(
                Violation("one-response", f"a second response to id {key}: {_excerpt(got[0])}", "extra")
            )
        else:
            out.append(
                Violation(
                    "no-response-to-notification",
                    f"a response to an id no request of the case has: {_excerpt(got[0])}",
                    "unknown-id",
                )
            )

    if view.capabilities is not None:
        out += capability_notes(view.revision, view.payloads, view.capabilities, by_id)
    if total.utf8_in_string:
        out += _utf8_note(view, total, nulls)
    if len(null_pool) > total.null_allowed:
        out.append(
            Violation(
                "no-response-to-notification",
                f"{len(null_pool) - total.null_allowed} unasked response(s) with id null: "
                f"{_excerpt(null_pool[0])}",
                "null-id",
            )
        )
    return out


def gated_requests(revision: str, payloads: Sequence[bytes], capabilities: dict[str, Any]) -> dict[str, str]:
    """The requests of ``payloads`` (id key -> method) that need a capability ``capabilities``
    does not grant, among the messages the revision's types accept (an invalid message has its
    own expected error)."""
    out: dict[str, str] = {}
    for payload in payloads:
        try:
            value = loads(payload)
        except (ValueError, UnicodeDecodeError, RecursionError):
            continue
        for msg in value if isinstance(value, list) else [value]:
            if not isinstance(msg, dict) or "id" not in msg or not _valid_id(msg["id"]):
                continue
            method = msg.get("method")
            path = gate(revision, method) if isinstance(method, str) else None
            if path is not None and not advertised(capabilities, path) and accepts(revision, msg):
                out[idkey(msg["id"])] = msg["method"]
    return out


def judge_capability_answer(method: str, answer: dict[str, Any]) -> Violation | None:
    """A note when the answer to a request for an unadvertised capability is a result, or an
    error other than -32601.  Never a violation: lifecycle's "only use capabilities that were
    successfully negotiated" binds the sender, and the receiver's error code is a SHOULD."""
    if "result" in answer:
        return Violation(
            "capabilities",
            f"{method} got a result although the capability it needs was not advertised: {_excerpt(answer)}",
            "result-instead-of-error",
            severity="note",
        )
    code = answer.get("error", {}).get("code") if isinstance(answer.get("error"), dict) else None
    if code not in capability_codes(method):
        return Violation(
            "capabilities",
            f"{method} (capability not advertised) refused with {code}, not -32601 "
            f"Method not found: {_excerpt(answer)}",
            "code",
            severity="note",
        )
    return None


def capability_codes(method: str) -> set[int]:
    """The codes that refuse a request for an unadvertised capability: -32601, and for
    ``tasks/*`` -32602 too, since a peer without tasks has none of the task ids asked about
    ("Invalid or nonexistent taskId in tasks/get, tasks/result, or tasks/cancel: -32602",
    basic/utilities/tasks, Error Handling)."""
    return {METHOD_NOT_FOUND, INVALID_PARAMS} if method.startswith("tasks/") else {METHOD_NOT_FOUND}


def capability_notes(
    revision: str,
    payloads: Sequence[bytes],
    capabilities: dict[str, Any],
    by_id: dict[str, list[dict[str, Any]]],
) -> list[Violation]:
    """The ``capabilities`` oracle over one case (exactly one answer is ``one-response``'s job)."""
    out = []
    for key, method in gated_requests(revision, payloads, capabilities).items():
        got = by_id.get(key, [])
        note = judge_capability_answer(method, got[0]) if got else None
        if note is not None:
            out.append(note)
    return out


def _utf8_note(view: CaseView, total: Expect, nulls: list[dict[str, Any]]) -> list[Violation]:
    """A note (not a violation) when a frame with invalid UTF-8 inside a string was not refused."""
    refusals = sum(
        1 for n in nulls if isinstance(n.get("error"), dict) and n["error"].get("code") == PARSE_ERROR
    )
    refusals -= total.null_required.count(PARSE_ERROR)
    refusals += sum(1 for ex in view.http if ex.status is not None and 400 <= ex.status < 500)
    if refusals >= total.utf8_in_string:
        return []
    return [
        Violation(
            "error-codes",
            "a message with invalid UTF-8 inside a string was taken leniently, "
            "not refused with -32700 (RFC 8259 section 9 allows it; MCP wants UTF-8)",
            "utf8-accepted",
            severity="note",
        )
    ]


def _check_http(ex: Any, e: Expect) -> list[Violation]:
    out: list[Violation] = []
    if ex.stream_open:
        out.append(
            Violation(
                "one-response",
                f"the SSE stream of a POST was still open {STREAM_GRACE} s after the response it carried",
                "stream-never-ends",
            )
        )
    if ex.status is None:
        if not e.lenient:
            out.append(Violation("http-status", f"no HTTP answer: {ex.error}", "no-answer"))
        return out
    if ex.status >= 500:
        out.append(Violation("http-status", f"HTTP {ex.status} (a server error) for a POST", "5xx"))
    elif (
        e.has_request
        and e.valid_request
        and ex.status >= 300
        and not e.lenient
        and (ex.content_type != "application/json")
    ):
        # (an HTTP error status that carries the JSON-RPC error response is an answer)
        out.append(
            Violation(
                "http-status",
                f"HTTP {ex.status} without a JSON-RPC answer for a valid request",
                "refused-valid",
            )
        )
    elif (
        e.has_request
        and ex.status == 200
        and ex.content_type not in ("application/json", "text/event-stream")
    ):
        out.append(
            Violation(
                "http-status", f"HTTP 200 with Content-Type {ex.content_type!r} for a request", "content-type"
            )
        )
    elif not e.has_request and 200 <= ex.status < 300 and e.null_required:
        out.append(
            Violation(
                "http-status",
                f"HTTP {ex.status} for input that cannot be accepted (MUST be an HTTP error status)",
                "accepted-invalid",
            )
        )
    elif not e.has_request and not e.null_required and not e.opaque and ex.status == 200:
        out.append(
            Violation(
                "http-status",
                "HTTP 200 for notifications or responses only (MUST be 202)",
                "200-for-notification",
            )
        )
    elif ex.status == 202 and ex.body_excerpt:
        out.append(Violation("http-status", "HTTP 202 with a body", "202-body"))
    return out
