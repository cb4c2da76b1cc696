"""The middleware interface: what a middleware receives, and the chains built from a list of them.

Rules:

* A middleware wraps every request a handler answers, on the server (the
  client's requests) and on the client (the server's asks: sampling,
  elicitation, roots, and any custom method given a handler).  The first of
  the list is the outermost: it sees the request first and the result last.
* ``initialize``, ``ping`` and ``server/discover`` are answered by the session
  itself before any handler, and an unknown method by ``-32601``: no
  middleware sees them.  Notifications (progress, cancellation, list
  changes ...) are not requests and pass no middleware either: they have no
  answer to shape or refuse, and they are read on the session's reading path.
* A middleware may answer instead of calling ``call_next`` (short-circuit) or
  raise :class:`~mcp_trio.McpError`, which becomes the JSON-RPC error reply;
  any other exception is ``-32603`` (as from a handler).
* The chains are built once per handler table (when the first session starts,
  and again after ``add_middleware``), never per request; with no middleware
  the handlers are used as they are, at no cost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, runtime_checkable

import msgspec

from ..transports._base import ChannelTraits

if TYPE_CHECKING:
    from .._engine._context import RequestContext
    from ..store import Store

__all__ = [
    "CallNext",
    "Middleware",
    "Params",
    "RequestInfo",
    "Result",
    "SendingMiddleware",
    "SharingMiddleware",
    "chain",
    "wrap_handlers",
]

#: The decoded params of a request: the negotiated revision's Struct for a
#: method it defines (``CallToolRequestParams`` ...), a dict for a custom one,
#: or ``None`` when the request had none.
Params: TypeAlias = "msgspec.Struct | dict[str, object] | None"
#: What a handler (or a middleware) answers with: the result as a dict of wire
#: names (JSON values), a Struct, or ``None`` (an empty result).
Result: TypeAlias = "dict[str, Any] | msgspec.Struct | None"

_NAMED: dict[str, str] = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


class RequestInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One incoming request, as a middleware sees it (read-only; to pass a
    changed request on, ``msgspec.structs.replace(request, params=...)``).

    Attributes:
        method: The method name (``tools/call`` ...).
        params: The decoded params (see :data:`Params`).
        name: The tool or prompt name (``tools/call``, ``prompts/get``) or the
            resource URI (``resources/read``); ``None`` for other methods.
        request_id: The JSON-RPC id, exactly as the peer sent it; ``None`` for
            a 2026-07-28 ask answered inside an ``InputRequiredResult`` (it
            has no id of its own).
        session_id: The transport's session id (Streamable HTTP's
            ``Mcp-Session-Id``, the HTTP+SSE session), or ``None``.
        side: ``"server"`` (a server answering its client) or ``"client"``
            (a client answering its server's ask).
        context: The engine's :class:`~mcp_trio.RequestContext` of the
            request (its session, ``auth``, ``meta``, ``cancel_scope`` ...),
            or ``None`` for a 2026-07-28 ask (answered outside any request of
            the server).
    """

    method: str
    params: Params
    name: str | None
    request_id: int | str | None
    session_id: str | None
    side: Literal["server", "client"]
    context: RequestContext | None = None

    @property
    def auth(self) -> object:
        """What the transport's authorization verified for this request (an
        ``mcp_trio.auth.server.AccessToken`` behind a protected endpoint), or ``None``."""
        return self.context.auth if self.context is not None else None

    @property
    def meta(self) -> Mapping[str, object]:
        """The request's ``_meta`` (empty when absent)."""
        if self.context is not None:
            return self.context.meta
        meta = getattr(self.params, "meta", None)
        if meta is None and isinstance(self.params, dict):
            meta = self.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def client(self) -> str | None:
        """The client's network address as the transport knows it (over HTTP the peer's, or
        the one trusted proxies name: ``forwarded_allow_ips``), or ``None`` (stdio, in memory)."""
        channel = self.context.session.channel if self.context is not None else None
        return channel.client if isinstance(channel, ChannelTraits) else None

    def session_key(self) -> Hashable:
        """What tells this request's session from the others: its session id,
        else the engine's session object (one connection: stdio, WebSocket,
        in memory)."""
        if self.session_id is not None:
            return self.session_id
        return self.context.session if self.context is not None else None


#: Passes a request on to the next middleware, or to the handler after the last.
CallNext: TypeAlias = Callable[[RequestInfo], Awaitable[Result]]


class Middleware(Protocol):
    """Wraps each incoming request (see the module's rules).

    Example::

        class Deny:
            async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
                if request.name == "drop_tables":
                    raise McpError(INVALID_PARAMS, "not here")
                return await call_next(request)
    """

    async def __call__(self, request: RequestInfo, call_next: CallNext, /) -> Result: ...


@runtime_checkable
class SendingMiddleware(Protocol):
    """A middleware that also wraps the requests a client sends (a ``sending``
    method): :class:`~mcp_trio.middleware.OpenTelemetry`'s client spans."""

    def sending(
        self, method: str, params: dict[str, Any], session_id: str | None
    ) -> AbstractContextManager[None]:
        """A context around one request sent; it may add to ``params`` (``_meta``)."""
        ...


@runtime_checkable
class SharingMiddleware(Protocol):
    """A middleware that keeps state the workers of a server should share (a ``sharing``
    method): :class:`~mcp_trio.middleware.RateLimit`'s buckets.  ``serve_http(store=...)``
    holds ``sharing(store)`` while it serves, for each such middleware of the server."""

    def sharing(self, store: Store) -> AbstractContextManager[None]:
        """A context during which the state is kept in ``store`` (as far as it can hold it)."""
        ...


def name_of(method: str, params: object) -> str | None:
    """The tool or prompt name, or resource URI, of a request (see :class:`RequestInfo`)."""
    field = _NAMED.get(method)
    if field is None:
        return None
    value = params.get(field) if isinstance(params, dict) else getattr(params, field, None)
    return value if isinstance(value, str) else None


def chain(middleware: Sequence[Middleware], last: CallNext) -> CallNext:
    """``last`` wrapped by ``middleware``, the first outermost."""
    call = last
    for m in reversed(middleware):
        call = _link(m, call)
    return call


def _link(m: Middleware, call_next: CallNext) -> CallNext:
    def call(request: RequestInfo) -> Awaitable[Result]:
        return m(request, call_next)

    return call


Handler = Callable[["RequestContext", Any], Awaitable[Any]]


def wrap_handlers(
    handlers: Mapping[str, Handler], middleware: Sequence[Middleware], side: Literal["server", "client"]
) -> dict[str, Handler]:
    """Each of ``handlers`` (a session's table: method -> handler) wrapped by
    ``middleware``; the same handlers when there is none."""
    if not middleware:
        return dict(handlers)
    return {method: _wrapped(method, handler, middleware, side) for method, handler in handlers.items()}


def _wrapped(
    method: str, handler: Handler, middleware: Sequence[Middleware], side: Literal["server", "client"]
) -> Handler:
    def last(request: RequestInfo) -> Awaitable[Result]:
        return handler(request.context, request.params)  # type: ignore[arg-type]  # (set on this path)

    call = chain(middleware, last)
    named = method in _NAMED  # (decided once: most methods name nothing)

    def run(ctx: RequestContext, params: Any) -> Awaitable[Result]:
        return call(
            RequestInfo(
                method=method,
                params=params,
                name=name_of(method, params) if named else None,
                request_id=ctx.id,
                session_id=session_id_of(ctx.session.channel),
                side=side,
                context=ctx,
            )
        )

    return run


def session_id_of(channel: object) -> str | None:
    """The session id a transport's channel knows (``ChannelTraits.session_id``), if any."""
    value = channel.session_id if isinstance(channel, ChannelTraits) else None
    return value if isinstance(value, str) else None
