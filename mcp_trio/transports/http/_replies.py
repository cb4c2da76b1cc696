"""Plain replies of the HTTP endpoints and front doors, and just enough
JSON-RPC parsing to route a body.  No I/O here (the planner builds on it).

A :class:`_Reply` is a whole response (status, body, headers) that
``_request._send_reply`` sends with its ``content-length``; :func:`_error_reply`
makes one with a JSON-RPC error body.  :func:`_peek_body` reads a POST body
as :class:`_Message` (or a batch of them), or the 400 parse error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import msgspec

from ... import _jsonrpc as rpc
from ...types import _versions

_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache, no-transform")]
#: Why a request with both ``Content-Length`` and ``Transfer-Encoding`` is
#: refused (and its connection closed): its framing is ambiguous, the mark of
#: request smuggling (RFC 9112 section 6.1).
_BOTH_LENGTHS = "A request must not have both Content-Length and Transfer-Encoding"


class _Message(msgspec.Struct):
    """Just enough of a JSON-RPC message to route it."""

    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    error: Any = msgspec.UNSET

    @property
    def kind(self) -> str:
        return _kind(self.id, self.method, self.result, self.error)


def _kind(id: Any, method: Any, result: Any, error: Any) -> str:
    """``"request"``, ``"notification"``, ``"response"`` or ``"invalid"``."""
    has_id = id is not msgspec.UNSET
    if isinstance(method, str):
        if not has_id:
            return "notification"
        return "request" if isinstance(id, int | str) and not isinstance(id, bool) else "invalid"
    if has_id and (result is not msgspec.UNSET) != (error is not msgspec.UNSET):
        return "response"
    return "invalid"


_peek = msgspec.json.Decoder(_Message | list[_Message])


def _is_response(data: bytes) -> bool:
    """Whether ``data`` (an answer going out) is a response or a batch of them."""
    try:
        message = _peek.decode(data)
    except msgspec.DecodeError:
        return False
    if isinstance(message, list):
        return True
    return message.method is msgspec.UNSET


#: HTTP statuses of a stateless request's JSON-RPC errors (2026-07-28); others: 200.
_ERROR_STATUS = {
    rpc.PARSE_ERROR: 400,
    rpc.INVALID_REQUEST: 400,
    rpc.INVALID_PARAMS: 400,
    rpc.METHOD_NOT_FOUND: 404,
    rpc.HEADER_MISMATCH: 400,
    rpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    rpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
}


class _BatchMember(msgspec.Struct):
    """A member of a batch, peeked at as :class:`_Message` is, but with its
    ``params`` left as raw JSON until somebody reads them (a large batch's
    members are routed by id and method alone: building every member's params
    would cost several times the decoding itself)."""

    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params_raw: msgspec.Raw | msgspec.UnsetType = msgspec.field(default=msgspec.UNSET, name="params")
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET

    @property
    def kind(self) -> str:
        return _kind(self.id, self.method, self.result, self.error)

    @property
    def params(self) -> Any:
        raw = self.params_raw
        return msgspec.UNSET if raw is msgspec.UNSET else msgspec.json.decode(raw)


_peek_batch = msgspec.json.Decoder(list[_BatchMember])
_WHITESPACE = b" \t\r\n"


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def _error_reply(status: int, message: str, code: int = rpc.INVALID_REQUEST, id: Any = None) -> _Reply:
    return _Reply(status, rpc.encode_error(id, code, message), [("content-type", "application/json")])


def _peek_body(body: bytes) -> _Message | list[_BatchMember] | _Reply:
    """A POST body's message(s), or the 400 parse error for a body that is not
    JSON text (not JSON, nested deeper than the decoder goes, or not UTF-8)."""
    try:
        peeked: _Message | list[_BatchMember]
        if body.lstrip(_WHITESPACE)[:1] == b"[":
            peeked = _peek_batch.decode(body)
        else:
            # not an array (JSON whitespace is what lstrip took), so an object: a _Message
            peeked = cast(_Message, _peek.decode(body))
        body.decode("utf-8")  # JSON text is UTF-8 (msgspec checks only what it decodes)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        reason = "the body is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _error_reply(400, f"Parse error: {reason}", code=rpc.PARSE_ERROR)
    return peeked


_META_VERSION = "io.modelcontextprotocol/protocolVersion"


def _refuse_batch(peeked: _Message | list[_BatchMember], version: str | None) -> _Reply | None:
    """The answer to a batch in a revision without batches (all but 2025-03-26):
    400 with one -32600 error of id ``null``, at once, so none of its ids is
    ever waited for; ``None`` for anything else."""
    if not isinstance(peeked, list) or version is None or _versions.supports_batching(version):
        return None
    return _error_reply(
        400, f"Invalid Request: JSON-RPC batches are not allowed in protocol version {version}"
    )


def _modern_version(message: _Message | _BatchMember) -> str | None:
    params = message.params
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(_META_VERSION)
    return version if isinstance(version, str) else None


def _session_ended() -> _Reply:
    """What a request naming an unknown, deleted, expired or ending session gets."""
    return _error_reply(404, "Session not found", code=rpc.INVALID_REQUEST)


def _unconfirmed_end(exc: Exception) -> _Reply:
    """503 for a ``DELETE`` the session store could not confirm (``exc`` its failure): the session
    was ended nowhere, since a 200 says it is gone on every worker; the client retries."""
    reason = f"the session store failed ({exc}); the session was not ended: retry"
    return _error_reply(503, f"Service Unavailable: {reason}")
