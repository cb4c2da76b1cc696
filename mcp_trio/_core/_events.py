"""What the sans-IO session core tells its driver.

``SessionCore.receive(data)`` returns a list of these.  They are plain data;
the driver (the trio engine, or a test) decides what to do with each.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from ..types._wire import MethodSpec, RequestId

__all__ = [
    "CancelRequested",
    "Event",
    "Outgoing",
    "PeerInitialized",
    "ProgressReceived",
    "ProtocolViolation",
    "RequestReceived",
    "NotificationReceived",
    "ResponseReceived",
]


class Outgoing(msgspec.Struct, frozen=True, gc=False):
    """Bytes the core wants written (an automatic reply, e.g. an error).

    ``related``/``final`` have the meaning of :class:`mcp_trio.transports.Frame`.
    """

    data: bytes
    related: RequestId | None = None
    final: bool = False


class RequestReceived(msgspec.Struct, frozen=True):
    """A valid request the application must answer (``respond`` or ``error``).

    Attributes:
        id: The request id, exactly as sent.
        method: The method name.
        params: The decoded params Struct (a ``dict`` for custom methods, or
            ``None`` when the message had none).
        spec: The registry entry (``None`` for custom methods).
        version: The protocol revision the request is validated against.
        progress_token: ``_meta.progressToken`` if the caller asked for progress.
        client_capabilities: For 2026-07-28 requests, the capabilities the
            client declared in this request's ``_meta`` (else ``None``: use the
            session's).
    """

    id: RequestId
    method: str
    params: Any
    spec: MethodSpec | None
    version: str
    progress_token: int | str | None = None
    client_capabilities: dict[str, Any] | None = None


class NotificationReceived(msgspec.Struct, frozen=True):
    """A valid notification for the application (not one the core consumed)."""

    method: str
    params: Any
    spec: MethodSpec | None
    version: str


class ResponseReceived(msgspec.Struct, frozen=True):
    """The answer to one of our requests.

    Exactly one of ``result``/``error``/``invalid`` is meaningful: ``error`` is
    an ``McpError`` the peer sent, ``invalid`` a ``RemoteProtocolError`` when
    the result did not validate against the revision's types.
    """

    id: RequestId
    method: str
    result: Any = None
    error: Exception | None = None


class CancelRequested(msgspec.Struct, frozen=True):
    """The peer cancelled a request we are handling; stop it and send nothing."""

    id: RequestId
    reason: str | None = None


class ProgressReceived(msgspec.Struct, frozen=True):
    """Progress for one of our pending requests."""

    id: RequestId
    progress: float
    total: float | None = None
    message: str | None = None


class PeerInitialized(msgspec.Struct, frozen=True):
    """The handshake finished (or, for 2026-07-28, the era was settled).

    Attributes:
        version: The negotiated protocol revision.
        peer_info: The peer's ``Implementation`` object as a dict.
        peer_capabilities: The peer's capabilities as a dict.
        instructions: The server's instructions (client side only).
    """

    version: str
    peer_info: dict[str, Any]
    peer_capabilities: dict[str, Any]
    instructions: str | UnsetType | None = UNSET


class ProtocolViolation(msgspec.Struct, frozen=True):
    """Something the peer sent was dropped (no reply is owed); for logging."""

    message: str
    data: bytes = b""


Event = (
    Outgoing
    | RequestReceived
    | NotificationReceived
    | ResponseReceived
    | CancelRequested
    | ProgressReceived
    | PeerInitialized
    | ProtocolViolation
)
