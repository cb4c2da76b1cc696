"""Exceptions raised by mcp_trio, named by whose fault they are (h11 style)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConnectionClosed",
    "LocalProtocolError",
    "McpError",
    "ProtocolError",
    "RemoteProtocolError",
    "ToolError",
]


class McpError(Exception):
    """A JSON-RPC error object, raised or received.

    A handler raises it to answer a request with that error; a caller receives
    it when the peer answered its request with an error.

    Attributes:
        code: The JSON-RPC error code (an ``int``; see :mod:`mcp_trio.errors`).
        message: A short human-readable description.
        data: Optional extra information (any JSON value), or ``None``.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.code = code
        self.message = message
        self.data = data

    def __str__(self) -> str:
        text = f"{self.message} (code {self.code})"
        if self.data is not None:
            text += f": {self.data!r}"
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r}, {self.data!r})"


class ToolError(Exception):
    """Raised by a tool to fail with this message: the result is a tool error
    (``isError: true``) whose text is the message as written, for the model to read,
    logged at INFO without a traceback (an expected failure, not a bug).  Any other
    exception a tool raises is answered as a failure too, with its type, and logged as an
    error with its traceback; with ``Server(mask_error_details=True)`` its text is hidden
    behind an error id the log has."""


class ProtocolError(Exception):
    """Base class of protocol violations."""


class LocalProtocolError(ProtocolError):
    """This side tried to do something the protocol forbids.

    Raised to *your* code: sending a request the peer did not advertise a
    capability for, a progress value that does not increase, a request before
    the handshake finished, and so on.  Nothing was sent.
    """


class RemoteProtocolError(ProtocolError):
    """The peer broke the protocol (for example it answered with an invalid result)."""


class ConnectionClosed(Exception):
    """The session ended (the peer went away or the session was closed) before an answer came."""
