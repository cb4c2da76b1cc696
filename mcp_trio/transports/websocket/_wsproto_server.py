"""The lean front door of MCP over WebSocket: :func:`serve_wsproto`, wsproto on trio sockets.

Each connection must complete its opening handshake (TLS included) within
``handshake_timeout``; connections are accepted by the HTTP doors'
:class:`~mcp_trio.transports.http.doors._gate.ConnectionGate` (at most ``max_connections``
at once, further clients waiting in the listen backlog, at most
``max_connections_per_client`` from one address, and a connection whose handshake
is not done evicted to make room when the table is full).  A bad
upgrade request is refused with an HTTP answer; a plain HTTP ``GET`` to one
of ``routes`` is answered (one per connection); an accepted connection
becomes a :class:`._wsproto_channel._WsprotoChannel` served by the
:class:`WebSocketEndpoint`.  One connection's failure never takes the
listener down.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, cast

import h11
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from ..http._request import Handler, HttpRequest
from ..http.doors import DEFAULT_MAX_CONNECTIONS
from ..http.doors._gate import ConnectionGate, listener_url, open_listeners
from ._channel import _READ_SIZE, _REJECT_BODY_LIMIT, _joined_headers, log
from ._endpoint import WebSocketEndpoint, _answer, _Refusal
from ._wsproto_channel import _WsprotoChannel


async def serve_wsproto(
    endpoint: WebSocketEndpoint,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    ssl_context: ssl.SSLContext | None = None,
    handshake_timeout: float = 10.0,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_connections_per_client: int | None = None,
    routes: Mapping[str, Handler] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``endpoint`` with wsproto on trio sockets (no ASGI layer) until cancelled.

    Every connection must complete its opening handshake (TLS included)
    within ``handshake_timeout`` seconds; at most ``max_connections`` are
    open at once (further clients wait in the listen backlog; one whose
    handshake is not done after 0.25 s is evicted to make room), at most
    ``max_connections_per_client`` from one IP address (default: a quarter
    of ``max_connections``; further ones closed at once).  ``routes`` (path ->
    :class:`~mcp_trio.transports.http.server.Handler`, e.g. the protected
    resource metadata) answer plain HTTP ``GET`` requests (no body) at their
    paths, one per connection.  ``task_status.started`` gets the bound URLs
    (``ws://`` or, with ``ssl_context``, ``wss://``).
    """
    gate = ConnectionGate(max_connections, max_connections_per_client)
    table = {(path.rstrip("/") or "/"): handler for path, handler in (routes or {}).items()}

    async def connection(sock: trio.SocketStream) -> None:
        # One connection's failure must never take the listener down.
        stream: trio.abc.Stream = sock
        if ssl_context is not None:
            stream = trio.SSLStream(sock, ssl_context, server_side=True, https_compatible=True)
        try:
            await _wsproto_connection(endpoint, stream, handshake_timeout, table, partial(gate.busy, sock))
        except Exception:
            log.exception("WebSocket connection failed")

    listeners = await open_listeners(host, port)
    urls = [listener_url(listener, "wss" if ssl_context else "ws") for listener in listeners]
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(gate.serve, listeners, connection)
            task_status.started(urls)
    finally:
        for listener in listeners:
            listener.socket.close()


async def _wsproto_connection(
    endpoint: WebSocketEndpoint,
    stream: trio.abc.Stream,
    handshake_timeout: float,
    routes: Mapping[str, Handler],
    on_open: Callable[[], None] = lambda: None,
) -> None:
    ws = WSConnection(ConnectionType.SERVER)
    handed_over = False
    served: tuple[_WsprotoChannel, Any] | None = None
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
            on_open()  # (open: never evicted to make room)
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
            served = (channel, admission)
        if served is not None:
            await endpoint._serve_channel(*served)
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
            ws.receive_data(cast(bytes, data))
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
