"""Plain HTTP routes next to the MCP endpoint: health and readiness checks,
metrics, anything else (``@server.route`` and ``serve_http(routes=...)``).

Rules:

* A route handler takes the :class:`~mcp_trio.transports.http.server.HttpRequest`
  (re-exported as ``mcp_trio.server.HttpRequest``) or nothing, may be sync
  (run in a worker thread, unless registered with ``on_loop=True``) or
  async, and returns an :class:`HttpResponse`, or for convenience a ``str``
  (200, ``text/plain``), ``bytes`` (200, ``application/octet-stream``), a
  ``dict`` or ``list`` (200, JSON) or ``None`` (200, empty).
* A handler that raises gets 500, its traceback logged at ERROR on
  ``mcp_trio.server``.  A method the route does not list gets 405 with
  ``Allow`` (a route that takes ``GET`` takes ``HEAD`` too).
* Routes pass the same ``Host`` / ``Origin`` check as the MCP endpoint (DNS
  rebinding protection; ``allowed_hosts`` and ``allowed_origins`` of
  ``serve_http``) and bodies up to its ``max_body_size``.  They need no
  token, even with ``serve_http(auth=...)``, unless registered with
  ``auth=True`` (a health check is usually asked by something that has none).
* A route's path may not be the MCP endpoint's, nor one of the legacy
  HTTP+SSE or authorization metadata paths: ``serve_http`` refuses to start.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeAlias, TypeVar, cast

import msgspec
import trio

from ..transports.http._replies import _Reply
from ..transports.http._request import Handler, HostGuard, HttpRequest, Responder, _send_reply
from ._context import _thread_for
from ._stats import prometheus_text

if TYPE_CHECKING:
    from ._server import Server

# HttpRequest: what a route handler receives (the front doors' own request).
__all__ = ["HttpRequest", "HttpResponse", "Route", "RouteHandler", "RouteResult"]

log = logging.getLogger("mcp_trio.server")

_TEXT = "text/plain; charset=utf-8"
_METHOD = re.compile(r"[A-Z]+")
#: The authorization metadata's paths (RFC 9728), never a route's.
_WELL_KNOWN = "/.well-known/"


@dataclass(frozen=True)
class HttpResponse:
    """What a route handler answers.

    Attributes:
        body: The body; a ``str`` is sent as UTF-8.
        status: The status code.
        headers: More headers (``content-length`` is set from the body).
        content_type: The ``content-type`` (unless ``headers`` name one).
    """

    body: bytes | str = b""
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = _TEXT


RouteResult: TypeAlias = HttpResponse | str | bytes | Mapping[str, object] | Sequence[object] | None
"""What a route handler may return (see :class:`HttpResponse` and the module's rules)."""

RouteHandler: TypeAlias = (
    Callable[[HttpRequest], RouteResult | Awaitable[RouteResult]]
    | Callable[[], RouteResult | Awaitable[RouteResult]]
)
"""A route handler: takes the request (or nothing), sync or async."""

_F = TypeVar("_F", bound=RouteHandler)


@dataclass(frozen=True)
class Route:
    """A route for ``serve_http(routes={path: Route(...)})``; ``@server.route``
    makes them too.  ``methods`` are those it takes (``GET`` takes ``HEAD``
    too); ``auth=True`` puts it behind ``serve_http``'s ``auth`` (it then
    needs a token); ``on_loop=True`` runs a sync handler on the event loop
    instead of a worker thread (for quick ones)."""

    handler: RouteHandler
    methods: tuple[str, ...] = ("GET",)
    auth: bool = False
    on_loop: bool = False

    def __post_init__(self) -> None:
        methods = tuple(m.upper() for m in self.methods)
        if not methods or not all(_METHOD.fullmatch(m) for m in methods):
            raise ValueError(
                f"a route's methods must be HTTP method names, like ('GET', 'POST'): {methods!r}"
            )
        if "GET" in methods and "HEAD" not in methods:
            methods += ("HEAD",)
        object.__setattr__(self, "methods", methods)


def _route_path(path: str) -> str:
    """``path`` as the front doors match it, or a ValueError naming what is wrong."""
    if not isinstance(path, str) or not path.startswith("/") or any(c in path for c in "?# "):
        raise ValueError(f"a route's path must start with '/' and have no query or spaces: {path!r}")
    normal = path.rstrip("/") or "/"
    if normal.startswith(_WELL_KNOWN):
        raise ValueError(f"route {path!r}: /.well-known/ paths are kept for the authorization metadata")
    return normal


def register_route(
    server: Server, path: str, methods: Sequence[str] = ("GET",), *, auth: bool = False, on_loop: bool = False
) -> Callable[[_F], _F]:
    """Register the decorated function as the handler of HTTP ``path``
    (for ``serve_http``), next to the MCP endpoint::

        @server.route("/healthz")
        def health() -> str:
            return "ok"

    See :class:`Route` for the options; the rules are in
    :mod:`mcp_trio.server._routes`.  A path registered twice is refused.
    (``Server.route``, bound there.)
    """
    normal = _route_path(path)
    if normal in server._routes:
        raise ValueError(f"route {path!r} is already registered")

    def register(fn: _F) -> _F:
        server._routes[normal] = Route(fn, tuple(methods), auth=auth, on_loop=on_loop)
        return fn

    return register


def http_routes(
    server: Server,
    extra: Mapping[str, RouteHandler | Route] | None,
    metrics_path: str | None,
    reserved: Mapping[str, str],
    metrics_token: str | None = None,
) -> dict[str, Route]:
    """The routes ``serve_http`` serves: ``server``'s, then ``extra``, then the
    metrics route (behind ``metrics_token`` if given); a ValueError for a path
    given twice or one in ``reserved`` (path -> what it is)."""
    table = dict(server._routes)
    given = dict(extra or {})
    if metrics_token is not None and not metrics_token:
        raise ValueError("metrics_token must not be empty")
    if metrics_path is not None:
        given[metrics_path] = Route(partial(_metrics, server, metrics_token), on_loop=True)
    elif metrics_token is not None:
        raise ValueError("metrics_token needs metrics_path")
    for path, value in given.items():
        normal = _route_path(path)
        if normal in table:
            raise ValueError(f"route {path!r} is given twice (routes=, @server.route or metrics_path)")
        table[normal] = value if isinstance(value, Route) else Route(value)
    for path in table:
        if path in reserved:
            raise ValueError(f"route {path!r} clashes with {reserved[path]}; choose another path")
    return table


def _metrics(server: Server, token: str | None, request: HttpRequest) -> HttpResponse:
    if token is not None:
        given = request.headers.get("authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip().encode(), token.encode()):
            return HttpResponse(
                "the metrics need a bearer token\n", 401, {"www-authenticate": 'Bearer realm="metrics"'}
            )
    return HttpResponse(prometheus_text(server), content_type="text/plain; version=0.0.4; charset=utf-8")


class RouteEndpoint:
    """Serves one :class:`Route` (a front door's :class:`Handler`)."""

    def __init__(
        self,
        path: str,
        route: Route,
        guard: HostGuard,
        max_body_size: int,
        limiter: trio.CapacityLimiter,
    ) -> None:
        self.path = path
        self.route = route
        self.guard = guard
        self.max_body_size = max_body_size
        self._limiter = limiter if _thread_for(route.handler, route.on_loop) else None
        try:
            takes_request = bool(inspect.signature(route.handler).parameters)
        except (TypeError, ValueError):
            takes_request = True
        if takes_request:
            self._call = cast(Callable[[HttpRequest], object], route.handler)
        else:
            alone = cast(Callable[[], object], route.handler)
            self._call = lambda request: alone()

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        reply = self.guard.check(request)
        if reply is None:
            reply = await self._answer(request)
        await _send_reply(responder, reply)

    async def _answer(self, request: HttpRequest) -> _Reply:
        methods = self.route.methods
        if request.method not in methods:
            return _Reply(
                405, b"Method Not Allowed", [("content-type", _TEXT), ("allow", ", ".join(methods))]
            )
        call = partial(self._call, request)
        try:
            if self._limiter is not None:
                result = await trio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)
            else:
                result = call()
            if inspect.isawaitable(result):
                result = await result
            return _reply(result)
        except Exception:
            log.exception("route %s (%s) failed", self.path, request.method)
            return _Reply(500, b"Internal Server Error", [("content-type", _TEXT)])


def _reply(result: object) -> _Reply:
    """A route handler's result as the reply to send."""
    if isinstance(result, HttpResponse):
        body = result.body.encode() if isinstance(result.body, str) else bytes(result.body)
        headers = [(k.lower(), v) for k, v in result.headers.items() if k.lower() != "content-length"]
        if not any(name == "content-type" for name, _ in headers):
            headers.insert(0, ("content-type", result.content_type))
        return _Reply(result.status, body, headers)
    if result is None:
        return _Reply(200, b"", [("content-type", _TEXT)])
    if isinstance(result, str):
        return _Reply(200, result.encode(), [("content-type", _TEXT)])
    if isinstance(result, bytes | bytearray | memoryview):
        return _Reply(200, bytes(result), [("content-type", "application/octet-stream")])
    if isinstance(result, Mapping | Sequence):
        return _Reply(200, msgspec.json.encode(result), [("content-type", "application/json")])
    raise TypeError(f"a route handler returned {type(result).__name__}: return an HttpResponse, str or dict")


def route_threads_limiter(threads: int) -> trio.CapacityLimiter:
    """What bounds the worker threads of sync route handlers (``serve_http(route_threads=)``)."""
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"route_threads must be a whole number of at least 1, not {threads!r}")
    return trio.CapacityLimiter(threads)


def route_handlers(
    routes: Mapping[str, Route], guard: HostGuard, max_body_size: int, limiter: trio.CapacityLimiter
) -> dict[str, Handler]:
    """A front door's handler for each route (behind ``guard``)."""
    return {p: RouteEndpoint(p, r, guard, max_body_size, limiter) for p, r in routes.items()}
