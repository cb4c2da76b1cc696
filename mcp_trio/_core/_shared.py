"""What the concerns of the session core share: the ``_meta`` keys of the
stateless revisions, the records of its tables, and the params helpers.

* :class:`_InFlight`: a request the peer sent that we have not answered (a
  record of :class:`._in_flight.PeerRequests`, keyed by the peer's id verbatim).
* :class:`_Pending`: a request we sent that has no answer yet (a record of
  :class:`._outgoing.OutgoingRequests`, keyed by our id).
* :class:`_Batch`: the answers collected for one incoming batch, and the
  steps every concern takes to queue a reply (:func:`reply`,
  :func:`error_reply`: into the batch being answered, if any).

Rules kept here: params are decoded with the revision's type or refused as a
whole (:class:`_BadParams`, missing or not fitting); a progress token is a
string or an integer, never a boolean; per-request client capabilities
declare an extension only with an object under ``extensions``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._events import Event, Outgoing

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

_NOT_CANCELLABLE = frozenset({"initialize"})


class _Batch:
    """Answers collected for one incoming batch."""

    __slots__ = ("parts", "remaining")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.remaining = 0


class _InFlight:
    """A request we received and have not answered yet."""

    __slots__ = ("method", "token", "last_progress", "cancelled", "batch", "version", "modern", "client_caps")

    def __init__(
        self,
        method: str,
        token: int | str | None,
        batch: _Batch | None,
        version: str,
        modern: bool,
        client_caps: dict[str, Any] | None = None,
    ) -> None:
        self.method = method
        self.token = token
        self.last_progress: float | None = None
        self.cancelled = False
        self.batch = batch
        self.version = version
        self.modern = modern
        self.client_caps = client_caps


class _Pending:
    """A request we sent and have no answer for yet."""

    __slots__ = ("method", "spec", "token", "last_progress", "task")

    def __init__(self, method: str, spec: MethodSpec | None, token: RequestId | None, task: bool) -> None:
        self.method = method
        self.spec = spec
        self.token = token
        self.last_progress: float | None = None
        self.task = task


def reply(events: list[Event], batch: _Batch | None, id: RequestId | None, data: bytes) -> None:
    """Queue ``data``, the answer to ``id``: into ``batch`` when it is one being answered."""
    if batch is not None:
        batch.parts.append(data)
    else:
        events.append(Outgoing(data, related=id, final=True))


def error_reply(
    events: list[Event],
    batch: _Batch | None,
    id: RequestId | None,
    code: int,
    message: str,
    data: Any = None,
) -> None:
    """Queue the JSON-RPC error ``code`` for ``id`` (see :func:`reply`)."""
    reply(events, batch, id, rpc.encode_error(id, code, message, data))


def batch_done(entry: _InFlight, data: bytes | None) -> bytes | None:
    """``entry`` was answered with ``data`` (``None``: no answer is owed): the bytes
    to send, which for a member of a batch are the batch's reply once it is whole."""
    batch = entry.batch
    if batch is None:
        return data
    if data is not None:
        batch.parts.append(data)
    batch.remaining -= 1
    if batch.remaining == 0 and batch.parts:
        return b"[" + b",".join(batch.parts) + b"]"
    return None


class _BadParams(Exception):
    def __init__(self, missing: bool, detail: str = "") -> None:
        self.missing = missing
        self.detail = detail


def _decode_params(spec: MethodSpec, params_raw: Any) -> Any:
    """The params Struct of a message (``None`` when absent and optional).

    Raises:
        _BadParams: required params are missing, or they fail the type.
    """
    if params_raw is UNSET:
        if spec.params_required:
            raise _BadParams(missing=True)
        return None
    if spec.params is None:
        return None
    try:
        return _versions.decoder_for(spec.params).decode(params_raw)
    except msgspec.ValidationError as exc:
        raise _BadParams(missing=False, detail=_path_message(exc, "$.params")) from None


def _path_message(exc: msgspec.ValidationError, where: str) -> str:
    """msgspec's error text with its path rooted at ``where`` (named even at the top level)."""
    return _versions.error_message(exc, where)


def _progress_token(params: Any) -> int | str | None:
    """The valid ``_meta.progressToken`` of decoded params, if any."""
    meta = getattr(params, "meta", None)
    if isinstance(meta, dict):
        candidate = meta.get("progressToken")
        if _valid_token(candidate):
            return candidate
    return None


@cache  # msgspec's fields() evaluates the type hints again on every call
def _has_meta_dict(params_type: type) -> bool:
    """``params_type`` keeps ``_meta`` as a plain dict in ``.meta`` (what the
    ``_meta`` peek of the two-pass path reads)."""
    for field in msgspec.structs.fields(params_type):
        if field.name == "meta":
            return field.encode_name == "_meta" and field.type in (
                dict[str, Any],
                dict[str, Any] | msgspec.UnsetType,
            )
    return False


def _valid_token(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _declares(client_caps: dict[str, Any] | None, extension: str) -> bool:
    """Whether per-request client capabilities declare ``extension``."""
    if not isinstance(client_caps, dict):
        return False
    declared = client_caps.get("extensions")
    return isinstance(declared, dict) and isinstance(declared.get(extension), dict)
