"""What must come back for a frame, read from its bytes the way the specification does.

:func:`classify` (one stdio line or HTTP body) and :func:`classify_payload` (a payload,
split into lines over stdio) return an :class:`Expect`: per request id, how many answers,
which error codes, whether a result must decode as the method's result type; and which
errors must come with id null.  The expectations never depend on how the target behaved,
so the same case means the same thing on replay; :func:`~.oracles.check` compares them
with what came back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..types import _versions
from ._connection import loads

__all__ = ["Expect", "IdExpect", "classify", "classify_payload", "idkey", "rejected_params_codes"]

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
HEADER_MISMATCH = -32020
SAFE_INT = 2**53


@dataclass
class IdExpect:
    count: int = 0
    codes: set[int] | None = None  # an error with one of these codes is required
    must_error: bool = False  # an error (any code) is required
    method: str | None = None  # validate a result against this method's result types
    null_ok: bool = False  # a null-id error may stand in for the response
    lenient: bool = False  # zero answers are fine too


@dataclass
class Expect:
    ids: dict[str, IdExpect] = field(default_factory=dict)
    null_required: list[int] = field(default_factory=list)  # error codes that must come with id null
    null_allowed: int = 0  # extra null-id errors tolerated
    has_request: bool = False
    valid_request: bool = False  # a request the types accept (or an unknown method): HTTP must not refuse it
    lenient: bool = False  # oversized / too deep / ambiguous: only liveness counts
    opaque: bool = False  # too deep to tell request from notification: the HTTP status is not judged
    utf8_in_string: int = 0  # frames valid but for invalid UTF-8 inside a string (see classify)

    def merge(self, other: Expect) -> None:
        self.utf8_in_string += other.utf8_in_string
        for k, v in other.ids.items():
            mine = self.ids.get(k)
            if mine is None:
                self.ids[k] = v
            else:
                mine.count += v.count
                mine.method = None  # a duplicate id: the answers cannot be told apart
                mine.lenient = mine.lenient or v.lenient
                mine.null_ok = mine.null_ok or v.null_ok
                mine.codes = None if mine.codes is None or v.codes is None else mine.codes | v.codes
        self.null_required += other.null_required
        self.null_allowed += other.null_allowed
        self.has_request |= other.has_request
        self.valid_request |= other.valid_request
        self.lenient |= other.lenient
        self.opaque |= other.opaque


def idkey(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def classify_payload(payload: bytes, revision: str, transport: str, *, initialized: bool = True) -> Expect:
    """What must come back for one payload: over stdio each line is a message of its own
    ("Messages are delimited by newlines, and MUST NOT contain embedded newlines")."""
    if transport != "stdio":
        return classify(payload, revision, initialized=initialized)
    total = Expect()
    for line in payload.split(b"\n"):
        line = line.rstrip(b"\r")
        if line.strip():
            total.merge(classify(line, revision, initialized=initialized))
    return total


def _classify_too_deep(frame: bytes) -> Expect:
    """A frame nested past the decoding limit: only liveness counts, but its top-level members
    are still read (:func:`top_level_scalars`), so a request among them (``id`` and ``method``)
    may be answered, and over HTTP is a request, not a notification (its 200 is not judged by
    the notification rule); a frame whose kind cannot be read is ``opaque``."""
    e = Expect(lenient=True, null_allowed=1)
    top = top_level_scalars(frame)
    rid, method = top.get("id"), top.get("method")
    if isinstance(method, str) and "id" in top and _valid_id(rid):
        e.ids[idkey(rid)] = IdExpect(1, lenient=True, null_ok=True)
        e.has_request = True
    elif not (isinstance(method, str) and "id" not in top):
        e.opaque = True  # (a notification stays one: a 200 for it is judged as usual)
    return e


def top_level_scalars(frame: bytes) -> dict[str, Any]:
    """The members of a JSON object ``frame`` whose values decode on their own (a scalar, or a
    value nested within the limit), read without descending into the others; {} for a frame
    that is not an object.  One pass over the text, strings skipped."""
    text = frame.decode("utf-8", "replace").strip()
    if not text.startswith("{"):
        return {}
    out: dict[str, Any] = {}
    depth, start, i, in_string = 0, 1, 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            if c == "\\":
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                _take_member(text[start:i], out)
                break
        elif c == "," and depth == 1:
            _take_member(text[start:i], out)
            start = i + 1
        i += 1
    return out


def _take_member(member: str, out: dict[str, Any]) -> None:
    try:
        value = loads("{" + member + "}")
    except (ValueError, RecursionError):
        return  # (nested past the limit, or not JSON)
    if isinstance(value, dict):
        out.update(value)


def classify(frame: bytes, revision: str, *, initialized: bool = True) -> Expect:
    """What must come back for one frame (a stdio line, an HTTP body)."""
    e = Expect()
    try:
        text = frame.decode("utf-8")
        value = loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return _classify_too_deep(frame)
    except UnicodeDecodeError:
        return _classify_bad_utf8(frame, revision, initialized)
    except ValueError:
        e.null_required.append(PARSE_ERROR)
        return e
    if "\\ud8" in text.lower() or "\\udc" in text.lower() or "\\udf" in text.lower():
        e.lenient = True  # lone surrogate escapes: RFC 8259 leaves the result unpredictable
    if len(frame) > 1_000_000:
        e.lenient = True  # a peer may refuse a message this size (and name no id)
    if isinstance(value, list):
        if not value:
            e.null_required.append(INVALID_REQUEST)
        elif _versions.supports_batching(revision) and not any(
            isinstance(i, dict) and i.get("method") == "initialize" for i in value
        ):  # ("The initialize request MUST NOT be part of a JSON-RPC batch": refusing all is fine)
            for item in value:
                e.merge(_classify_object(item, revision, initialized))
        else:
            # batches are not part of this revision: refusing the whole batch is fine
            for item in value:
                sub = _classify_object(item, revision, initialized)
                for v in sub.ids.values():
                    v.lenient = True
                    v.codes = None
                e.merge(sub)
                e.null_required.clear()
            e.null_allowed += len(value)
            e.valid_request = False
        return e
    e.merge(_classify_object(value, revision, initialized))
    if e.lenient:
        for v in e.ids.values():
            v.lenient = True
            v.null_ok = True
            v.codes = None
        e.null_allowed += len(e.null_required) + 1
        e.null_required.clear()
    return e


def _classify_bad_utf8(frame: bytes, revision: str, initialized: bool) -> Expect:
    """A frame that is not UTF-8.  If it is JSON once the bad bytes are replaced (they sit inside
    strings), a peer may refuse it (-32700) or take it leniently and answer it: MCP says messages
    "MUST be UTF-8 encoded" (a rule for the sender), and RFC 8259 section 9 lets a parser "accept
    non-JSON forms or extensions".  Both are accepted; :func:`check` records a lenient answer as a
    note.  Anything else is a parse error."""
    try:
        replaced = frame.decode("utf-8", "replace")
        loads(replaced, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        e = Expect()
        e.null_required.append(PARSE_ERROR)
        return e
    e = classify(replaced.encode("utf-8"), revision, initialized=initialized)
    for v in e.ids.values():
        v.lenient = True
        v.null_ok = True
        v.codes = None
        v.method = None
    e.null_allowed += len(e.null_required) + 1
    e.null_required.clear()
    e.valid_request = False
    e.utf8_in_string = 1
    return e


def rejected_params_codes(spec: Any, params: Any) -> set[int] | None:
    """The error codes for a request whose params the method's types reject (None: any answer).

    By-position params (JSON-RPC allows them) to a method that needs none may be ignored.
    -32601 is accepted too: a peer that does not implement the method may say so before
    looking at the params; params that are not structured make the request invalid (-32600)."""
    if isinstance(params, list) and not spec.params_required:
        return None
    if params is None or isinstance(params, dict | list):
        return {INVALID_PARAMS, METHOD_NOT_FOUND}
    return {INVALID_PARAMS, METHOD_NOT_FOUND, INVALID_REQUEST}


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, str) or (isinstance(value, int) and -SAFE_INT < value < SAFE_INT)


def _classify_object(m: Any, revision: str, initialized: bool) -> Expect:
    e = Expect()
    if not isinstance(m, dict):
        e.null_required.append(INVALID_REQUEST)
        return e
    has_id = "id" in m
    rid = m.get("id")
    if "method" not in m and ("result" in m or "error" in m):
        # a response from us (to nothing): ignored, or refused with an error
        e.null_allowed += 1
        if _valid_id(rid):
            e.ids[idkey(rid)] = IdExpect(0, lenient=True)
        return e
    envelope_ok = m.get("jsonrpc") == "2.0" and isinstance(m.get("method"), str)
    if has_id and isinstance(rid, int) and not isinstance(rid, bool) and not _valid_id(rid):
        # an integer id beyond 2**53: refused or answered, both are fine
        e.ids[idkey(rid)] = IdExpect(1, lenient=True, null_ok=True)
        e.null_allowed += 1
        e.has_request = True
        return e
    if has_id and isinstance(rid, float) and rid.is_integer() and _valid_id(int(rid)):
        # an integral number written with a fraction or a sign (-0.0, 1.0): JSON has one number
        # type, and a parser that reads it as the integer answers with that integer (JavaScript
        # writes -0 as 0), the same value; refused or answered under that id, both are fine
        e.ids[idkey(int(rid))] = IdExpect(1, lenient=True, null_ok=True)
        e.null_allowed += 1
        e.has_request = True
        return e
    if not envelope_ok:
        if "method" not in m and has_id:
            # neither request nor a well-formed response: may be taken for a broken response,
            # which JSON-RPC gives no answer for
            e.null_allowed += 1
            if _valid_id(rid):
                e.ids[idkey(rid)] = IdExpect(1, lenient=True)
            return e
        if has_id and _valid_id(rid):
            e.ids[idkey(rid)] = IdExpect(1, codes={INVALID_REQUEST}, null_ok=True)
            e.has_request = True
        elif not has_id:
            e.null_allowed += 1  # looks like a notification: an answer is allowed, not required
        else:
            e.null_required.append(INVALID_REQUEST)
        return e
    if not has_id:
        return e  # a notification (whatever its method): no answer
    if not _valid_id(rid):
        e.null_required.append(INVALID_REQUEST)  # null, bool, float, object, array
        return e
    e.has_request = True
    method = m["method"]
    spec = _versions.methods_for(revision).get(method)
    x = IdExpect(1)
    meta = m.get("params", {}).get("_meta") if isinstance(m.get("params"), dict) else None
    if _versions.is_stateless(revision) and not (
        isinstance(meta, dict) and meta.get("io.modelcontextprotocol/protocolVersion") == revision
    ):
        # no protocol version in _meta: not a request of this revision at all, so the
        # server may refuse it as it likes (invalid request, invalid params, not initialized)
        x.must_error = True
        e.ids[idkey(rid)] = x
        return e
    if spec is None or spec.kind != "request" or spec.direction == "server":
        x.codes = (
            {METHOD_NOT_FOUND}
            if spec is None or spec.kind == "request"
            else {METHOD_NOT_FOUND, INVALID_REQUEST}
        )
        e.valid_request = spec is None
    else:
        try:
            msgspec.json.decode(json.dumps(m).encode(), type=spec.message)
            x.method = method
            e.valid_request = True
        except (msgspec.ValidationError, msgspec.DecodeError):
            x.codes = rejected_params_codes(spec, m.get("params"))
            if x.codes is None:
                e.ids[idkey(rid)] = x
                return e
    if method == "initialize" and initialized and spec is not None:
        # a second initialize: refusing it for the lifecycle comes before looking at its params
        x.codes, x.method = None, None  # (and whether it is refused at all is not specified)
    if not initialized:
        x.codes = None  # before the handshake any error (or an answer) is fine; one response is not optional
    e.ids[idkey(rid)] = x
    return e
