"""The server side of MCP over WebSocket, whichever web server is in front: the endpoint.

:class:`WebSocketEndpoint` decides each handshake (path 404, Host / Origin
421 / 403, shutting down 503, subprotocol 400, then ``auth``: a
:class:`HandshakeAuth` answering with an :class:`Admission` or a refusal),
serves each accepted connection with ``serve_session`` (shielded, so that a
cancelled server still closes every connection with 1001, within
``close_timeout``) and closes a connection with 1008 when its admission
expires.  A refusal is a complete HTTP answer (:class:`_Refusal`) that each
front door sends its own way.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

import trio
from wsproto.frame_protocol import CloseReason

from ... import _jsonrpc as rpc
from .._base import Authorizing, BufferedInput, ChannelTraits, Frame
from ..http._request import DEFAULT_ALLOWED_HOSTS, Handler, HostGuard, HttpRequest, Responder
from ._channel import (
    _REJECT_BODY_LIMIT,
    DEFAULT_SERVER_MAX_MESSAGE_SIZE,
    SUBPROTOCOL,
    WebSocketChannel,
    _check_limits,
    log,
)

ServeSession = Callable[..., Awaitable[Any]]


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


class _AuthorizedChannel(trio.abc.Channel[Frame], ChannelTraits, Authorizing):
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

    @staticmethod
    def around(inner: WebSocketChannel, admission: Admission) -> _AuthorizedChannel:
        """``inner`` admitted by ``admission``; buffered input as ``inner`` has it (the reader
        relay: see docs/engine.md)."""
        if isinstance(inner, BufferedInput):
            return _AuthorizedBufferedChannel(inner, admission)
        return _AuthorizedChannel(inner, admission)

    def auth_for(self, request_id: Any) -> Any:
        """The connection's authorization, for any of its requests."""
        return self.admission.auth

    @property  # (the wrapped connection's, as it ends: read through, not copied)
    def end_reason(self) -> str | None:  # type: ignore[override]
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


class _AuthorizedBufferedChannel(_AuthorizedChannel, BufferedInput):
    """An :class:`_AuthorizedChannel` around a channel with buffered input."""

    def buffered(self) -> int:
        return cast(BufferedInput, self.inner).buffered()


class WebSocketEndpoint:
    """MCP over WebSocket, server side: the handshake policy and the open
    connections, independent of the web server in front (see the front doors
    :class:`WebSocketASGI` and :func:`serve_wsproto`).

    Args:
        serve_session: ``async (channel)`` serving one MCP session until the
            channel ends (``Server.serve_session``).
        path: The endpoint path (other paths: 404).
        allowed_hosts: ``Host`` names accepted (any port; a ``name:port``
            entry: that port only); ``None`` accepts any.  Default: loopback names.
        allowed_origins: ``Origin`` values accepted when the header is
            present (exact ``scheme://host[:port]``); default: same origin,
            ``http(s)://`` + an allowed host on the ``Host`` port (see :class:`HostGuard`).
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

    def _decide(self, path: str, headers: Mapping[str, str], offered: list[str]) -> str | None | _Refusal:
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

    async def _serve_channel(self, channel: WebSocketChannel, admission: Admission | None = None) -> None:
        """Serve one accepted connection until it ends.

        The connection's work runs shielded from outside cancellation, so that
        when the server is cancelled (or :meth:`shutdown` is called) it can
        still close with 1001 and let the session end on its own (all of
        that bounded by ``close_timeout``).  With an ``admission``, the session
        sees the connection through :class:`_AuthorizedChannel`, and the
        connection is closed when the admission expires.
        """
        session_channel: trio.abc.Channel[Frame] = (
            channel if admission is None else _AuthorizedChannel.around(channel, admission)
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
