"""The ASGI front door: :class:`ASGIApp` serves any :class:`Handler` to an
ASGI 3 server running under trio, and :func:`serve_hypercorn` runs it with
hypercorn's trio worker.

Bodies over the handler's ``max_body_size`` get 413, unknown paths 404.  A
task watches for the client leaving only where a response may stay open
indefinitely (``GET`` streams, ``subscriptions/listen``) or where leaving is
a cancellation (a 2026-07-28 request: closing its response stream cancels it).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, cast

import trio

from ....types import _versions
from .._replies import _BOTH_LENGTHS, _error_reply, _peek_body, _Reply
from .._request import (
    _LINGER_BYTES,
    _LINGER_SECONDS,
    Handler,
    HttpRequest,
    _declared_length,
    _routes,
    _send_reply,
)
from . import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
)
from ._compat_hypercorn import next_message
from ._forwarded import TrustedProxies
from ._gate import ConnectionGate, TimedStream, listener_url, open_listeners

__all__ = ["ASGIApp", "serve_hypercorn"]

log = logging.getLogger("mcp_trio.http")

_ENDING_GRACE = 1.0  # seconds hypercorn has to end a connection by itself (see serve_hypercorn)


class _ASGIResponder:
    """Sends one response through ASGI.

    A response that declares its ``content-length`` ends with its body: the
    last (usually only) body message says ``more_body: False``, which saves
    the server a message and a write for the end of the response.
    """

    def __init__(self, send: Any) -> None:
        self._send = send
        self.gone = False
        self._left = -1  # body bytes still to come (-1: a streamed response)
        self._ended = False

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        length = _declared_length(headers)
        if length is not None:
            self._left = length
        await self._call(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in headers],
            }
        )

    async def send(self, data: bytes) -> None:
        if not data:
            return
        more = True
        if self._left >= 0:
            self._left -= len(data)
            more = self._left > 0
        self._ended = not more
        await self._call({"type": "http.response.body", "body": data, "more_body": more})

    async def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        await self._call({"type": "http.response.body", "body": b"", "more_body": False})

    async def _call(self, message: dict[str, Any]) -> None:
        if self.gone:
            raise trio.BrokenResourceError("the client disconnected")
        try:
            await self._send(message)
        except OSError as exc:  # hypercorn raises ClientDisconnected (an OSError)
            self.gone = True
            raise trio.BrokenResourceError("the client disconnected") from exc


class ASGIApp:
    """An ASGI 3 application serving ``endpoint`` at ``path``, and each of
    ``routes`` (path -> :class:`Handler`) at its path; other paths get 404.

    Serve it with hypercorn's trio worker (see :func:`serve_hypercorn`) or any
    ASGI server running under trio.  A request body must arrive whole within
    ``request_timeout`` seconds of the request's start (408 and
    ``connection: close`` otherwise).  With ``forwarded_allow_ips``, a request's
    ``client`` is read as :func:`serve_h11` reads it behind trusted proxies.
    """

    def __init__(
        self,
        endpoint: Handler,
        path: str = "/mcp",
        routes: Mapping[str, Handler] | None = None,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        forwarded_allow_ips: str | Sequence[str] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.path = path
        self.routes = _routes(endpoint, path, routes)
        self.request_timeout = request_timeout
        self.proxies = None if forwarded_allow_ips is None else TrustedProxies(forwarded_allow_ips)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        responder = _ASGIResponder(send)
        handler = self.routes.get(scope["path"].rstrip("/") or "/")
        if handler is None:
            await _send_reply(responder, _Reply(404, b"Not Found", [("content-type", "text/plain")]))
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if "transfer-encoding" in headers and "content-length" in headers:
            # Ambiguous framing, a smuggling attempt: refused, and the
            # connection closed (the server sees ``connection: close``).
            reply = _error_reply(400, _BOTH_LENGTHS)
            reply.headers.append(("connection", "close"))
            await _send_reply(responder, reply)
            return
        body = bytearray()
        limit = handler.max_body_size
        with trio.move_on_after(self.request_timeout) as reading:
            while True:
                message = await next_message(receive)
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                if len(body) > limit:
                    await _drain(receive, message)
                    await _send_reply(responder, _error_reply(413, f"Request body larger than {limit} bytes"))
                    return
                if not message.get("more_body", False):
                    break
        if reading.cancelled_caught:  # a body trickled in too slowly
            reply = _error_reply(408, "Request Timeout")
            reply.headers.append(("connection", "close"))
            await _send_reply(responder, reply)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        peer = scope.get("client")  # the client's (host, port), for per-client limits
        client = peer and peer[0]
        if self.proxies is not None:
            client = self.proxies.client_of(client, headers)
        request = HttpRequest(scope["method"], headers, bytes(body), scope["path"], query, client=client)
        if request.method == "POST" and not _leaving_cancels(headers) and not _may_stay_open(request.body):
            # A POST's response ends with its answer: no task to watch for the
            # client leaving (it costs about a seventh of the server's CPU per
            # request); a client that left is noticed at the next write, and its
            # requests go on in their session as they would anyway (before
            # 2026-07-28 a disconnect is no cancellation).  GET streams and
            # subscriptions/listen may stay open indefinitely, and a 2026-07-28
            # client cancels by closing its response stream: watched.
            await handler.handle(request, responder)
            return
        async with trio.open_nursery() as nursery:

            async def watch_disconnect() -> None:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        responder.gone = True
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(watch_disconnect)
            await handler.handle(request, responder)
            nursery.cancel_scope.cancel()


async def _drain(receive: Any, message: dict[str, Any]) -> None:
    """Read and drop the rest of a body over the limit before its 413.

    The server closes a connection whose request it has not read whole, and a
    close with unread input resets it: a client still sending its body would
    get that reset instead of the 413.  At most ``_LINGER_SECONDS`` and
    ``_LINGER_BYTES`` (then the server closes as before).
    """
    left = _LINGER_BYTES
    with trio.move_on_after(_LINGER_SECONDS):
        while message.get("more_body", False) and left > 0:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            left -= len(message.get("body", b""))


def _leaving_cancels(headers: Mapping[str, str]) -> bool:
    """Whether a client leaving cancels this POST's request: in 2026-07-28 and
    later revisions, closing the response stream is the cancellation.  Such a
    request must name its revision in ``MCP-Protocol-Version`` (one that does
    not is refused at once with 400), so the header decides.  ASGI reports a
    client that only half-closed its socket (``shutdown(SHUT_WR)``) as the same
    ``http.disconnect`` (hypercorn does), so there it cancels too."""
    version = headers.get("mcp-protocol-version")
    return version is not None and _versions.is_stateless(version)


def _may_stay_open(body: bytes) -> bool:
    """Whether a POST body holds a ``subscriptions/listen`` request, whose
    response may stay open indefinitely (so the ASGI door watches for the
    client leaving).  Exact without parsing most bodies: the method name
    spelt plainly is found as bytes, and a body without a backslash has no
    JSON escape that could spell it otherwise; the rest are parsed."""
    if b"subscriptions/listen" in body:
        return True
    if b"\\" not in body:
        return False
    peeked = _peek_body(body)
    if isinstance(peeked, _Reply):
        return False
    return any(m.method == "subscriptions/listen" for m in (peeked if isinstance(peeked, list) else [peeked]))


async def serve_hypercorn(
    app: ASGIApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    shutdown_trigger: Callable[[], Awaitable[Any]] | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_connections_per_client: int | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    reuse_port: bool = False,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **config_options: Any,
) -> None:
    """Serve ``app`` with hypercorn (trio worker) until ``shutdown_trigger`` returns.

    Connections are accepted by :class:`ConnectionGate` (at most
    ``max_connections`` at once, further ones wait in the listen backlog; at
    most ``max_connections_per_client`` from one IP address, default a
    quarter of ``max_connections``, further ones closed at once) and each is
    served by hypercorn's connection server.  Every write to a client waits
    at most ``write_timeout`` seconds, then the connection is closed (the
    response abandoned, its memory freed).  Hypercorn has one timer for an
    idle connection and an incomplete request head: its ``keep_alive_timeout``
    is set to the smaller of ``keepalive_timeout`` and ``header_timeout``.
    ``config_options`` set other attributes of hypercorn's ``Config``
    (``certfile``, ``h11_max_incomplete_size`` ...).  With ``reuse_port``, the
    listening sockets have ``SO_REUSEPORT`` (see :func:`._gate.open_listeners`).

    ``task_status.started`` gets the bound URLs (``["http://127.0.0.1:43121"]``).
    """
    from hypercorn.app_wrappers import ASGIWrapper
    from hypercorn.config import Config
    from hypercorn.trio.worker_context import WorkerContext
    from hypercorn.typing import ConnectionState

    from ._compat_hypercorn import connection_server, forget_connection

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = log
    config.keep_alive_timeout = min(keepalive_timeout, header_timeout)
    # The kernel's longest listen backlog (capped at net.core.somaxconn), as the h11 door has:
    # hypercorn's 100 overflows under a connection flood, and a legitimate client's SYN is
    # then dropped (retried 1 s later) while the gate could have taken it at once.
    config.backlog = 0xFFFF
    for key, value in config_options.items():
        setattr(config, key, value)
    gate = ConnectionGate(max_connections, max_connections_per_client)
    context = WorkerContext(None)
    wrapped = ASGIWrapper(cast(Any, app))  # hypercorn's ASGI types are narrower than our dict scope
    ssl_context = config.create_ssl_context()
    listeners: list[tuple[trio.SocketListener, bool]] = []
    if reuse_port:
        secure = ssl_context is not None
        listeners = [(listener, secure) for listener in await open_listeners(host, port, reuse_port=True)]
    else:
        sockets = config.create_sockets()
        for secure, group in ((True, sockets.secure_sockets), (False, sockets.insecure_sockets)):
            for sock in group:
                sock.listen(config.backlog)
                listeners.append((trio.SocketListener(trio.socket.from_stdlib_socket(sock)), secure))
    urls = [listener_url(listener, "https" if secure else "http") for listener, secure in listeners]

    Connection = connection_server(gate)

    async def connection(stream: trio.SocketStream, secure: bool) -> None:
        timed = TimedStream(stream, write_timeout)
        # The first request's head is read here (on plain connections): one that never
        # comes whole within header_timeout is closed, as hypercorn would, but costs no
        # hypercorn connection meanwhile.
        if not secure and not await timed.read_head(header_timeout, config.h11_max_incomplete_size):
            return
        outer: Any = timed
        if secure:
            assert ssl_context is not None  # a secure socket exists only with a certificate
            outer = trio.SSLStream(timed, ssl_context, server_side=True, https_compatible=True)
        server = Connection(wrapped, config, context, ConnectionState({}), outer)
        server.timed = timed
        server.plain = not secure

        async def run(cancel_scope: trio.CancelScope) -> None:
            try:
                await server
            except Exception:
                log.exception("HTTP connection failed")
            cancel_scope.cancel()

        # A connection ends once its socket is closed, or once the client closed its
        # side while no request is under way (which frees its slot at once).  Hypercorn
        # ends it by itself then (its idle timer ends with its reading), and is given a
        # moment to: a cancellation through hypercorn's frames leaves reference cycles (a
        # caught Cancelled that its traceback's frames still hold), each of them a whole
        # connection's objects kept until a full collection.  A write that timed out
        # cancels the connection itself (see ``protocol_send``).  (A client that closed
        # its side during a request still gets its answer.)
        try:
            async with trio.open_nursery() as nursery:
                server.ended = nursery.cancel_scope
                nursery.start_soon(run, nursery.cancel_scope)
                while not (timed.closed or (timed.eof and server.idle)):
                    await timed.changed.park()
                await trio.sleep(_ENDING_GRACE)  # (cancelled once hypercorn has ended it)
                nursery.cancel_scope.cancel()
        finally:
            forget_connection(server)

    async with trio.open_nursery() as connections:
        try:
            async with trio.open_nursery() as nursery:
                for listener, secure in listeners:
                    nursery.start_soon(
                        gate.serve, [listener], partial(connection, secure=secure), connections
                    )
                task_status.started(urls)
                await (shutdown_trigger or trio.sleep_forever)()
                nursery.cancel_scope.cancel()  # no more connections
        finally:
            for listener, _ in listeners:
                listener.socket.close()
            await context.terminated.set()  # hypercorn's connections end when idle
            connections.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
