"""The contract between the session engine and every transport.

A transport moves whole JSON-RPC messages (one :class:`Frame` each) and knows
framing, not MCP.  Both directions use :class:`trio.abc.Channel` semantics:

* ``await channel.receive()`` returns the next incoming :class:`Frame`, raises
  :class:`trio.EndOfChannel` when the peer is gone for good, and
  :class:`trio.ClosedResourceError` after ``aclose()``.
* ``await channel.send(frame)`` writes one outgoing message.  Exactly one task
  (the engine's writer) calls it.
* A framing problem never raises from ``receive``: the transport skips the bad
  bytes and hands over a frame whose ``error`` says what was wrong, so the
  engine can answer it with a JSON-RPC error and carry on.
"""

from __future__ import annotations

from typing import TypeAlias

import msgspec
import trio

__all__ = ["CLOSE_STREAM", "Frame", "MessageChannel", "RequestId"]

CLOSE_STREAM = "close-stream"

RequestId: TypeAlias = int | str


class Frame(msgspec.Struct, frozen=True):
    """One JSON-RPC message (or batch) as bytes, without framing.

    Attributes:
        data: The UTF-8 JSON text of the message, with no trailing newline.
        related: For outgoing frames, the id of the incoming request this
            message belongs to (a response, or a notification or request sent
            while handling it).  Streamable HTTP uses it to pick the SSE stream;
            stdio ignores it.
        final: True on the response that completes ``related``.
        error: Set by a transport on an incoming frame it could not deliver
            whole (for example a message over the size limit); ``data`` then
            holds whatever prefix is useful for diagnostics, possibly empty.
        control: An instruction to the transport instead of a message (``data``
            is empty).  ``"close-stream"``: end the response stream of the
            request ``related`` without ending the request, so the peer
            resumes it (Streamable HTTP polling, 2025-11-25).  The engine only
            sends controls to a channel whose ``stream_controls`` attribute
            is true.
    """

    data: bytes
    related: RequestId | None = None
    final: bool = False
    error: str | None = None
    control: str | None = None


MessageChannel: TypeAlias = trio.abc.Channel[Frame]
