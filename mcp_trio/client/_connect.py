"""Opening a client: :func:`open_client` over a channel and the ``connect_*`` entry points.

Rules:

* :func:`open_client` negotiates the newest revision both sides speak
  (probing with ``server/discover``, falling back to ``initialize``), within
  ``connect_timeout``.
* The capabilities advertised follow from the handlers given; the server's
  notifications go to the client (subscriptions, cache) before the hooks.
* Each ``connect_*`` closes its transport (process, HTTP session, WebSocket)
  when its block ends.
"""

from __future__ import annotations

import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Protocol, Unpack, overload

import trio

from .._engine._common import _unwrap
from .._engine._session import Session, open_session
from ..middleware._base import Middleware, wrap_handlers
from ..transports._base import ChannelTraits, MessageChannel
from ..transports.http._request import SessionServer
from ..transports.memory import open_memory_transport_pair
from ..transports.stdio import open_stdio_client
from ._cache import _INVALIDATES, ResultCache
from ._client import Client
from ._handlers import _client_capabilities, _log_message
from ._options import (
    ClientOptions,
    ConnectOptions,
    Opening,
    SessionOptions,
    client_option_names,
    refuse_unknown,
    refuse_unknown_transport,
)
from .asks import (
    ElicitationHandler,
    ListChangedHandler,
    ListName,
    LogHandler,
    RootsProvider,
    SamplingHandler,
)

if TYPE_CHECKING:
    from ..transports.http.client import HTTPAuth, HTTPClientOptions
    from ..transports.websocket import WebSocketClientOptions


_LIST_NAMES: dict[str, ListName] = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}


class ServesSessions(Protocol):
    """What :func:`connect_server` serves: a :class:`~mcp_trio.server.Server`, or
    any object with the same ``serve_session``."""

    async def serve_session(self, channel: MessageChannel, *, task_status: Any = ...) -> None: ...


@asynccontextmanager
async def open_client(
    channel: MessageChannel,
    *,
    name: str = "mcp-trio",
    version: str = "0",
    title: str | None = None,
    versions: Sequence[str] | None = None,
    sampling: SamplingHandler | None = None,
    sampling_tools: bool = False,
    elicitation: ElicitationHandler | None = None,
    elicitation_modes: Sequence[str] = ("form",),
    roots: RootsProvider | None = None,
    on_log: LogHandler | None = None,
    on_list_changed: ListChangedHandler | None = None,
    on_resource_updated: Callable[[str], Awaitable[None]] | None = None,
    on_notification: Callable[[str, Any], Awaitable[None]] | None = None,
    capabilities: Mapping[str, Any] | None = None,
    cache: ResultCache | bool = True,
    cache_namespace: str | None = None,
    auth_context: Any = None,
    max_input_rounds: int = 16,
    max_pages: int = 10_000,
    strict: bool = False,
    validate_output: bool | None = None,
    connect_timeout: float | None = 30.0,
    middleware: Sequence[Middleware] = (),
    wrap_channel: Callable[[MessageChannel], MessageChannel] | None = None,
    **session_options: Unpack[SessionOptions],
) -> AsyncIterator[Client]:
    """Open a session over ``channel`` as a client and connect.

    Args:
        name, version, title: ``clientInfo``.
        versions: Protocol revisions to accept (default: all supported).
        sampling: ``async (CreateMessageParams) -> CreateMessageResult``
            (:data:`~mcp_trio.client.asks.SamplingHandler`; the result may
            also be a dict of wire names).  Advertises ``sampling`` (with
            ``tools`` when ``sampling_tools``).
        elicitation: ``async (ElicitParams) -> ElicitResult``
            (:data:`~mcp_trio.client.asks.ElicitationHandler`; or a dict).
            Advertises ``elicitation`` with ``elicitation_modes``.
        roots: The roots (:class:`~mcp_trio.client.asks.Root` objects or
            ``{"uri", "name"}`` dicts) or a callable returning them (sync or
            async).  Advertises ``roots``.  The handlers' types are those of
            :mod:`mcp_trio.client.asks`, the same in every revision.
        on_log: ``async (LogMessage)`` (:class:`~mcp_trio.client.asks.LogMessage`:
            ``level``, ``data``, ``logger``, absent ones ``None``).
        on_list_changed: ``async ("tools" | "resources" | "prompts")``.
        on_resource_updated: ``async (uri)``.
        on_notification: ``async (method, params)`` for every notification.
        capabilities: Extra capabilities to advertise (``experimental``,
            ``extensions`` ...), merged over the derived ones.
        cache: ``False`` disables result caching; a :class:`ResultCache` is
            used (and may be shared); ``True`` makes a private one.
        cache_namespace: Separates servers sharing one cache (default: the
            server's name).
        auth_context: Identifies the authorization context for ``private``
            results in a shared cache (default: this client alone).
        max_input_rounds: Multi-round-trip retries allowed per request.
        max_pages: Pages ``list_all_*`` follow before giving up.
        strict: Reject a result holding anything the negotiated revision
            does not define (a content block of an unknown type, a member
            it lacks) with :class:`RemoteProtocolError`.  By default such
            extras are kept (``extra``, :class:`~mcp_trio.client.results.UnknownContent`)
            and logged as a warning (see :mod:`mcp_trio.client.results`).
        validate_output: Check each ``structuredContent`` against the
            ``outputSchema`` of its tool in the last ``tools/list`` (needs the
            ``validation`` extra, ``jsonschema-rs``).  ``None`` (the default):
            check when it is installed, else say so once per process at DEBUG;
            ``True``: the same, but its absence is a WARNING; ``False``: never.
        connect_timeout: Seconds allowed for the negotiation; past them
            :class:`trio.TooSlowError` names the server and the timeout.
        middleware: Wrap every ask of the server this client answers
            (sampling, elicitation, roots, custom methods), the first listed
            outermost (see :mod:`mcp_trio.middleware`); one with a ``sending``
            method (:class:`~mcp_trio.middleware.OpenTelemetry`) also wraps each
            request the client sends.
        wrap_channel: Given the transport's channel, returns the one the session uses
            instead: a tap that records every frame, or one that checks every message
            (a proxy's ``validate``).  Closing it must close the channel it wraps.
        session_options: Passed to :func:`open_session` (``default_timeout`` ...;
            see :class:`~mcp_trio.client.SessionOptions`).

    The keywords after ``channel`` are typed as :class:`~mcp_trio.client.ClientOptions`,
    which every ``connect_*`` function takes as ``**client_options``: a type
    checker rejects a misspelled one.
    """
    refuse_unknown("open_client", session_options, _SESSION_OPTIONS, "channel")
    info: dict[str, Any] = {"name": name, "version": version}
    if title is not None:
        info["title"] = title
    caps = _client_capabilities(sampling, elicitation, roots, sampling_tools, elicitation_modes, capabilities)
    holder: list[Client] = []

    def note_handler(method: str) -> Any:
        async def handle(session: Session, method: str, params: Any) -> None:
            if holder:
                holder[0]._on_notification(method, params)
            if method == "notifications/message" and on_log is not None:
                message = _log_message(params)
                if message is not None:
                    await on_log(message)
            elif method in _LIST_NAMES and on_list_changed is not None:
                await on_list_changed(_LIST_NAMES[method])
            elif method == "notifications/resources/updated" and on_resource_updated is not None:
                await on_resource_updated(params.uri)
            if on_notification is not None:
                await on_notification(method, params)

        return handle

    if wrap_channel is not None:
        channel = wrap_channel(channel)
    watched = [
        "notifications/message",
        "notifications/resources/updated",
        "notifications/subscriptions/acknowledged",
        *_INVALIDATES,
    ]
    if on_notification is not None:
        watched += ["notifications/elicitation/complete", "notifications/tasks/status"]
    async with open_session(
        channel,
        role="client",
        info=info,
        capabilities=caps,
        versions=versions,
        notification_handlers={m: note_handler(m) for m in watched},
        **session_options,
    ) as session:
        result_cache = cache if isinstance(cache, ResultCache) else (ResultCache() if cache else None)
        client = Client(
            session,
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            cache=result_cache,
            cache_namespace="",
            auth_context=auth_context,
            max_input_rounds=max_input_rounds,
            max_pages=max_pages,
            strict=strict,
            validate_output=validate_output,
            middleware=middleware,
        )
        holder.append(client)
        for method, present in (
            ("sampling/createMessage", sampling),
            ("elicitation/create", elicitation),
            ("roots/list", roots),
        ):
            if present is not None:
                session.request_handlers[method] = client._exchange.legacy_handler(method)
        if middleware:
            handlers = session.request_handlers
            handlers.update(wrap_handlers(handlers, middleware, "client"))
        with trio.move_on_after(connect_timeout if connect_timeout is not None else float("inf")) as scope:
            await session.connect()
        if scope.cancelled_caught:
            where = (channel.url if isinstance(channel, ChannelTraits) else None) or "the server"
            raise trio.TooSlowError(
                f"connecting to {where} timed out after {connect_timeout} s "
                "(no connection, or no answer to initialize)"
            )
        if client._cached is not None:
            client._cached.namespace = (
                cache_namespace if cache_namespace is not None else str(session.peer_info.get("name", ""))
            )
        yield client


@asynccontextmanager
async def connect_stdio(
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: Any = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Start ``command *args`` as a stdio MCP server and connect to it.

    The process is shut down (stdin closed, then terminated, then killed)
    when the block ends.  ``client_options`` are those of :func:`open_client`.
    """
    refuse_unknown("connect_stdio", client_options, client_option_names(), "stdio")
    async with open_stdio_client(command, args, env=env, cwd=cwd, stderr=stderr) as process:
        async with open_client(process.channel, **client_options) as client:
            yield client


@asynccontextmanager
async def connect_http(
    url: str,
    *,
    http_options: HTTPClientOptions | None = None,
    auth: HTTPAuth | None = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Connect to the Streamable HTTP endpoint ``url``.

    ``http_options`` go to :func:`~mcp_trio.transports.http.client.open_http_client`
    (headers, TLS context, timeouts, ``legacy_fallback`` ...), ``client_options``
    to :func:`open_client`.  ``auth`` supplies credentials for every request
    (e.g. :class:`mcp_trio.auth.client.OAuthClient`; see
    :class:`~mcp_trio.transports.http.client.HTTPAuth`).  The session is
    ended with ``DELETE`` on exit.
    """
    from ..transports.http.client import open_http_client

    refuse_unknown("connect_http", client_options, client_option_names(), "http")
    refuse_unknown_transport("connect_http", http_options or {}, "http")
    async with _connect_over(open_http_client, url, http_options, auth, client_options) as client:
        yield client


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    websocket_options: WebSocketClientOptions | None = None,
    auth: HTTPAuth | None = None,
    **client_options: Unpack[ClientOptions],
) -> AsyncIterator[Client]:
    """Connect to the MCP WebSocket endpoint ``url`` (``ws://`` or ``wss://``).

    ``websocket_options`` go to
    :func:`~mcp_trio.transports.websocket.open_websocket_client` (headers,
    origin, TLS context, keepalive, size limit ...), ``client_options`` to
    :func:`open_client`.  ``auth`` supplies credentials for the handshake
    and authorizes when it is refused (e.g.
    :class:`mcp_trio.auth.client.OAuthClient`).  The connection is closed
    (code 1000) on exit.  If it drops (or the server closes it with 1008
    when the access token expires), pending and later calls raise
    :class:`~mcp_trio.ConnectionClosed`; reconnecting means calling this again.
    """
    from ..transports.websocket import open_websocket_client

    refuse_unknown("connect_websocket", client_options, client_option_names(), "websocket")
    refuse_unknown_transport("connect_websocket", websocket_options or {}, "websocket")
    async with _connect_over(open_websocket_client, url, websocket_options, auth, client_options) as client:
        yield client


@asynccontextmanager
async def _connect_over(
    open_channel: Callable[..., AbstractAsyncContextManager[MessageChannel]],
    url: str,
    transport_options: Mapping[str, Any] | None,  # (HTTPClientOptions or WebSocketClientOptions)
    auth: HTTPAuth | None,
    client_options: ClientOptions,
) -> AsyncIterator[Client]:
    """``open_client`` over ``open_channel(url, **transport_options, auth=auth)``."""
    options = dict(transport_options or {})
    if auth is not None:
        options["auth"] = auth
    async with open_channel(url, **options) as channel:
        async with open_client(channel, **client_options) as client:
            yield client


@asynccontextmanager
async def connect_server(
    server: ServesSessions, **client_options: Unpack[ClientOptions]
) -> AsyncIterator[Client]:
    """Serve ``server`` (a :class:`~mcp_trio.server.Server`, or anything with an
    async ``serve_session(channel, task_status=...)``) in this process over an
    in-memory pair and connect to it: the one-line way to test a server.

    ``client_options`` are those of :func:`open_client`.  The server's side
    ends with the block; an exception in the block comes out as itself, not
    wrapped in an exception group.
    """
    refuse_unknown("connect_server", client_options, client_option_names(), "server")
    ours, theirs = open_memory_transport_pair()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(server.serve_session, theirs)
            async with open_client(ours, **client_options) as client:
                yield client
            nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        raise _unwrap(group) from None


@overload
def connect(
    target: ServesSessions, **options: Unpack[ClientOptions]
) -> AbstractAsyncContextManager[Client]: ...


@overload
def connect(
    target: str | Sequence[str], **options: Unpack[ConnectOptions]
) -> AbstractAsyncContextManager[Client]: ...


def connect(
    target: str | Sequence[str] | ServesSessions, **options: Any
) -> AbstractAsyncContextManager[Client]:
    """Connect to ``target``, whatever it is: an ``http(s)://`` URL (Streamable
    HTTP), a ``ws(s)://`` URL (WebSocket), a server object (in process), or a
    command line to start as a stdio server (a string split like a shell
    would, or a list of arguments).  ``options`` go to the matching
    ``connect_*`` function (:class:`~mcp_trio.client.ConnectOptions`; a
    server object takes :class:`~mcp_trio.client.ClientOptions` only).  An option the
    target's transport does not take is a ``TypeError`` naming where it belongs."""
    opening: Opening = "server"
    if isinstance(target, str):
        scheme = target.split(":", 1)[0].lower()
        opening = (
            "http" if scheme in ("http", "https") else "websocket" if scheme in ("ws", "wss") else "stdio"
        )
    elif isinstance(target, Sequence):
        opening = "stdio"
    refuse_unknown("connect", options, client_option_names() | _CONNECT_OWN[opening], opening)
    if isinstance(target, str):
        if opening == "http":
            return connect_http(target, **options)
        if opening == "websocket":
            return connect_websocket(target, **options)
        target = shlex.split(target)
    if isinstance(target, Sequence) and not isinstance(target, str):
        if not target:
            raise ValueError("connect() needs a command to start, a URL or a server; got an empty command")
        return connect_stdio(*target, **options)
    if isinstance(target, SessionServer):
        return connect_server(target, **options)
    raise TypeError(f"connect() takes a URL, a command or a server, not {type(target).__name__}")


_SESSION_OPTIONS = frozenset(SessionOptions.__optional_keys__)
#: The options of each target's ``connect_*`` beside the client's.
_CONNECT_OWN: dict[Opening, frozenset[str]] = {
    "http": frozenset({"http_options", "auth"}),
    "websocket": frozenset({"websocket_options", "auth"}),
    "stdio": frozenset({"env", "cwd", "stderr"}),
    "server": frozenset(),
    "channel": frozenset(),
}
