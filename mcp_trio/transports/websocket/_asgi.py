"""The ASGI front door of MCP over WebSocket: :class:`WebSocketASGI`, served by hypercorn.

``websocket`` scopes go to the :class:`WebSocketEndpoint` (a refusal is an
HTTP answer where the server supports ``websocket.http.response``, else a
close before accepting, which the server answers with 403); ``http`` and
``lifespan`` scopes go to ``http_app`` when given, else to ``routes``, and a
plain HTTP request to the endpoint gets 426.  :class:`_ASGIChannel` is an
accepted connection as a message channel (1003 for a binary message, 1009
for one too big); :func:`serve_hypercorn_websocket` runs the application
with hypercorn settings that follow the endpoint's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import trio
from wsproto.frame_protocol import CloseReason

from ... import _jsonrpc as rpc
from .._base import Frame
from ..http._request import Handler
from ..http.doors.asgi import ASGIApp, serve_hypercorn
from ._channel import _SERVER_GOING_AWAY, WebSocketChannel, _check_code, _joined_headers
from ._endpoint import WebSocketEndpoint, _Refusal


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
            message = None
            with trio.CancelScope() as scope:
                self._receive_scope = scope
                message = await self._receive()
            self._receive_scope = None
            if message is None:
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
            (path.rstrip("/") or "/"): ASGIApp(handler, path) for path, handler in (routes or {}).items()
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
        offered: list[str] = list(scope.get("subprotocols") or ())
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
        await send({"type": "websocket.http.response.start", "status": refusal.status, "headers": headers})
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
