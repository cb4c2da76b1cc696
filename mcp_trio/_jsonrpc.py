"""JSON-RPC 2.0 envelope, error codes and the shared encoder/decoders.

No framing and no MCP semantics live here: only the shape every message has.
Decoding is two-phase: the :class:`Envelope` keeps ``params``/``result``/
``error`` as :class:`msgspec.Raw`, and the session core decodes them later
with the type the method registry names.  When the core already knows the
types to expect (the requests of a settled session, the answer to its one
pending request), :func:`request_decoder` and :func:`response_decoder` do
both in one pass; they accept less than the two phases do, and whatever they
refuse goes the two-phase way, which names what is wrong.
"""

from __future__ import annotations

from typing import Any, Final, Union

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
    "request_decoder",
    "request_method",
    "response_decoder",
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


class _Message(msgspec.Struct, gc=False, tag_field="jsonrpc", tag="2.0"):
    """What every message we send begins with: ``"jsonrpc": "2.0"`` (a tag, written first)."""


class _Request(_Message):
    id: int | str
    method: str
    params: Any = UNSET


class _Notification(_Message):
    method: str
    params: Any = UNSET


class _Response(_Message):
    id: int | str
    result: Any


class _ErrorResponse(_Message):
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


_response_decoders: dict[type, msgspec.json.Decoder[Any]] = {}


def response_decoder(result_type: type) -> msgspec.json.Decoder[Any]:
    """A one-pass decoder for a response whose result should be ``result_type``.

    Its Struct has the fields of :class:`Envelope` with ``result`` typed, so the
    envelope and the result are parsed together instead of the result being
    skipped as :class:`msgspec.Raw` and parsed again.  It accepts a subset of
    what the two passes accept: on any error the caller falls back to
    :func:`decode_envelope`, which then names what is wrong.  Built once per type.
    """
    decoder = _response_decoders.get(result_type)
    if decoder is None:
        struct = msgspec.defstruct(
            f"Response[{result_type.__name__}]",
            [
                ("jsonrpc", Any, UNSET),
                ("id", int | str | None | UnsetType, UNSET),
                ("method", str | UnsetType, UNSET),
                ("params", Raw | UnsetType, UNSET),
                ("result", result_type | UnsetType, UNSET),
                ("error", Raw | UnsetType, UNSET),
            ],
            gc=False,
        )
        decoder = _response_decoders[result_type] = msgspec.json.Decoder(struct)
    return decoder


_request_structs: dict[tuple[str, type], type] = {}
_request_decoders: dict[tuple[tuple[str, type], ...], msgspec.json.Decoder[Any]] = {}


def _request_struct(method: str, params_type: type) -> type:
    """The envelope of a ``method`` request with typed params, tagged by ``method``."""
    struct = _request_structs.get((method, params_type))
    if struct is None:
        struct = _request_structs[(method, params_type)] = msgspec.defstruct(
            f"Request[{method}]",
            [
                ("jsonrpc", Any, UNSET),
                ("id", int | str | None | UnsetType, UNSET),
                ("params", params_type | UnsetType, UNSET),
                ("result", Raw | UnsetType, UNSET),
                ("error", Raw | UnsetType, UNSET),
            ],
            tag_field="method",
            tag=method,
            gc=False,
        )
    return struct


def request_decoder(params_types: dict[str, type]) -> msgspec.json.Decoder[Any]:
    """A one-pass decoder for requests of the methods in ``params_types`` (method → params type).

    The envelopes form a union tagged by ``method`` (msgspec finds the key
    wherever it is and rejects a repeated one with another value), so the
    params are decoded with their type while the envelope is read.  The
    method of a decoded message is ``request_method(message)``.  Like
    :func:`response_decoder` it accepts a subset of what the two passes
    accept: on any error the caller falls back to :func:`decode_envelope`.
    Built once per set of methods and types.
    """
    key = tuple(sorted(params_types.items()))
    decoder = _request_decoders.get(key)
    if decoder is None:
        members = tuple(_request_struct(m, t) for m, t in key)
        if not members:
            raise ValueError("no methods to decode")
        union = members[0] if len(members) == 1 else Union[members]  # noqa: UP007
        decoder = _request_decoders[key] = msgspec.json.Decoder(union)
    return decoder


def request_method(message: Any) -> str:
    """The method of a message decoded by :func:`request_decoder` (its tag)."""
    tag: str = type(message).__struct_config__.tag
    return tag


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
    return _encoder.encode(_Request(id, method, params))


def encode_notification(method: str, params: Any = UNSET) -> bytes:
    return _encoder.encode(_Notification(method, params))


def encode_response(id: int | str, result: Any) -> bytes:
    return _encoder.encode(_Response(id, result))


def encode_error(id: int | str | None, code: int, message: str, data: Any = UNSET) -> bytes:
    return _encoder.encode(_ErrorResponse(id, ErrorObject(code, message, UNSET if data is None else data)))
