"""MCP over WebSocket (a custom transport): server and client, on wsproto and trio.

The MCP specification defines stdio and Streamable HTTP; this transport is an
extension for applications that already speak WebSocket (browsers, gateways).
Sessions over it have the same lifecycle and version negotiation as over any
other transport: the engine does not know which transport it runs on.

Framing rules:

* One JSON-RPC message (or a batch, in 2025-03-26) per **text** message,
  UTF-8, possibly fragmented into several frames.  The subprotocol is
  ``mcp``: a client offers it (``Sec-WebSocket-Protocol: mcp``) and the
  server selects it.  A client that offers no subprotocol is accepted
  (browsers and gateways often cannot set one) unless the endpoint has
  ``require_subprotocol=True``; a client that offers only other
  subprotocols is refused with 400.
* Text that is not valid JSON is answered with a -32700 error and the
  session goes on, as on stdio.
* These close the connection, with a close code that says why (RFC 6455,
  section 7.4.1): a binary message 1003 (unsupported data), text that is not
  valid UTF-8 1007 (invalid payload data), a message over
  ``max_message_size`` 1009 (message too big), a framing error 1002
  (protocol error), no pong within ``keepalive_timeout`` 1011, a server
  shutting down 1001 (going away), the end of a session 1000.
* Keepalive: every ``keepalive_interval`` seconds a ping; a peer that does
  not answer within ``keepalive_timeout`` is disconnected.  Time the local
  session spends not reading (its own backpressure) does not count against
  the peer.
* Host and Origin are checked during the handshake, with the allow-lists of
  Streamable HTTP (421 / 403), so a refused browser page never gets a
  connection.
* Authorization (``auth=``, e.g. :class:`mcp_trio.auth.server.ResourceServer`):
  the upgrade request must carry a bearer token; a refusal is the same HTTP
  answer (401 / 403 / 400 with ``WWW-Authenticate``) as Streamable HTTP
  gives, before any upgrade.  What it admits is every request's ``ctx.auth``
  on that connection; each incoming message may be screened (per-tool
  scopes: answered with a JSON-RPC error instead of reaching the session);
  when the grant expires the connection is closed with 1008 (policy
  violation), since a WebSocket cannot be challenged again.  Both front
  doors can also answer plain HTTP ``GET`` requests on extra ``routes``
  (the protected resource metadata).

Server side: a :class:`WebSocketEndpoint` holds the policy and the open
connections; two front doors serve it:

* :class:`WebSocketASGI`, an ASGI application for hypercorn (or any ASGI
  server under trio), which can pass ``http`` and ``lifespan`` scopes to
  another ASGI application, such as the Streamable HTTP
  :class:`~mcp_trio.transports.http.server.ASGIApp`, so one server offers
  both on one port (:func:`serve_hypercorn_websocket` runs it);
* :func:`serve_wsproto`, a lean server on wsproto over trio sockets (TLS
  with ``ssl_context``).

Each connection is served by the ``serve_session`` callable (a
:meth:`Server.serve_session <mcp_trio.server.Server.serve_session>`) until
it ends.  When the server is cancelled or :meth:`WebSocketEndpoint.shutdown`
is called, every connection is closed with 1001 first.

What only the wsproto front door does exactly: hypercorn answers pings and
sends its own (``websocket_ping_interval``) but tells an application neither
about pongs nor about framing errors.  Behind hypercorn, a connection that
sends invalid UTF-8 or breaks the framing is dropped without a close frame,
and a silent peer is disconnected after ``keepalive_interval +
keepalive_timeout`` seconds without any data (hypercorn's ``read_timeout``;
not set when Streamable HTTP shares the server, since an SSE stream's client
sends nothing for long stretches, so there only pings are sent).  hypercorn
also writes without a timeout, in a call that cannot be cancelled, so a peer
that stops reading holds its connection until TCP gives up; the wsproto front
door drops it when the keepalive timeout passes.

Client side: :func:`open_websocket_client` connects (``ws://`` or ``wss://``)
and yields a :class:`WebSocketChannel`.  When the connection drops, the
channel ends at once, so the session fails every pending request with
:class:`~mcp_trio.ConnectionClosed`; reconnecting is the caller's choice
(open a new client).  Leaving the block closes the connection cleanly (1000),
even when the block is cancelled.

Neither side negotiates ``permessage-deflate``.
"""

from __future__ import annotations

import logging
import math
import ssl
import struct
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Pong,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ... import _jsonrpc as rpc
from .._base import Frame
from ..http._http11 import Failure, Pool, Target, close_stream, excerpt
from ..http.client import _AUTH_RETRIES, HTTPAuth
from ..http.server import (
    DEFAULT_ALLOWED_HOSTS,
    ASGIApp,
    Handler,
    HostGuard,
    HttpRequest,
    Responder,
    serve_hypercorn,
)
from ..stdio import DEFAULT_MAX_MESSAGE_SIZE

__all__ = [
    "DEFAULT_SERVER_MAX_MESSAGE_SIZE",
    "SUBPROTOCOL",
    "Admission",
    "CloseReason",
    "HandshakeAuth",
    "WebSocketASGI",
    "WebSocketChannel",
    "WebSocketConnectError",
    "WebSocketEndpoint",
    "open_websocket_client",
    "serve_hypercorn_websocket",
    "serve_wsproto",
]

log = logging.getLogger("mcp_trio.websocket")

#: The subprotocol name of MCP over WebSocket.
SUBPROTOCOL = "mcp"
#: Default limit on one incoming message at the server, in bytes (as
#: Streamable HTTP's ``max_body_size``); the client's is ``DEFAULT_MAX_MESSAGE_SIZE``.
DEFAULT_SERVER_MAX_MESSAGE_SIZE = 4 * 1024 * 1024

ServeSession = Callable[..., Awaitable[Any]]

_READ_SIZE = 65536
_REJECT_BODY_LIMIT = 64 * 1024  # bytes of a refused handshake's body kept for the error
_RESERVED_HEADERS = frozenset(
    {"host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
     "sec-websocket-protocol", "sec-websocket-extensions", "sec-websocket-accept"}
)
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


class WebSocketConnectError(Exception):
    """The WebSocket could not be opened: no connection, a TLS failure, or a
    refused or invalid handshake.

    Attributes:
        status: The HTTP status of a refused handshake (``None`` otherwise).
        body: The start of the refusal's body (at most 64 KiB).
        headers: The refusal's headers (lower-case names, repeated ones
            joined with ``", "``): ``WWW-Authenticate`` for a 401 / 403.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


# ------------------------------------------------------------------ channels


class WebSocketChannel(trio.abc.Channel[Frame]):
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

    @property
    def end_reason(self) -> str | None:
        """How the connection ended, for the errors of calls still waiting (``None`` while open)."""
        if self.close_code is None:
            return None
        why = f": {self.close_reason}" if self.close_reason else ""
        return f"WebSocket close code {self.close_code}{why}"

    def _set_close(self, code: int, reason: str) -> None:
        if self.close_code is None:
            self.close_code = int(code)
            self.close_reason = reason


class _WsprotoChannel(WebSocketChannel):
    """A WebSocket over a trio stream, framed by wsproto (client and lean server).

    A reader task (:meth:`_run`) reads the socket, answers pings, checks
    incoming messages and queues them (at most ``inbound_buffer``: beyond that
    it stops reading, which is the session's backpressure).  Writes are
    serialized by a lock; a pong that cannot be written at once is written by
    whoever holds the lock when its write ends.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        ws: WSConnection,
        *,
        client: bool,
        subprotocol: str | None,
        max_message_size: int,
        keepalive_interval: float | None,
        keepalive_timeout: float,
        close_timeout: float,
        inbound_buffer: int,
    ) -> None:
        _check_limits(max_message_size, keepalive_interval, keepalive_timeout, close_timeout)
        self._stream = stream
        self._ws = ws
        self._client = client
        self.subprotocol = subprotocol
        self.max_message_size = max_message_size
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_timeout = close_timeout
        self._in_send, self._in_recv = trio.open_memory_channel[Frame](inbound_buffer)
        self._lock = trio.Lock()
        self._parts: list[bytes] = []
        self._size = 0
        self._pending_pong: bytes | None = None
        self._ping_payload: bytes | None = None
        self._pong = trio.Event()
        self._pings = 0
        self._close_sent = False
        self._close_received = False
        self._parse_broken = False  # wsproto cannot parse any more: discard what comes
        self._done_reading = False
        self._linger_until = math.inf  # stop reading at this time (closing)
        self._stalled = False  # the reader waits for the session to take a message
        self._writing = False  # a write is in progress (may be blocked by the peer)
        self._started = False
        self._reader_scope = trio.CancelScope()
        self._finished = trio.Event()  # the reader is done and the stream closed
        self._closed = False  # aclose() was called

    # ---- the session's side

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        return await self._in_recv.receive()

    def buffered(self) -> int:
        """Messages received and not yet taken by :meth:`receive` (the
        session's reader relay, see docs/engine.md, uses it)."""
        return self._in_recv.statistics().current_buffer_used

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if value.control is not None:
            return  # no stream controls here (``stream_controls`` is not set)
        await self._write(TextMessage(data=value.data.decode("utf-8")))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.close()
        finally:
            self._in_recv.close()

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "") -> None:
        _check_code(code)
        if not (self._close_sent or self._close_received or self._finished.is_set()):
            self._set_close(code, reason)
            self._end_input()
            await self._send_close(code, reason)
        with trio.move_on_after(self.close_timeout):
            await self._finished.wait()
        if not self._finished.is_set():
            self._abort("the peer did not complete the close handshake")
            if not self._started:  # nothing reads this connection: nothing else will end it
                self._finished.set()
            with trio.move_on_after(self.close_timeout):
                await self._finished.wait()

    # ---- writing

    def _broken(self) -> trio.BrokenResourceError:
        if self.close_code is None:
            return trio.BrokenResourceError("the WebSocket is closing")
        why = f": {self.close_reason}" if self.close_reason else ""
        return trio.BrokenResourceError(f"the WebSocket is closed (code {self.close_code}{why})")

    async def _write(self, event: Any) -> None:
        async with self._lock:
            if self._close_sent or self._close_received or self._finished.is_set():
                raise self._broken()
            try:
                data = self._ws.send(event)
            except LocalProtocolError:
                raise self._broken() from None
            await self._send_bytes(data)
            await self._flush_pong()

    async def _send_bytes(self, data: bytes) -> None:
        """Write while holding the lock; a failure is the end of the connection."""
        self._writing = True
        written = False
        try:
            await self._stream.send_all(data)
            written = True
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._lost(f"the connection broke while sending: {exc or type(exc).__name__}")
            raise self._broken() from None
        finally:
            self._writing = False
            if not written and not self._finished.is_set():
                # Cancelled: part of a frame may be out, nothing can follow it.
                self._abort("a write was interrupted")

    async def _flush_pong(self) -> None:
        payload = self._pending_pong
        if payload is None or self._close_sent:
            return
        self._pending_pong = None
        try:
            data = self._ws.send(Pong(payload=payload))
        except LocalProtocolError:
            return
        await self._send_bytes(data)

    async def _send_pong(self, payload: bytes) -> None:
        # Only the newest ping needs an answer (RFC 6455, 5.5.3).  If a write
        # is in progress its writer sends the pong; the reader never waits
        # behind a blocked writer.
        self._pending_pong = payload
        if self._lock.locked():
            return
        async with self._lock:
            try:
                await self._flush_pong()
            except trio.BrokenResourceError:
                pass

    async def _send_close(self, code: int, reason: str) -> None:
        """Send our close frame within ``close_timeout``, else drop the connection."""
        with trio.move_on_after(self.close_timeout) as timer:
            async with self._lock:
                if self._close_sent or self._finished.is_set():
                    return
                try:
                    data = self._ws.send(CloseConnection(code=code, reason=reason or None))
                except LocalProtocolError:
                    return
                self._close_sent = True
                try:
                    await self._send_bytes(data)
                except trio.BrokenResourceError:
                    return
        if timer.cancelled_caught:
            self._abort("the close frame could not be sent in time")

    # ---- ending

    def _end_input(self) -> None:
        """No more messages for the session (those queued are still delivered)."""
        self._in_send.close()

    def _lost(self, why: str) -> None:
        self._set_close(CloseReason.ABNORMAL_CLOSURE, why)
        self._done_reading = True
        self._end_input()

    def _abort(self, why: str) -> None:
        """Drop the connection now, without a close handshake."""
        self._lost(why)
        close_stream(self._stream)
        self._reader_scope.cancel()

    async def _fail(self, code: int, reason: str) -> None:
        """Fail the connection (RFC 6455, 7.1.7): send a close frame with ``code``,
        keep reading (and discarding) briefly for the peer's, then close."""
        if self._close_sent or self._close_received:
            return
        log.info("closing the WebSocket: %s (%d)", reason, code)
        self._set_close(code, reason)
        self._end_input()
        self._parts.clear()
        await self._send_close(code, reason)
        if self._parse_broken and isinstance(self._stream, trio.abc.HalfCloseableStream):
            # We cannot read the peer's close frame any more: end our side now
            # (after our close frame), so the peer sees the end at once.
            with trio.move_on_after(self.close_timeout):
                async with self._lock:
                    try:
                        await self._stream.send_eof()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
        self._linger_until = min(self._linger_until, trio.current_time() + self.close_timeout)

    def _handshake_done(self) -> None:
        """Both close frames went: the server closes the TCP connection, the
        client waits (briefly) for the server to close it."""
        if self._client:
            self._linger_until = min(self._linger_until, trio.current_time() + self.close_timeout)
        else:
            self._done_reading = True

    # ---- reading

    async def _run(self) -> None:
        self._started = True
        try:
            async with trio.open_nursery() as nursery:
                if self.keepalive_interval is not None:
                    nursery.start_soon(self._keepalive)
                with self._reader_scope:
                    await self._read()
                nursery.cancel_scope.cancel()
        finally:
            self._end_input()
            with trio.move_on_after(self.close_timeout, shield=True):
                try:
                    await self._stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
            self._set_close(
                CloseReason.ABNORMAL_CLOSURE, "the connection closed without a close frame"
            )
            self._finished.set()

    async def _read(self) -> None:
        await self._process()  # frames that came with the handshake
        while not self._done_reading:
            with trio.move_on_at(self._linger_until) as linger:
                try:
                    data = await self._stream.receive_some(_READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    self._lost(f"the connection broke: {exc or type(exc).__name__}")
                    return
            if linger.cancelled_caught:
                return
            if not data:
                self._lost("the connection closed without a close frame")
                return
            if self._parse_broken or self._ws.state is ConnectionState.CLOSED:
                continue  # lingering after a failure or the close handshake: discard
            self._ws.receive_data(data)
            await self._process()

    async def _process(self) -> None:
        for event in self._ws.events():
            await self._on_event(event)
            if self._done_reading:
                return

    async def _on_event(self, event: Any) -> None:
        closing = self._close_sent or self._close_received
        if isinstance(event, TextMessage):
            if closing:
                return
            chunk = event.data.encode("utf-8")
            self._size += len(chunk)
            if self._size > self.max_message_size:
                await self._fail(
                    CloseReason.MESSAGE_TOO_BIG,
                    f"message larger than {self.max_message_size} bytes",
                )
                return
            self._parts.append(chunk)
            if event.message_finished:
                data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                self._parts = []
                self._size = 0
                self._stalled = True
                try:
                    await self._in_send.send(Frame(data))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass  # the session has stopped listening
                finally:
                    self._stalled = False
        elif isinstance(event, BytesMessage):
            if not closing:
                await self._fail(
                    CloseReason.UNSUPPORTED_DATA,
                    "binary messages are not accepted: send each JSON-RPC message as text",
                )
        elif isinstance(event, Ping):
            if not closing:
                await self._send_pong(bytes(event.payload))
        elif isinstance(event, Pong):
            if self._ping_payload is not None and bytes(event.payload) == self._ping_payload:
                self._pong.set()
        elif isinstance(event, CloseConnection):
            state = self._ws.state
            if state is ConnectionState.REMOTE_CLOSING:
                # The peer closes first: answer with its code.
                self._close_received = True
                self._set_close(event.code, event.reason or "")
                self._end_input()
                with trio.move_on_after(self.close_timeout):
                    async with self._lock:
                        try:
                            data = self._ws.send(event.response())
                        except LocalProtocolError:
                            data = b""
                        if data:
                            try:
                                await self._send_bytes(data)
                            except trio.BrokenResourceError:
                                return
                self._handshake_done()
            elif state is ConnectionState.CLOSED:
                self._close_received = True  # the answer to our close frame
                self._handshake_done()
            else:
                # wsproto could not parse what came (the event carries why).
                self._parse_broken = True
                await self._fail(event.code, event.reason or "invalid frame")

    # ---- keepalive

    async def _keepalive(self) -> None:
        assert self.keepalive_interval is not None
        while True:
            await trio.sleep(self.keepalive_interval)
            if self._close_sent or self._close_received:
                return
            self._pings += 1
            payload = struct.pack("!I", self._pings & 0xFFFFFFFF)
            self._ping_payload = payload
            self._pong = trio.Event()
            deadline = trio.current_time() + self.keepalive_timeout
            with trio.move_on_at(deadline):
                try:
                    await self._write(Ping(payload=payload))
                except trio.BrokenResourceError:
                    return
            while not self._pong.is_set():
                with trio.move_on_at(deadline):
                    await self._pong.wait()
                if self._pong.is_set() or self._close_sent or self._close_received:
                    break
                if self._stalled and not self._writing:
                    # Our session is not reading (backpressure): the pong may be
                    # waiting behind its messages.  Not the peer's fault.
                    deadline = trio.current_time() + self.keepalive_timeout
                    continue
                why = f"keepalive ping timeout: no pong within {self.keepalive_timeout} s"
                log.info("closing the WebSocket: %s", why)
                self._set_close(CloseReason.INTERNAL_ERROR, why)
                self._end_input()
                if not self._lock.locked():
                    with trio.move_on_after(min(self.close_timeout, 1.0)):
                        await self._send_close(CloseReason.INTERNAL_ERROR, why)
                self._abort(why)
                return


class _ASGIChannel(WebSocketChannel):
    """An accepted ASGI ``websocket`` connection as a message channel."""

    def __init__(
        self,
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
        *,
        subprotocol: str | None,
        max_message_size: int,
        close_timeout: float,
    ) -> None:
        self._receive = receive
        self._send = send
        self.subprotocol = subprotocol
        self.max_message_size = max_message_size
        self.close_timeout = close_timeout
        self._ended = False  # no more messages for the session
        self._closing = False  # we sent websocket.close
        self._finished = trio.Event()  # the client is gone
        self._receive_scope: trio.CancelScope | None = None
        self._drain_scope: trio.CancelScope | None = None
        self._closed = False

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        while True:
            if self._ended:
                raise trio.EndOfChannel
            with trio.CancelScope() as scope:
                self._receive_scope = scope
                message = await self._receive()
            self._receive_scope = None
            if scope.cancelled_caught:
                raise trio.EndOfChannel
            kind = message.get("type")
            if kind == "websocket.disconnect":
                self._disconnected(message)
                raise trio.EndOfChannel
            if kind != "websocket.receive" or self._ended:
                continue
            text = message.get("text")
            if text is None:
                await self.close(
                    CloseReason.UNSUPPORTED_DATA,
                    "binary messages are not accepted: send each JSON-RPC message as text",
                )
                raise trio.EndOfChannel
            # (A character is at least one byte: a text too long in characters is too big.)
            data = b"" if len(text) > self.max_message_size else text.encode("utf-8")
            if len(data) > self.max_message_size or (text and not data):
                await self.close(
                    CloseReason.MESSAGE_TOO_BIG,
                    f"message larger than {self.max_message_size} bytes",
                )
                raise trio.EndOfChannel
            return Frame(data)

    def _disconnected(self, message: dict[str, Any]) -> None:
        self._ended = True
        code = int(message.get("code", CloseReason.ABNORMAL_CLOSURE))
        self._set_close(code, message.get("reason") or "")
        self._finished.set()
        if self._drain_scope is not None:
            self._drain_scope.cancel()

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._closing or self._finished.is_set():
            raise trio.BrokenResourceError(
                f"the WebSocket is closed (code {self.close_code}: {self.close_reason})"
            )
        if value.control is not None:
            return  # no stream controls here (``stream_controls`` is not set)
        try:
            await self._send({"type": "websocket.send", "text": value.data.decode("utf-8")})
        except OSError as exc:  # some ASGI servers raise on a vanished client
            self._ended = True
            self._finished.set()
            raise trio.BrokenResourceError("the client disconnected") from exc

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "") -> None:
        _check_code(code)
        await self._close(code, reason, wait=True)

    async def _going_away(self, cancelled: bool) -> None:
        # When the ASGI server itself is being cancelled nothing reads the
        # client's close frame any more: do not wait for it.
        await self._close(*_SERVER_GOING_AWAY, wait=not cancelled)

    async def _close(self, code: int, reason: str, *, wait: bool) -> None:
        if self._closing or self._finished.is_set():
            if not self._finished.is_set() and wait:
                with trio.move_on_after(self.close_timeout):
                    await self._finished.wait()
            return
        self._closing = True
        self._ended = True
        self._set_close(code, reason)
        if self._receive_scope is not None:
            self._receive_scope.cancel()
        message: dict[str, Any] = {"type": "websocket.close", "code": int(code)}
        if reason:
            message["reason"] = reason
        try:
            await self._send(message)
        except OSError:
            self._finished.set()
            return
        if not wait:
            self._finished.set()  # given up on the client's close frame
            return
        # Wait for the client's close frame (the ASGI server reports it as a disconnect).
        with trio.move_on_after(self.close_timeout) as scope:
            self._drain_scope = scope
            while not self._finished.is_set():
                message = await self._receive()
                if message.get("type") == "websocket.disconnect":
                    self._disconnected(message)
        self._drain_scope = None
        self._finished.set()

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.close()


# ------------------------------------------------------------------- server


class _Refusal:
    """An HTTP answer refusing a handshake (a JSON-RPC error in the body, as
    Streamable HTTP answers)."""

    def __init__(
        self,
        status: int,
        message: str = "",
        headers: Iterable[tuple[str, str]] = (),
        body: bytes | None = None,
    ) -> None:
        self.status = status
        self.headers = list(headers)
        if body is None:
            body = rpc.encode_error(None, rpc.INVALID_REQUEST, message)
        self.body = body

    def wire_headers(self, *extra: tuple[bytes, bytes]) -> list[tuple[bytes, bytes]]:
        """The headers to send: ours, a JSON content type unless one is set,
        the body's length, and ``extra``."""
        headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]
        if not any(k.lower() == "content-type" for k, _ in self.headers):
            headers.append((b"content-type", b"application/json"))
        headers.append((b"content-length", str(len(self.body)).encode()))
        return headers + list(extra)


class _Captured:
    """A :class:`Responder` that keeps a whole answer, so that what an HTTP
    :class:`Handler` says can be sent as a handshake's refusal (or, on the
    wsproto front door, as the answer to a plain HTTP request)."""

    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.body = bytearray()

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        self.status = status
        self.headers = [(k, v) for k, v in headers if k.lower() != "content-length"]

    async def send(self, data: bytes) -> None:
        if len(self.body) + len(data) > _REJECT_BODY_LIMIT:
            raise trio.BrokenResourceError("answer too large for a handshake refusal")
        self.body += data

    async def end(self) -> None:
        pass

    def refusal(self) -> _Refusal:
        return _Refusal(self.status or 500, headers=self.headers, body=bytes(self.body))


async def _answer(handler: Handler, request: HttpRequest) -> _Refusal:
    """What ``handler`` answers to ``request``, as a complete HTTP answer."""
    captured = _Captured()
    await handler.handle(request, captured)
    return captured.refusal()


@dataclass(frozen=True)
class Admission:
    """What an authorization layer decided about a handshake it let through.

    Attributes:
        auth: What the handlers of this connection read as ``ctx.auth``
            (:class:`mcp_trio.auth.server.AccessToken`).
        expires_at: When the grant ends (seconds since the epoch,
            ``time.time()``); the connection is closed with 1008 (policy
            violation) then.  ``None``: never.
        screen: Checks each incoming message (the raw text, UTF-8) before the
            session sees it: ``None`` lets it through; bytes mean the message
            is dropped, and are sent back when not empty (a JSON-RPC error
            answering it).
    """

    auth: Any
    expires_at: float | None = None
    screen: Callable[[bytes], bytes | None] | None = None


class HandshakeAuth(Protocol):
    """What guards a :class:`WebSocketEndpoint` (``auth=``):
    :class:`mcp_trio.auth.server.ResourceServer` is one.

    :meth:`admit` looks at the upgrade request (a ``GET`` with its headers,
    path and query) and returns an :class:`Admission`, or answers the request
    through ``responder`` (a 401 with ``WWW-Authenticate`` ...) and returns
    ``None``: that answer is sent as the handshake's refusal.
    """

    async def admit(self, request: HttpRequest, responder: Responder) -> Admission | None: ...


class _AuthorizedChannel(trio.abc.Channel[Frame]):
    """A connection admitted by an authorization layer, as the session sees it:
    ``auth_for`` gives every request the admission's ``auth``, and incoming
    messages pass its ``screen``.

    A refused message is answered from the session's reading task; a lock
    keeps that write and the session writer's one at a time, so the
    connection still has one writer at any moment.
    """

    def __init__(self, inner: WebSocketChannel, admission: Admission) -> None:
        self.inner = inner
        self.admission = admission
        self._send_lock = trio.Lock()
        buffered = getattr(inner, "buffered", None)
        if buffered is not None:  # (the reader relay: see docs/engine.md)
            self.buffered = buffered

    def auth_for(self, request_id: Any) -> Any:
        """The connection's authorization, for any of its requests."""
        return self.admission.auth

    @property
    def end_reason(self) -> str | None:
        return self.inner.end_reason

    async def receive(self) -> Frame:
        screen = self.admission.screen
        while True:
            frame = await self.inner.receive()
            answer = screen(frame.data) if screen is not None else None
            if answer is None:
                return frame
            if answer:
                async with self._send_lock:
                    await self.inner.send(Frame(answer))

    async def send(self, value: Frame) -> None:
        async with self._send_lock:
            await self.inner.send(value)

    async def aclose(self) -> None:
        await self.inner.aclose()


class WebSocketEndpoint:
    """MCP over WebSocket, server side: the handshake policy and the open
    connections, independent of the web server in front (see the front doors
    :class:`WebSocketASGI` and :func:`serve_wsproto`).

    Args:
        serve_session: ``async (channel)`` serving one MCP session until the
            channel ends (``Server.serve_session``).
        path: The endpoint path (other paths: 404).
        allowed_hosts: ``Host`` values accepted (port ignored); ``None``
            accepts any.  Default: loopback names.
        allowed_origins: ``Origin`` values accepted when the header is
            present; default: ``http(s)://`` + an allowed host.
        require_subprotocol: Refuse (400) clients that do not offer ``mcp``.
            By default a client offering no subprotocol is accepted.
        max_message_size: Bytes in one incoming message (1009 beyond).
        keepalive_interval: Seconds between pings (``None``: no pings).
        keepalive_timeout: Seconds a pong may take.
        close_timeout: Seconds to wait for the peer's close frame (and for
            each step of closing).
        inbound_buffer: Messages read ahead of the session.
        auth: Guards the handshake (:class:`HandshakeAuth`, e.g. an
            :class:`mcp_trio.auth.server.ResourceServer`); checked after
            the path, Host / Origin and subprotocol, so those refusals cost
            no token verification.
    """

    def __init__(
        self,
        serve_session: ServeSession,
        *,
        path: str = "/mcp",
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
        require_subprotocol: bool = False,
        max_message_size: int = DEFAULT_SERVER_MAX_MESSAGE_SIZE,
        keepalive_interval: float | None = 20.0,
        keepalive_timeout: float = 20.0,
        close_timeout: float = 5.0,
        inbound_buffer: int = 16,
        auth: HandshakeAuth | None = None,
    ) -> None:
        _check_limits(max_message_size, keepalive_interval, keepalive_timeout, close_timeout)
        self.serve_session = serve_session
        self.auth = auth
        self.path = path.rstrip("/") or "/"
        self.guard = HostGuard(allowed_hosts, allowed_origins)
        self.require_subprotocol = require_subprotocol
        self.max_message_size = max_message_size
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_timeout = close_timeout
        self.inbound_buffer = inbound_buffer
        self._connections: dict[WebSocketChannel, trio.Event] = {}
        self._shutting_down = False

    @property
    def connections(self) -> int:
        """Connections open now."""
        return len(self._connections)

    def shutdown(self) -> None:
        """Close every open connection with 1001 (going away); refuse new ones (503)."""
        self._shutting_down = True
        for stop in self._connections.values():
            stop.set()

    def _decide(
        self, path: str, headers: Mapping[str, str], offered: list[str]
    ) -> str | None | _Refusal:
        """The subprotocol to select, or why the handshake is refused."""
        if (path.rstrip("/") or "/") != self.path:
            return _Refusal(404, "Not Found")
        problem = self.guard.check(HttpRequest("GET", dict(headers)))
        if problem is not None:
            return _Refusal(problem.status, body=problem.body)
        if self._shutting_down:
            return _Refusal(503, "the server is shutting down")
        if SUBPROTOCOL in offered:
            return SUBPROTOCOL
        if offered or self.require_subprotocol:
            return _Refusal(
                400,
                f"Unsupported WebSocket subprotocol: offer {SUBPROTOCOL!r}"
                + (f" (offered: {', '.join(offered)})" if offered else ""),
                [("sec-websocket-protocol", SUBPROTOCOL)],
            )
        return None

    async def _handshake(
        self, path: str, query: str, headers: Mapping[str, str], offered: list[str]
    ) -> tuple[str | None, Admission | None] | _Refusal:
        """The subprotocol to select and what ``auth`` admitted, or why the
        handshake is refused."""
        decision = self._decide(path, headers, offered)
        if isinstance(decision, _Refusal) or self.auth is None:
            return decision if isinstance(decision, _Refusal) else (decision, None)
        request = HttpRequest("GET", dict(headers), b"", path, query)
        captured = _Captured()
        admission = await self.auth.admit(request, captured)
        if admission is None:
            return captured.refusal()
        return decision, admission

    async def _expire(self, channel: WebSocketChannel, expires_at: float) -> None:
        """Close ``channel`` with 1008 once its authorization has expired."""
        await trio.sleep(max(0.0, expires_at - time.time()))
        log.info("closing the WebSocket: the access token has expired")
        await channel.close(CloseReason.POLICY_VIOLATION, "the access token has expired")

    async def _serve_channel(
        self, channel: WebSocketChannel, admission: Admission | None = None
    ) -> None:
        """Serve one accepted connection until it ends.

        The connection's work runs shielded from outside cancellation, so that
        when the server is cancelled (or :meth:`shutdown` is called) it can
        still close with 1001 and let the session end on its own (all of
        that bounded by ``close_timeout``).  With an ``admission``, the session
        sees the connection through :class:`_AuthorizedChannel`, and the
        connection is closed when the admission expires.
        """
        session_channel: trio.abc.Channel[Frame] = (
            channel if admission is None else _AuthorizedChannel(channel, admission)
        )
        stop = trio.Event()
        over = trio.Event()
        self._connections[channel] = stop
        if self._shutting_down:  # accepted just before shutdown() was called
            stop.set()
        inner = trio.CancelScope(shield=True)

        async def run() -> None:
            try:
                with inner:
                    async with trio.open_nursery() as tasks:
                        tasks.start_soon(channel._run)
                        if admission is not None and admission.expires_at is not None:
                            tasks.start_soon(self._expire, channel, admission.expires_at)
                        code: tuple[int, str] = (CloseReason.NORMAL_CLOSURE, "")
                        try:
                            await self.serve_session(session_channel)
                        except Exception:
                            log.exception("WebSocket session failed")
                            code = (CloseReason.INTERNAL_ERROR, "internal error")
                        await channel.close(*code)
                        tasks.cancel_scope.cancel()
            finally:
                over.set()
                stop.set()

        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                try:
                    await stop.wait()
                finally:
                    if not over.is_set():  # cancelled or shut down
                        with trio.CancelScope(shield=True):
                            await channel._going_away(cancelled=not stop.is_set())
                            inner.deadline = trio.current_time() + self.close_timeout
                            await over.wait()
        finally:
            self._connections.pop(channel, None)


def _joined_headers(pairs: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
    """Raw header pairs as a dict: lower-case names, repeated ones joined with ``", "``."""
    headers: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        name = raw_name.decode("latin-1").lower()
        value = raw_value.decode("latin-1")
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


def _asgi_headers(scope: Mapping[str, Any]) -> dict[str, str]:
    return _joined_headers(scope.get("headers", ()))


class WebSocketASGI:
    """An ASGI 3 application serving ``endpoint`` on ``websocket`` scopes.

    ``http`` and ``lifespan`` scopes go to ``http_app`` when given (for
    example the Streamable HTTP :class:`~mcp_trio.transports.http.server.ASGIApp`
    at the same path, so ``ws://host/mcp`` and ``http://host/mcp`` are one
    server; give it the ``routes`` then); without it, ``routes`` (path ->
    :class:`~mcp_trio.transports.http.server.Handler`, e.g. the protected
    resource metadata) answer plain HTTP requests at their paths, a plain
    HTTP request to the endpoint gets 426 and others 404.  Serve it with
    :func:`serve_hypercorn_websocket`.
    """

    def __init__(
        self,
        endpoint: WebSocketEndpoint,
        http_app: Any = None,
        routes: Mapping[str, Handler] | None = None,
    ) -> None:
        if http_app is not None and routes:
            raise ValueError("give the routes to http_app")
        self.endpoint = endpoint
        self.http_app = http_app
        # Each route is served by the Streamable HTTP front door's ASGI code.
        self._plain = {
            (path.rstrip("/") or "/"): ASGIApp(handler, path)
            for path, handler in (routes or {}).items()
        }

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "websocket":
            await self._websocket(scope, receive, send)
        elif self.http_app is not None:
            await self.http_app(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    self.endpoint.shutdown()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif kind == "http" and (scope["path"].rstrip("/") or "/") in self._plain:
            await self._plain[scope["path"].rstrip("/") or "/"](scope, receive, send)
        elif kind == "http":
            if (scope["path"].rstrip("/") or "/") == self.endpoint.path:
                status, headers = 426, [(b"upgrade", b"websocket"), (b"connection", b"upgrade")]
                text = "Upgrade Required: this is a WebSocket endpoint"
            else:
                status, headers, text = 404, [], "Not Found"
            body = rpc.encode_error(None, rpc.INVALID_REQUEST, text)
            headers += [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    async def _websocket(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        if message.get("type") != "websocket.connect":
            return
        endpoint = self.endpoint
        offered = list(scope.get("subprotocols") or ())
        query = scope.get("query_string", b"").decode("latin-1")
        decision = await endpoint._handshake(scope["path"], query, _asgi_headers(scope), offered)
        if isinstance(decision, _Refusal):
            await _asgi_refuse(scope, send, decision)
            return
        subprotocol, admission = decision
        await send({"type": "websocket.accept", "subprotocol": subprotocol})
        channel = _ASGIChannel(
            receive,
            send,
            subprotocol=subprotocol,
            max_message_size=endpoint.max_message_size,
            close_timeout=endpoint.close_timeout,
        )
        await endpoint._serve_channel(channel, admission)


async def _asgi_refuse(scope: Mapping[str, Any], send: Any, refusal: _Refusal) -> None:
    if "websocket.http.response" in (scope.get("extensions") or {}):
        headers = refusal.wire_headers()
        await send(
            {"type": "websocket.http.response.start", "status": refusal.status, "headers": headers}
        )
        await send({"type": "websocket.http.response.body", "body": refusal.body})
    else:
        # Closing before accepting: the server answers 403.
        await send({"type": "websocket.close", "code": CloseReason.POLICY_VIOLATION})


def _ws_url(http_url: str) -> str:
    scheme, sep, rest = http_url.partition("://")
    return ("wss" if scheme == "https" else "ws") + sep + rest


async def serve_hypercorn_websocket(
    app: WebSocketASGI,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **config_options: Any,
) -> None:
    """Serve ``app`` with hypercorn until cancelled.

    hypercorn's ``websocket_max_message_size`` and ``websocket_ping_interval``
    follow the endpoint's ``max_message_size`` and ``keepalive_interval``;
    without an ``http_app``, ``read_timeout`` is set to ``keepalive_interval +
    keepalive_timeout`` so a peer that stops answering pings is
    disconnected.  ``config_options`` (hypercorn ``Config`` attributes:
    ``certfile``, ``keyfile`` ...) override these.

    ``task_status.started`` gets the bound URLs (``["ws://127.0.0.1:43121"]``;
    ``wss://`` with TLS).
    """
    endpoint = app.endpoint
    options: dict[str, Any] = {"websocket_max_message_size": endpoint.max_message_size}
    if endpoint.keepalive_interval is not None:
        options["websocket_ping_interval"] = endpoint.keepalive_interval
        if app.http_app is None:
            options["read_timeout"] = endpoint.keepalive_interval + endpoint.keepalive_timeout
    options.update(config_options)
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(serve_hypercorn, app, host, port, **options))  # type: ignore[arg-type]
        task_status.started([_ws_url(url) for url in urls])


async def serve_wsproto(
    endpoint: WebSocketEndpoint,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ssl_context: ssl.SSLContext | None = None,
    handshake_timeout: float = 10.0,
    max_connections: int = 1024,
    routes: Mapping[str, Handler] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``endpoint`` with wsproto on trio sockets (no ASGI layer) until cancelled.

    Every connection must complete its opening handshake (TLS included)
    within ``handshake_timeout`` seconds; at most ``max_connections`` are
    served at once (further ones wait).  ``routes`` (path ->
    :class:`~mcp_trio.transports.http.server.Handler`, e.g. the protected
    resource metadata) answer plain HTTP ``GET`` requests (no body) at their
    paths, one per connection.  ``task_status.started`` gets the bound URLs
    (``ws://`` or, with ``ssl_context``, ``wss://``).
    """
    limit = trio.CapacityLimiter(max_connections)
    table = {(path.rstrip("/") or "/"): handler for path, handler in (routes or {}).items()}

    async def connection(stream: trio.abc.Stream) -> None:
        # One connection's failure must never take the listener down.
        async with limit:
            try:
                await _wsproto_connection(endpoint, stream, handshake_timeout, table)
            except Exception:
                log.exception("WebSocket connection failed")

    listeners: list[Any] = list(await trio.open_tcp_listeners(port, host=host))
    urls = []
    for listener in listeners:
        address = listener.socket.getsockname()
        shown = f"[{address[0]}]" if ":" in address[0] else address[0]
        urls.append(f"{'wss' if ssl_context else 'ws'}://{shown}:{address[1]}")
    if ssl_context is not None:
        listeners = [trio.SSLListener(lst, ssl_context, https_compatible=True) for lst in listeners]
    async with trio.open_nursery() as nursery:
        await nursery.start(trio.serve_listeners, connection, listeners)
        task_status.started(urls)


async def _wsproto_connection(
    endpoint: WebSocketEndpoint,
    stream: trio.abc.Stream,
    handshake_timeout: float,
    routes: Mapping[str, Handler],
) -> None:
    ws = WSConnection(ConnectionType.SERVER)
    handed_over = False
    try:
        with trio.move_on_after(handshake_timeout):
            request = await _read_request(ws, stream, routes)
            if request is None:
                return
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in request.extra_headers
            }
            headers["host"] = request.host
            path, _, query = request.target.partition("?")
            decision = await endpoint._handshake(path, query, headers, list(request.subprotocols))
            if isinstance(decision, _Refusal):
                await _wsproto_refuse(ws, stream, decision)
                return
            subprotocol, admission = decision
            await stream.send_all(ws.send(AcceptConnection(subprotocol=subprotocol)))
            channel = _WsprotoChannel(
                stream,
                ws,
                client=False,
                subprotocol=subprotocol,
                max_message_size=endpoint.max_message_size,
                keepalive_interval=endpoint.keepalive_interval,
                keepalive_timeout=endpoint.keepalive_timeout,
                close_timeout=endpoint.close_timeout,
                inbound_buffer=endpoint.inbound_buffer,
            )
            handed_over = True
        if handed_over:
            await endpoint._serve_channel(channel, admission)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        if not handed_over:
            with trio.move_on_after(1.0, shield=True):
                await stream.aclose()


async def _read_request(
    ws: WSConnection, stream: trio.abc.Stream, routes: Mapping[str, Handler]
) -> Request | None:
    """The client's upgrade request; ``None`` after answering a bad one, a
    plain HTTP request to one of ``routes``, or on EOF."""
    head = bytearray()  # what came so far, to read a plain HTTP request again
    while True:
        for event in ws.events():
            if isinstance(event, Request):
                return event
        data = await stream.receive_some(_READ_SIZE)
        if not data:
            return None
        if routes and len(head) < _REJECT_BODY_LIMIT:
            head += data
        try:
            ws.receive_data(data)
        except UnicodeError as exc:  # a Host header that is not IDNA
            await _wsproto_refuse(ws, stream, _Refusal(400, f"Bad WebSocket handshake: {exc}"))
            return None
        except RemoteProtocolError as exc:
            plain = _route_request(bytes(head), routes)
            if plain is not None:
                await _wsproto_refuse(ws, stream, await _answer(routes[plain.path], plain))
                return None
            hint = exc.event_hint
            status = hint.status_code if isinstance(hint, RejectConnection) else 400
            hint_headers = getattr(hint, "headers", ())
            extra = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in hint_headers]
            refusal = _Refusal(status, f"Bad WebSocket handshake: {exc}", extra)
            await _wsproto_refuse(ws, stream, refusal)
            return None


def _route_request(head: bytes, routes: Mapping[str, Handler]) -> HttpRequest | None:
    """``head`` read as a plain HTTP ``GET`` to one of ``routes`` (wsproto
    refuses anything that is not an upgrade), or ``None``."""
    if not routes:
        return None
    parser = h11.Connection(h11.SERVER)
    try:
        parser.receive_data(head)
        event = parser.next_event()
    except h11.RemoteProtocolError:
        return None
    if not isinstance(event, h11.Request) or event.method != b"GET":
        return None
    path, _, query = event.target.decode("latin-1").partition("?")
    path = path.rstrip("/") or "/"
    if path not in routes:
        return None
    return HttpRequest("GET", _joined_headers(event.headers), b"", path, query)


async def _wsproto_refuse(ws: WSConnection, stream: trio.abc.Stream, refusal: _Refusal) -> None:
    headers = refusal.wire_headers((b"connection", b"close"))
    try:
        data = ws.send(RejectConnection(status_code=refusal.status, headers=headers, has_body=True))
        data += ws.send(RejectData(data=refusal.body, body_finished=True))
    except (LocalProtocolError, h11.LocalProtocolError):  # h11 may refuse after a broken request
        return
    await stream.send_all(data)


# ------------------------------------------------------------------- client


def _target(url: str) -> Target:
    scheme, sep, rest = url.partition("://")
    http_scheme = {"ws": "http", "wss": "https"}.get(scheme.lower()) if sep else None
    if http_scheme is None:
        raise ValueError(f"not a ws(s) URL: {url!r}")
    return Target(f"{http_scheme}://{rest}")


async def _client_handshake(
    stream: trio.abc.Stream, target: Target, extra_headers: list[tuple[bytes, bytes]]
) -> tuple[WSConnection, str | None]:
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(
        ws.send(
            Request(
                host=target.host_header,
                target=target.path,
                subprotocols=[SUBPROTOCOL],
                extra_headers=extra_headers,
            )
        )
    )
    status: int | None = None
    refusal_headers: dict[str, str] = {}
    body = bytearray()
    finished = False
    while not finished:
        data = await stream.receive_some(_READ_SIZE)
        try:
            ws.receive_data(data or None)
        except RemoteProtocolError as exc:
            raise WebSocketConnectError(
                f"invalid WebSocket handshake answer from {target.url}: {exc}"
            ) from None
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return ws, event.subprotocol
            if isinstance(event, RejectConnection):
                status = event.status_code
                refusal_headers = _joined_headers(event.headers)
                finished = not event.has_body
            elif isinstance(event, RejectData):
                if len(body) < _REJECT_BODY_LIMIT:
                    body += event.data[: _REJECT_BODY_LIMIT - len(body)]
                finished = event.body_finished
        if not data:
            break
    if status is None:
        raise WebSocketConnectError(
            f"{target.url} closed the connection during the WebSocket handshake"
        )
    shown = excerpt(bytes(body))
    raise WebSocketConnectError(
        f"{target.url} refused the WebSocket: HTTP {status}{': ' + shown if shown else ''}",
        status=status,
        body=bytes(body),
        headers=refusal_headers,
    )


async def _connect(
    pool: Pool,
    url: str,
    target: Target,
    extra: list[tuple[bytes, bytes]],
    connect_timeout: float,
) -> tuple[trio.abc.Stream, WSConnection, str | None]:
    """One connection and opening handshake, within ``connect_timeout``."""
    deadline = trio.current_time() + connect_timeout
    try:
        stream = (await pool._connect()).stream
    except Failure as exc:
        raise WebSocketConnectError(exc.message) from None
    try:
        with trio.move_on_at(deadline) as timer:
            ws, subprotocol = await _client_handshake(stream, target, extra)
        if timer.cancelled_caught:
            raise WebSocketConnectError(
                f"{url} did not complete the WebSocket handshake within {connect_timeout} s"
            )
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        close_stream(stream)
        raise WebSocketConnectError(
            f"the connection to {url} broke during the WebSocket handshake: {exc}"
        ) from None
    except BaseException:
        close_stream(stream)
        raise
    return stream, ws, subprotocol


async def _connect_with_auth(
    pool: Pool,
    url: str,
    target: Target,
    extra: list[tuple[bytes, bytes]],
    connect_timeout: float,
    auth: HTTPAuth,
) -> tuple[trio.abc.Stream, WSConnection, str | None]:
    """:func:`_connect` with ``auth``'s headers; a 401 / 403 that ``auth``
    answers (by authorizing, refreshing or stepping up) makes it try again on
    a new connection, at most ``_AUTH_RETRIES`` times."""
    for attempt in range(_AUTH_RETRIES + 1):
        sent = list(await auth.headers("GET", target.url))
        credentials = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in sent]
        try:
            return await _connect(pool, url, target, extra + credentials, connect_timeout)
        except WebSocketConnectError as exc:
            if exc.status not in (401, 403) or attempt == _AUTH_RETRIES:
                raise
            try:
                retry = await auth.challenge(exc.status, exc.headers, sent)
            except Exception as problem:  # the auth's own failure: the connection's error
                log.debug("authorization failed", exc_info=True)
                raise WebSocketConnectError(
                    f"authorization failed: {problem}",
                    status=exc.status,
                    body=exc.body,
                    headers=exc.headers,
                ) from None
            if not retry:
                raise
    raise AssertionError("unreachable")  # the last attempt returns or raises


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    origin: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    connect_timeout: float = 30.0,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    keepalive_interval: float | None = 20.0,
    keepalive_timeout: float = 20.0,
    close_timeout: float = 5.0,
    inbound_buffer: int = 16,
    auth: HTTPAuth | None = None,
) -> AsyncIterator[WebSocketChannel]:
    """Connect to the MCP WebSocket endpoint ``url`` (``ws://`` or ``wss://``).

    Args:
        url: The endpoint.
        headers: Extra handshake headers.
        origin: An ``Origin`` header to send (browsers always send one;
            programs usually none).
        ssl_context: For ``wss://`` (default: the system's trust store).
        connect_timeout: Seconds for the connection, TLS and the handshake.
        max_message_size: Bytes in one incoming message (closed with 1009 beyond).
        keepalive_interval: Seconds between pings (``None``: no pings).
        keepalive_timeout: Seconds a pong may take before the connection is dropped.
        close_timeout: Seconds to wait for the server's close frame on exit.
        inbound_buffer: Messages read ahead of the session.
        auth: Credentials for the handshake (an
            :class:`~mcp_trio.transports.http.client.HTTPAuth`, e.g.
            :class:`mcp_trio.auth.client.OAuthClient`): its headers go on the
            upgrade request (for the URL's ``http(s)://`` form, which is how
            the server names itself as an OAuth resource); a 401 / 403 refusal
            is handed to it, and when it has authorized, refreshed or stepped
            up, the handshake is tried again on a new connection (at most 3
            times).  Authorizing is not bounded by ``connect_timeout``, which
            applies to each attempt.

    Raises:
        WebSocketConnectError: the connection could not be opened (the message
            says why; ``status`` is set when the server refused the handshake).
        ValueError: ``url`` is not a ``ws(s)://`` URL, or a header is one the
            handshake sets itself.
    """
    target = _target(url)
    _check_limits(max_message_size, keepalive_interval, keepalive_timeout, close_timeout)
    extra: list[tuple[bytes, bytes]] = []
    for name, value in (headers or {}).items():
        if name.lower() in _RESERVED_HEADERS:
            raise ValueError(f"the WebSocket handshake sets {name!r} itself")
        extra.append((name.encode("latin-1"), value.encode("latin-1")))
    if origin is not None:
        extra.append((b"origin", origin.encode("latin-1")))
    pool = Pool(
        target,
        ssl_context=ssl_context if target.scheme == "https" else None,  # wss:// only
        connect_timeout=connect_timeout,
        read_timeout=None,
        max_idle=0,
    )
    if auth is None:
        stream, ws, subprotocol = await _connect(pool, url, target, extra, connect_timeout)
    else:
        stream, ws, subprotocol = await _connect_with_auth(
            pool, url, target, extra, connect_timeout, auth
        )
    channel = _WsprotoChannel(
        stream,
        ws,
        client=True,
        subprotocol=subprotocol,
        max_message_size=max_message_size,
        keepalive_interval=keepalive_interval,
        keepalive_timeout=keepalive_timeout,
        close_timeout=close_timeout,
        inbound_buffer=inbound_buffer,
    )
    async with trio.open_nursery() as nursery:
        # The reader runs shielded, so that a cancelled block still closes cleanly.
        inner = trio.CancelScope(shield=True)

        async def run(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            with inner:
                task_status.started()
                await channel._run()

        await nursery.start(run)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.close()
            inner.cancel()
