"""JSON-RPC 2.0 envelope, error codes and the shared encoder/decoders.

No framing and no MCP semantics live here: only the shape every message has.
Decoding is two-phase: the :class:`Envelope` keeps ``params``/``result``/
``error`` as :class:`msgspec.Raw`, and the session core decodes them later
with the type the method registry names.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec
from msgspec import UNSET, Raw, UnsetType

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "Envelope",
    "ErrorObject",
    "decode_envelope",
    "decode_batch",
    "encode",
    "encode_error",
    "encode_notification",
    "encode_request",
    "encode_response",
]

# Standard JSON-RPC 2.0 codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# MCP codes.
RESOURCE_NOT_FOUND: Final = -32002  # up to 2025-11-25; 2026-07-28 uses INVALID_PARAMS
URL_ELICITATION_REQUIRED: Final = -32042  # 2025-11-25 only
HEADER_MISMATCH: Final = -32020  # 2026-07-28
MISSING_REQUIRED_CLIENT_CAPABILITY: Final = -32021  # 2026-07-28
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022  # 2026-07-28


class Envelope(msgspec.Struct, gc=False):
    """Any single JSON-RPC message, payload left undecoded."""

    jsonrpc: Any = UNSET
    id: int | str | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class ErrorObject(msgspec.Struct, gc=False):
    """The ``error`` member of an error response."""

    code: int
    message: str
    data: Any = UNSET


class _Request(msgspec.Struct, gc=False):
    jsonrpc: str
    id: int | str
    method: str
    params: Any = UNSET


class _Notification(msgspec.Struct, gc=False):
    jsonrpc: str
    method: str
    params: Any = UNSET


class _Response(msgspec.Struct, gc=False):
    jsonrpc: str
    id: int | str
    result: Any


class _ErrorResponse(msgspec.Struct, gc=False):
    jsonrpc: str
    id: int | str | None
    error: ErrorObject


_envelope_decoder: Final = msgspec.json.Decoder(Envelope)
_batch_decoder: Final = msgspec.json.Decoder(list[Raw])
_error_decoder: Final = msgspec.json.Decoder(ErrorObject)
_any_decoder: Final = msgspec.json.Decoder()
_encoder: Final = msgspec.json.Encoder()

encode = _encoder.encode


def decode_envelope(data: bytes | Raw) -> Envelope:
    """Decode one message's envelope.

    Raises:
        msgspec.ValidationError: valid JSON of the wrong shape.
        msgspec.DecodeError: not JSON at all (or invalid UTF-8).
    """
    return _envelope_decoder.decode(data)


def decode_batch(data: bytes) -> list[Raw]:
    """Split a JSON array into its raw members (raises like :func:`decode_envelope`)."""
    return _batch_decoder.decode(data)


def decode_error(raw: Raw) -> ErrorObject:
    return _error_decoder.decode(raw)


def decode_any(data: bytes | Raw) -> Any:
    return _any_decoder.decode(data)


def salvage_id(data: bytes | Raw) -> int | str | None:
    """Best effort: the request id of a message whose envelope did not validate."""
    try:
        obj = _any_decoder.decode(data)
    except msgspec.DecodeError:
        return None
    if isinstance(obj, dict):
        value = obj.get("id")
        if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
            return value
    return None


def encode_request(id: int | str, method: str, params: Any = UNSET) -> bytes:
    return _encoder.encode(_Request("2.0", id, method, params))


def encode_notification(method: str, params: Any = UNSET) -> bytes:
    return _encoder.encode(_Notification("2.0", method, params))


def encode_response(id: int | str, result: Any) -> bytes:
    return _encoder.encode(_Response("2.0", id, result))


def encode_error(id: int | str | None, code: int, message: str, data: Any = UNSET) -> bytes:
    return _encoder.encode(
        _ErrorResponse("2.0", id, ErrorObject(code, message, UNSET if data is None else data))
    )
