"""What the Streamable HTTP client reads from a message it sends: the kind, the
request ids and methods, the ``_meta`` protocol version, the ``Mcp-Name``
source, a tool call's arguments, a cancellation's request id (a peek, not a
full decode), and whether a revision is one without the initialize handshake.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from .... import _jsonrpc as rpc
from ..._base import RequestId

#: Where ``Mcp-Name`` comes from (the Tasks extension routes its requests by task id).
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FIRST_STATELESS = "2026-07-28"


def _is_modern(version: Any) -> bool:
    """True for revisions without the initialize handshake (2026-07-28 on)."""
    if not isinstance(version, str):
        return False
    return version == "draft" or (bool(_DATE.fullmatch(version)) and version >= _FIRST_STATELESS)


# ------------------------------------------------------------- peeking


class _ParamsPeek(msgspec.Struct, gc=False):
    name: Any = UNSET
    uri: Any = UNSET
    arguments: Raw | UnsetType = UNSET
    requestId: Any = UNSET  # noqa: N815 - the wire name
    taskId: Any = UNSET  # noqa: N815 - the wire name
    meta: Any = msgspec.field(default=UNSET, name="_meta")


class _InitializePeek(msgspec.Struct, gc=False):
    protocolVersion: Any = UNSET  # noqa: N815 - the wire name


_params_decoder = msgspec.json.Decoder(_ParamsPeek)
_initialize_decoder = msgspec.json.Decoder(_InitializePeek)


class _Message:
    """What the transport needs to know about one outgoing message."""

    __slots__ = ("kind", "method", "methods", "version", "name", "arguments", "cancel_id")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # request | notification | response | batch | invalid
        self.method: str | None = None
        self.methods: dict[RequestId, str] = {}  # request id -> method
        self.version: str | None = None  # the request's _meta protocol version
        self.name: str | None = None  # Mcp-Name source
        self.arguments: Raw | None = None
        self.cancel_id: RequestId | None = None


def _peek_one(data: bytes | Raw) -> _Message:
    try:
        env = rpc.decode_envelope(data)
    except _BAD_JSON:
        return _Message("invalid")
    if isinstance(env.method, str):
        msg = _Message("notification" if env.id is UNSET or env.id is None else "request")
        msg.method = env.method
        if msg.kind == "request":
            assert isinstance(env.id, int | str)
            msg.methods[env.id] = env.method
        if env.params is not UNSET:
            try:
                params = _params_decoder.decode(env.params)
            except _BAD_JSON:
                return msg
            if isinstance(params.meta, dict):
                version = params.meta.get("io.modelcontextprotocol/protocolVersion")
                if isinstance(version, str):
                    msg.version = version
            key = _NAME_PARAM.get(env.method)
            if key is not None:
                value = getattr(params, key)
                if isinstance(value, str):
                    msg.name = value
            if env.method == "tools/call" and isinstance(params.arguments, Raw):
                msg.arguments = params.arguments
            if env.method == "notifications/cancelled" and isinstance(params.requestId, int | str):
                msg.cancel_id = params.requestId
        return msg
    return _Message("response")


def _peek(data: bytes) -> _Message:
    if data.lstrip()[:1] != b"[":
        return _peek_one(data)
    try:
        items = rpc.decode_batch(data)
    except _BAD_JSON:
        return _Message("invalid")
    batch = _Message("batch")
    for raw in items:
        batch.methods.update(_peek_one(raw).methods)
    return batch


#: What decoding a peer's bytes may raise: not JSON, not the expected shape,
#: nested deeper than the decoder goes, or not UTF-8 inside a part decoded late.
_BAD_JSON = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)
