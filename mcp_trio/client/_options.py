"""The keyword options of ``open_client``, the ``connect_*`` functions and ``call_tool``, typed.

Each is a ``TypedDict`` that the functions take as ``**options: Unpack[...]``,
so a type checker rejects a misspelled option or a value of the wrong type
where the function is called.  At run time they are plain dicts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

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
    from ..transports.http.client import HTTPAuth


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


class ConnectOptions(ClientOptions, total=False):
    """What :func:`~mcp_trio.client.connect` takes: the client's options and
    those of each transport (a transport's own options given for another
    raise ``TypeError``)."""

    env: Mapping[str, str] | None
    cwd: str | None
    stderr: Any
    http_options: Mapping[str, Any] | None
    websocket_options: Mapping[str, Any] | None
    auth: HTTPAuth | None


class RequestOptions(TypedDict, total=False):
    """The further options of a request (:meth:`~mcp_trio.client.Client.call_tool`)."""

    reset_timeout_on_progress: bool
    """Each progress notification starts the timeout again (default ``True``)."""
    max_total_timeout: float | None
    """Seconds the request may take in all, progress or not."""
