"""Serving a Server over Streamable HTTP, stdio and WebSocket.

Streamable HTTP goes through either front door, with the legacy HTTP+SSE
endpoints, authorization, plain routes, TLS and a graceful stop.

These are the ``serve_*`` methods of :class:`~mcp_trio.server.Server`, written
as functions of the server they run (the class binds them): each runs it over
a transport through what it offers every transport (``serve_session``, its
task manager), plus, with a store, the hooks that share it between workers.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import ExitStack
from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from ..middleware._base import SharingMiddleware
from ..middleware._latency import LatencyHistogram
from ..transports.http.doors import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    FRONT_DOORS,
)
from ..transports.stdio import open_stdio_server_channel
from ._fanout import Fanout
from ._routes import Route, RouteHandler, http_routes, route_handlers, route_threads_limiter
from ._shared_stats import SharedStatistics
from ._shutdown import GracefulShutdown

if TYPE_CHECKING:
    from ..store import Store
    from ._server import Server

__all__: list[str] = []


async def serve_http(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 3001,
    *,
    path: str = "/mcp",
    front_door: str = "h11",
    legacy_sse: bool = False,
    auth: Any = None,
    routes: Mapping[str, RouteHandler | Route] | None = None,
    metrics_path: str | None = None,
    metrics_token: str | None = None,
    route_threads: int = 8,
    forwarded_allow_ips: str | Sequence[str] | None = None,
    proxy_protocol_allow_ips: str | Sequence[str] | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_connections_per_client: int | None = None,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    certfile: str | None = None,
    keyfile: str | None = None,
    shutdown: GracefulShutdown | None = None,
    reuse_port: bool = False,
    store: Store | None = None,
    worker_id: str | None = None,
    access_log: bool = False,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **http_options: Any,
) -> None:
    """Serve Streamable HTTP at ``http://host:port/path`` until cancelled.

    ``front_door`` is ``"h11"`` (a lean HTTP/1.1 server, the fastest),
    ``"httptools"`` (the same server parsing with llhttp in C: less CPU per
    request; needs the ``fast`` extra, ``pip install 'mcp-trio[fast]'``) or
    ``"hypercorn"`` (ASGI: HTTP/2, TLS and hypercorn's other settings).
    ``legacy_sse`` also serves the 2024-11-05 HTTP+SSE transport for old
    clients (stream at ``/sse``, messages to ``/messages``).
    ``auth`` (an :class:`mcp_trio.auth.server.ResourceServer`) makes every
    endpoint require a bearer token and serves the protected resource
    metadata; see docs/authorization.md.
    ``routes`` (path -> handler or :class:`~mcp_trio.server.Route`) and
    the routes of ``@server.route`` serve plain HTTP next to the MCP
    endpoint; ``metrics_path`` serves :func:`~mcp_trio.server.prometheus_text`
    there (see docs/guide/operations.md), with ``metrics_token`` only to a
    request with that bearer token; sync routes have ``route_threads`` threads.
    The connection limits and timeouts go to the front door (see
    docs/http.md), and ``forwarded_allow_ips`` (trusted reverse proxies,
    whose ``Forwarded`` / ``X-Forwarded-For`` name the client) and
    ``proxy_protocol_allow_ips`` (TCP load balancers that start each connection
    with a PROXY protocol header naming the client: the lean doors only).
    With ``certfile`` (a PEM certificate chain) and ``keyfile`` (its
    private key; default: in ``certfile``), both doors serve HTTPS.
    With ``shutdown``, requests are counted and, once it is stopped, the
    door stops accepting and new requests are refused (see
    :class:`~mcp_trio.server.GracefulShutdown`).
    With ``reuse_port``, the listening sockets have ``SO_REUSEPORT``:
    several processes may serve the same port (``mcp-trio serve --workers``).
    With ``store`` (a :class:`~mcp_trio.store.Store`), the sessions, the
    :attr:`tasks` and the metrics are shared with the other workers serving
    the endpoint with the same store, as ``worker_id`` (unique among them;
    default: a random one): see docs/http.md; so are the buckets of the
    server's :class:`~mcp_trio.middleware.RateLimit` (each middleware that is a
    :class:`~mcp_trio.middleware.SharingMiddleware`, installed when serving starts).
    With ``access_log``, each HTTP request is logged when its response ends, at
    INFO on ``mcp_trio.access.http`` (method, path, status, bytes, duration,
    client, session: see docs/guide/operations.md).
    ``task_status.started`` gets the endpoint URLs.  ``http_options`` go to
    :class:`~mcp_trio.transports.http.server.StreamableHTTP` (allowed
    hosts, response mode, session limits, event store ...).
    """
    from ..transports.http._access import HttpAccessLog
    from ..transports.http.legacy_sse import LegacySSE
    from ..transports.http.server import (
        ASGIApp,
        StreamableHTTP,
        serve_h11,
        serve_hypercorn,
        server_ssl_context,
    )

    if front_door not in FRONT_DOORS:
        raise ValueError(f"front_door must be one of {', '.join(map(repr, FRONT_DOORS))}")
    if proxy_protocol_allow_ips is not None and front_door == "hypercorn":
        raise ValueError("proxy_protocol_allow_ips needs a lean door (front_door 'h11' or 'httptools')")
    if front_door == "httptools":
        from ..transports.http.doors import _httptools as _llhttp  # noqa: F401  (a missing extra fails here, named)
    reserved = {path.rstrip("/") or "/": "the MCP endpoint"}
    if legacy_sse:
        reserved.update(dict.fromkeys(("/sse", "/messages"), "the legacy HTTP+SSE endpoints"))
    if auth is not None:
        reserved.update(dict.fromkeys(auth.metadata_routes(path), "the authorization metadata"))
    custom = http_routes(server, routes, metrics_path, reserved, metrics_token)
    if metrics_path is not None:
        _time_requests(server)
    route_limiter = route_threads_limiter(route_threads)
    if auth is None and any(r.auth for r in custom.values()):
        raise ValueError("a route registered with auth=True needs serve_http(auth=...)")
    sharing = _sharing(server, store)  # (first: when refused, nothing has changed)
    try:
        server._count_in(shutdown)
        if store is not None:
            shared = server.tasks.sharing
            if shared is not None and shared.store is store:
                worker_id = worker_id or shared.worker  # (shared already, with its own lease)
            else:
                worker_id = worker_id or secrets.token_hex(4)
                server.tasks.share(store, worker_id)  # tasks seen and cancelled from every worker
        endpoint = StreamableHTTP(
            server, versions=server.versions, store=store, worker_id=worker_id, **http_options
        )
    except BaseException:
        sharing.close()
        raise
    try:
        async with server.lifespan.held(), trio.open_nursery() as nursery:
            # Extension tasks outlive the (per-POST) sessions that create them.
            await nursery.start(server.tasks.run)
            if store is not None:
                assert worker_id is not None
                updated_here = server._resources.updated_here
                fanout = Fanout(store, worker_id, updated_here, server._open.list_changed_here)
                await nursery.start(fanout.run)
                server._fanout = fanout  # (resource updates and list changes reach every worker)
                totals = server._totals  # (every worker's statistics in the metrics)
                totals.shared = SharedStatistics(store, worker_id, totals.statistics, lambda: totals.latency)
                await nursery.start(totals.shared.run)
            await nursery.start(endpoint.run)
            table: dict[str, Any] = {}
            if legacy_sse:
                legacy = LegacySSE(
                    server.serve_session,
                    max_body_size=endpoint.max_body_size,
                    allowed_hosts=endpoint.guard.allowed_hosts,
                    allowed_origins=endpoint.guard.allowed_origins,
                    stream_slots=endpoint.stream_slots,  # one bound on the streams of both
                    stream_idle_timeout=endpoint.streaming.stream_idle_timeout,
                )
                await nursery.start(legacy.run)
                table = {"/sse": legacy, legacy.messages_path: legacy}
            front: Any = endpoint
            if auth is not None:
                # The transport, not the session, enforces authorization.
                front = auth.protect(endpoint)
                table = {p: auth.protect(h) for p, h in table.items()}
                table.update(auth.metadata_routes(path))
            guard, limit = endpoint.guard, endpoint.max_body_size
            for p, handler in route_handlers(custom, guard, limit, route_limiter).items():
                table[p] = handler if auth is None or not custom[p].auth else auth.protect(handler)
            door: dict[str, Any] = {}  # what only one door takes: TLS, how to stop accepting
            if shutdown is not None:
                front = shutdown.wrap_endpoint(front)
                table = {p: shutdown.wrap_endpoint(h) for p, h in table.items()}
                door["shutdown_trigger"] = shutdown.stopping.wait
            if access_log:  # (outermost: it sees the refusals of the others)
                front = HttpAccessLog(front)
                table = {p: HttpAccessLog(h) for p, h in table.items()}
            # the front door's connection limits, the same for both doors
            serve: Callable[..., Awaitable[None]]
            if front_door != "hypercorn":  # (the lean door, with h11 or llhttp parsing)
                if certfile is not None:
                    door["ssl_context"] = server_ssl_context(certfile, keyfile)
                serve = partial(
                    serve_h11,
                    front,
                    path=path,
                    routes=table,
                    request_timeout=request_timeout,
                    parser=front_door,
                    forwarded_allow_ips=forwarded_allow_ips,
                    proxy_protocol_allow_ips=proxy_protocol_allow_ips,
                )
            else:
                door.update(_hypercorn_tls(certfile, keyfile))
                if shutdown is not None:  # (the caller cancels when the grace it gives is over)
                    door["graceful_timeout"] = math.inf
                proxies = forwarded_allow_ips
                app = ASGIApp(
                    front, path, table, request_timeout=request_timeout, forwarded_allow_ips=proxies
                )
                serve = partial(serve_hypercorn, app)
            serve = partial(
                serve,
                **door,
                reuse_port=reuse_port,
                max_connections=max_connections,
                max_connections_per_client=max_connections_per_client,
                header_timeout=header_timeout,
                keepalive_timeout=keepalive_timeout,
                write_timeout=write_timeout,
            )
            urls = await nursery.start(serve, host, port)
            if auth is not None:
                auth.bind_resource(urls[0] + path)
            task_status.started([url + path for url in urls])
    finally:
        server._fanout = None
        sharing.close()


def _sharing(server: Server, store: Store | None) -> ExitStack:
    """Each of the server's middleware that shares its state, sharing it through ``store``
    until the stack returned is closed (nothing without a store)."""
    with ExitStack() as stack:
        if store is not None:
            for middleware in server.middleware:
                if isinstance(middleware, SharingMiddleware):
                    stack.enter_context(middleware.sharing(store))
        return stack.pop_all()


async def serve_stdio(
    server: Server, *, shutdown: GracefulShutdown | None = None, **channel_options: Any
) -> None:
    """Serve over stdin/stdout until stdin closes.  With ``shutdown``, requests are
    counted and refused once it is stopped (see :class:`~mcp_trio.server.GracefulShutdown`)."""
    server._count_in(shutdown)
    answering = server._answering  # (asked first: a proxy's lifespan then knows it serves stdio)
    own = answering.open_stdio(shutdown, channel_options) if answering is not None else None
    async with server.lifespan.held(), own or open_stdio_server_channel(**channel_options) as channel:
        await server.serve_session(channel)


async def serve_websocket(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 3001,
    *,
    path: str = "/mcp",
    front_door: str = "hypercorn",
    http: bool = False,
    http_options: dict[str, Any] | None = None,
    auth: Any = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    shutdown: GracefulShutdown | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **websocket_options: Any,
) -> None:
    """Serve MCP over WebSocket at ``ws://host:port/path`` until cancelled.

    ``front_door`` is ``"hypercorn"`` (ASGI; with ``http=True`` the same
    server also offers Streamable HTTP at ``http://host:port/path``,
    ``http_options`` going to
    :class:`~mcp_trio.transports.http.server.StreamableHTTP`) or
    ``"wsproto"`` (a lean server with exact keepalive and close codes).
    ``websocket_options`` go to :class:`~mcp_trio.transports.websocket.WebSocketEndpoint`
    (allowed hosts and origins, message size, keepalive ...), but ``max_connections``
    and ``max_connections_per_client`` to the front door, as for :meth:`serve_http`.
    ``auth`` (an :class:`mcp_trio.auth.server.ResourceServer`) makes the
    handshake (and, with ``http``, every Streamable HTTP request) require
    a bearer token, and serves the protected resource metadata over plain
    HTTP on the same port; the resource is ``http://host:port/path``
    (see docs/authorization.md).
    ``certfile`` / ``keyfile`` (PEM; hypercorn front door) serve ``wss://``
    (and ``https://``).  With ``shutdown``, requests are counted and,
    once it is stopped, the hypercorn door stops accepting and new
    requests are refused (see :class:`~mcp_trio.server.GracefulShutdown`).
    ``task_status.started`` gets the WebSocket URLs, then (with ``http``)
    the HTTP ones.  See docs/websocket.md.
    """
    from ..transports import websocket as ws

    if front_door not in ("hypercorn", "wsproto"):
        raise ValueError("front_door must be 'hypercorn' or 'wsproto'")
    if (http or certfile is not None or shutdown is not None) and front_door != "hypercorn":
        raise ValueError("http=True, certfile and shutdown need the hypercorn front door")
    server._count_in(shutdown)
    limits = {k: websocket_options.pop(k) for k in _DOOR_LIMITS if k in websocket_options}
    endpoint = ws.WebSocketEndpoint(server.serve_session, path=path, auth=auth, **websocket_options)
    routes = auth.metadata_routes(path) if auth is not None else {}
    async with server.lifespan.held(), trio.open_nursery() as nursery:
        await nursery.start(server.tasks.run)
        if front_door == "wsproto":
            serve = partial(ws.serve_wsproto, endpoint, host, port, routes=routes, **limits)
            urls = await nursery.start(serve)
        else:
            http_app = None
            if http:
                from ..transports.http.server import ASGIApp, StreamableHTTP

                http_endpoint = StreamableHTTP(server, versions=server.versions, **(http_options or {}))
                await nursery.start(http_endpoint.run)
                front: Any = auth.protect(http_endpoint) if auth is not None else http_endpoint
                http_app = ASGIApp(front, path, routes)
                routes = {}
            app = ws.WebSocketASGI(endpoint, http_app, routes)
            door = {**_hypercorn_tls(certfile, keyfile), **limits}
            if shutdown is not None:
                door.update(shutdown_trigger=shutdown.stopping.wait, graceful_timeout=math.inf)
            urls = await nursery.start(partial(ws.serve_hypercorn_websocket, app, host, port, **door))
        if auth is not None:  # the resource is the endpoint's http(s) form
            auth.bind_resource("http" + urls[0][2:] + path)
        urls = [url + path for url in urls]
        if http:
            urls += ["http" + url[2:] for url in urls]
        task_status.started(urls)


def _time_requests(server: Server) -> None:
    """Keep the latency histogram of the server's metrics: the one among its middleware, else a
    new one, outermost, counting unknown tool names as ``_other`` (a tool is known when the
    server serves it: its own, a mounted server's, a proxy's or a gateway's)."""
    if server._totals.latency is not None:
        return
    mine = [m for m in server._dispatch.middleware if isinstance(m, LatencyHistogram)]
    if mine:
        server._totals.latency = mine[0]
    else:
        server._totals.latency = LatencyHistogram(
            known=lambda name: server.tool_header_annotations(name) is not None
        )
        server._dispatch.add(server._totals.latency, outermost=True)


#: The keywords of ``serve_websocket`` that go to its front door (of the ConnectionLimits).
_DOOR_LIMITS = ("max_connections", "max_connections_per_client")


def _hypercorn_tls(certfile: str | None, keyfile: str | None) -> dict[str, Any]:
    """The hypercorn ``Config`` attributes serving TLS with ``certfile`` / ``keyfile``."""
    if certfile is None:
        return {}
    return {"certfile": certfile, "keyfile": keyfile}
