"""What both ends of MCP over WebSocket share: the channel interface and the rules of the wire.

:class:`WebSocketChannel` is one connection as a message channel (one frame
per text message), with its close code and reason; the constants here are the
subprotocol name, the default server message limit, the read size, the
close codes an endpoint may send (:func:`_check_code`) and the checks on
limits and timeouts (:func:`_check_limits`).  The framing over wsproto is in
:mod:`._wsproto_channel`, the one over ASGI in :mod:`._asgi`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import trio
from wsproto.frame_protocol import CloseReason as CloseReason

from .._base import ChannelTraits, Frame

log = logging.getLogger("mcp_trio.websocket")

#: The subprotocol name of MCP over WebSocket.
SUBPROTOCOL = "mcp"
#: Default limit on one incoming message at the server, in bytes (as
#: Streamable HTTP's ``max_body_size``); the client's is ``DEFAULT_MAX_MESSAGE_SIZE``.
DEFAULT_SERVER_MAX_MESSAGE_SIZE = 4 * 1024 * 1024

_READ_SIZE = 65536
_REJECT_BODY_LIMIT = 64 * 1024  # bytes of a refused handshake's body kept for the error
_SERVER_GOING_AWAY = (CloseReason.GOING_AWAY, "server shutting down")
# Codes an endpoint may put in a close frame (RFC 6455, 7.4; 1012-1014 from the IANA registry).
_SENDABLE = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014})


def _check_code(code: int) -> None:
    if code not in _SENDABLE and not 3000 <= code <= 4999:
        raise ValueError(f"{code} is not a close code an endpoint may send")


def _check_limits(
    max_message_size: int,
    keepalive_interval: float | None,
    keepalive_timeout: float,
    close_timeout: float,
) -> None:
    if max_message_size < 1:
        raise ValueError("max_message_size must be positive")
    if keepalive_interval is not None and keepalive_interval <= 0:
        raise ValueError("keepalive_interval must be positive (or None)")
    if keepalive_timeout <= 0 or close_timeout <= 0:
        raise ValueError("keepalive_timeout and close_timeout must be positive")


class WebSocketChannel(trio.abc.Channel[Frame], ChannelTraits):
    """One WebSocket connection as a message channel: one frame per text message.

    Attributes:
        subprotocol: The subprotocol agreed in the handshake (``"mcp"``, or
            ``None`` when the client offered none).
        close_code: How the connection ended (``None`` while it is open): the
            code of the close frame of whichever side closed first, or 1006
            when it ended without one.
        close_reason: The reason given with ``close_code``.
    """

    subprotocol: str | None = None
    close_code: int | None = None
    close_reason: str = ""

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "") -> None:
        """Close the connection with ``code``: send the close frame, wait (at
        most ``close_timeout`` seconds) for the peer's, then drop the
        connection.  Does nothing if it is already closing."""
        raise NotImplementedError

    async def _run(self) -> None:
        """The connection's background work (reading, keepalive); returns when it is over."""

    async def _going_away(self, cancelled: bool) -> None:
        """Close with 1001 because the server stops (``cancelled``: by cancellation)."""
        await self.close(*_SERVER_GOING_AWAY)

    def _set_close(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code = int(code)
            self.close_reason = reason
            # how the connection ended, for the errors of calls still waiting (None while open)
            why = f": {reason}" if reason else ""
            self.end_reason = f"WebSocket close code {self.close_code}{why}"


def _joined_headers(pairs: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw header pairs as a dict: lower-case names, repeated ones joined with ``", "``."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers
