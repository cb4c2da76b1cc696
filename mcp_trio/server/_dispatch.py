"""What answers each method of a server's sessions: the handlers, wrapped by the
middleware, in one read-only table the sessions share (built on first use and
again when middleware is added), or, once a graceful shutdown has begun, a
refusal in place of each."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from .._engine._session import Session
from ..middleware._base import Middleware, wrap_handlers
from ..transports._base import MessageChannel

if TYPE_CHECKING:
    from ._shutdown import GracefulShutdown


class Answering(Protocol):
    """What answers every request of a server in place of its own registries, with the
    capabilities it advertises (a proxy: :func:`mcp_trio.proxy.proxy`)."""

    def attach(self, announce: Callable[[str], None], listen: Any, updated: Callable[[str], None]) -> None:
        """Called once by the server: ``announce(method)`` sends a ``list_changed``
        notification to its sessions; ``listen`` is its ``subscriptions/listen`` handler;
        ``updated(uri)`` tells its ``subscriptions/listen`` streams watching ``uri`` that it changed."""

    def request_handlers(self) -> dict[str, Any]:
        """The handler of each method answered."""
        ...

    def capabilities(self) -> dict[str, Any]:
        """The capabilities advertised to the sessions opened from now on."""
        ...

    def header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None:
        """The ``x-mcp-header`` annotations of tool ``name`` (None: no such tool)."""
        ...

    def open_stdio(
        self, shutdown: GracefulShutdown | None, options: dict[str, Any]
    ) -> AbstractAsyncContextManager[MessageChannel] | None:
        """The channel ``serve_stdio`` serves stdin and stdout through, when the answering
        brings its own (a proxy's stdio relay); None: the stdio transport's.  ``options``
        are those of :func:`~mcp_trio.transports.stdio.open_stdio_server_channel`."""
        ...


class Dispatch:
    """A server's handler table and its middleware."""

    __slots__ = ("middleware", "_table", "_handlers", "_sessions")

    def __init__(
        self,
        handlers: Callable[[], dict[str, Any]],
        middleware: Iterable[Middleware],
        sessions: Iterable[Session],
    ) -> None:
        #: Installed, the outermost first.
        self.middleware: list[Middleware] = list(middleware)
        self._table: Mapping[str, Any] | None = None
        self._handlers = handlers  # (Server.request_handlers: a new dict on every call)
        self._sessions = sessions  # (the open ones)

    def add(self, middleware: Middleware, *, outermost: bool) -> None:
        """``Server.add_middleware``."""
        if outermost:
            self.middleware.insert(0, middleware)
        else:
            self.middleware.append(middleware)
        old = self._table
        self._table = None
        if old is not None:
            table = self.table()
            for session in self._sessions:
                session.use_handlers(table, instead_of=old)  # (those still on the shared table)

    def table(self) -> Mapping[str, Any]:
        """The handlers, each wrapped by the middleware, built on first use (and
        after :meth:`add`) and shared, read-only, by every session (a session
        copies it only when its ``request_handlers`` is asked for, to be
        changed).  No middleware: the handlers themselves."""
        table = self._table
        if table is None:
            handlers = self._handlers()
            if self.middleware:
                handlers = wrap_handlers(handlers, self.middleware, "server")
            table = self._table = MappingProxyType(handlers)
        return table

    def refuse(self, refuse: Callable[[Any, Any], Awaitable[Any]]) -> None:
        """From now on, answer every request of every session with ``refuse``
        (a graceful shutdown has begun; the requests under way go on)."""
        self._table = MappingProxyType(dict.fromkeys(self._handlers(), refuse))
        for session in self._sessions:
            session.use_handlers(MappingProxyType(dict.fromkeys(session.handled_methods, refuse)))
