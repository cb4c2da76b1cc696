"""The keyword options of ``open_client``, the ``connect_*`` functions and ``call_tool``, typed.

Each is a ``TypedDict`` that the functions take as ``**options: Unpack[...]``,
so a type checker rejects a misspelled option or a value of the wrong type
where the function is called.  At run time they are plain dicts, checked by
:func:`refuse_unknown` before anything is opened: an option a function does not
take is a ``TypeError`` naming it, the function, and where it belongs when it is
another's (``ssl_context`` goes in ``http_options``, ``env`` to a command ...) or
the option it is a misspelling of.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ._cache import ResultCache
from .asks import (
    ElicitationHandler,
    ListChangedHandler,
    LogHandler,
    RootsProvider,
    SamplingHandler,
)

if TYPE_CHECKING:
    from .._engine._context import RequestContext
    from ..middleware._base import Middleware
    from ..transports._base import MessageChannel
    from ..transports.http.client import HTTPAuth, HTTPClientOptions
    from ..transports.websocket import WebSocketClientOptions


class SessionOptions(TypedDict, total=False):
    """The options of the session underneath (see :func:`~mcp_trio.open_session`)."""

    extra_methods: Collection[str]
    request_handlers: Mapping[str, Callable[[RequestContext, Any], Awaitable[Any]]] | None
    default_timeout: float | None
    max_in_flight: int
    max_queued: int | None
    max_queued_total: int | None
    outbox_size: int
    keepalive_interval: float | None
    keepalive_timeout: float
    close_grace: float
    eof_grace: float | None
    reader_relay: bool


class ClientOptions(SessionOptions, total=False):
    """The keyword arguments of :func:`~mcp_trio.client.open_client` after the
    channel; every ``connect_*`` function takes them too."""

    name: str
    version: str
    title: str | None
    versions: Sequence[str] | None
    sampling: SamplingHandler | None
    sampling_tools: bool
    elicitation: ElicitationHandler | None
    elicitation_modes: Sequence[str]
    roots: RootsProvider | None
    on_log: LogHandler | None
    on_list_changed: ListChangedHandler | None
    on_resource_updated: Callable[[str], Awaitable[None]] | None
    on_notification: Callable[[str, Any], Awaitable[None]] | None
    capabilities: Mapping[str, Any] | None
    cache: ResultCache | bool
    cache_namespace: str | None
    auth_context: Any
    max_input_rounds: int
    max_pages: int
    strict: bool
    validate_output: bool | None
    connect_timeout: float | None
    middleware: Sequence[Middleware]
    wrap_channel: Callable[[MessageChannel], MessageChannel] | None


class ConnectOptions(ClientOptions, total=False):
    """What :func:`~mcp_trio.client.connect` takes: the client's options and
    those of each transport (a transport's own options given for another
    raise ``TypeError``)."""

    env: Mapping[str, str] | None
    cwd: str | None
    stderr: Any
    http_options: HTTPClientOptions | None
    websocket_options: WebSocketClientOptions | None
    auth: HTTPAuth | None


class RequestOptions(TypedDict, total=False):
    """The further options of a request (:meth:`~mcp_trio.client.Client.call_tool`)."""

    reset_timeout_on_progress: bool
    """Each progress notification starts the timeout again (default ``True``)."""
    max_total_timeout: float | None
    """Seconds the request may take in all, progress or not."""


#: What each function opens, for :func:`refuse_unknown`'s advice.
Opening = Literal["http", "websocket", "stdio", "server", "channel"]

_STDIO = frozenset({"env", "cwd", "stderr"})
_STDIO_PROCESS = frozenset({"shutdown_grace", "max_message_size"})  # (open_stdio_client's own)
_OWN = {
    "http_options": "connect_http, for an http(s):// URL",
    "websocket_options": "connect_websocket, for a ws(s):// URL",
    "auth": "connect_http and connect_websocket, for a URL",
}


def client_option_names() -> frozenset[str]:
    """Every option of :class:`ClientOptions` (those of the session included)."""
    return frozenset(ClientOptions.__required_keys__ | ClientOptions.__optional_keys__)


def transport_option_names() -> tuple[frozenset[str], frozenset[str]]:
    """The options of the HTTP and of the WebSocket transport (imported when asked)."""
    from ..transports.http.client import HTTPClientOptions
    from ..transports.websocket import WebSocketClientOptions

    return frozenset(HTTPClientOptions.__optional_keys__), frozenset(WebSocketClientOptions.__optional_keys__)


def refuse_unknown(function: str, given: Iterable[str], accepted: Collection[str], opening: Opening) -> None:
    """Raise ``TypeError`` for the first of ``given`` that ``function`` does not accept,
    naming where it belongs (or what it may be a misspelling of)."""
    for name in given:
        if name not in accepted:
            raise TypeError(
                f"{function}() got an unexpected keyword argument {name!r}: "
                f"{_advice(name, accepted, opening)}"
            )


def refuse_unknown_transport(
    function: str, given: Iterable[str], opening: Literal["http", "websocket"]
) -> None:
    """The same for the keys of ``http_options`` / ``websocket_options``."""
    http, websocket = transport_option_names()
    accepted = http if opening == "http" else websocket
    argument = f"{opening}_options"
    for name in given:
        if name not in accepted:
            if name in client_option_names():
                where = f"it is an option of the client: pass it to {function}() itself, not in {argument}"
            else:
                where = _close(name, accepted) or f"the {argument} are those of {_OPENERS[opening]}"
            raise TypeError(f"{function}(): {argument} has no option {name!r}: {where}")


_OPENERS = {
    "http": "open_http_client (HTTPClientOptions)",
    "websocket": "open_websocket_client (WebSocketClientOptions)",
}


def _advice(name: str, accepted: Collection[str], opening: Opening) -> str:
    timeouts = "default_timeout= (each request, in seconds) and connect_timeout= (the negotiation)"
    if name == "timeout" and opening != "http":
        return f"the client's timeouts are {timeouts}"
    advice = _where(name, accepted, opening)
    return f"{advice}; the client's own timeouts are {timeouts}" if name == "timeout" else advice


def _where(name: str, accepted: Collection[str], opening: Opening) -> str:
    http, websocket = transport_option_names()
    if name in _STDIO_PROCESS and opening in ("stdio", "channel"):
        return (
            "it is an option of open_stdio_client: start the process with it and pass "
            "process.channel to open_client"
        )
    if opening == "http" and name in http:
        return f"it is an option of the HTTP transport: pass http_options={{{name!r}: ...}}"
    if opening == "websocket" and name in websocket:
        return f"it is an option of the WebSocket transport: pass websocket_options={{{name!r}: ...}}"
    if name in _STDIO:
        return "it is an option of connect_stdio, for a command to start"
    if name in _OWN:
        return f"it is an option of {_OWN[name]}"
    if name in http or name in websocket:
        doors = [
            d for d, names in (("http_options", http), ("websocket_options", websocket)) if name in names
        ]
        where = (
            "the channel's opener (open_http_client, open_websocket_client)"
            if opening == "channel"
            else ("connect_http / connect_websocket, in " + " or ".join(doors))
        )
        return f"it is an option of a network transport, given to {where}"
    return _close(name, accepted) or (
        "see ClientOptions for the options of a client"
        + ("" if opening in ("server", "channel") else " and ConnectOptions for those of each transport")
    )


def _close(name: str, accepted: Collection[str]) -> str | None:
    match = difflib.get_close_matches(name, list(accepted), n=1, cutoff=0.75)
    return f"did you mean {match[0]!r}?" if match else None
