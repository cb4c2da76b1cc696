"""Graceful shutdown of a server: stop taking requests, let those under way finish.

A :class:`GracefulShutdown` handed to ``Server.serve_http``, ``serve_websocket``
or ``serve_stdio`` counts the server's requests in flight.  Once :meth:`stop
<GracefulShutdown.stop>` is called, the front doors close their listening
sockets (new clients are refused), an HTTP request arriving on a connection
still open is answered 503 with ``connection: close``, and a JSON-RPC request
arriving on a session still open gets error -32603 ("the server is shutting
down").  :meth:`~GracefulShutdown.wait_idle` returns once no request is in
flight any more (for HTTP: once its answer is written); the caller then
cancels the serving call, which ends every session and cancels what is left.
``mcp-trio serve`` does that on SIGINT / SIGTERM within ``--grace-period``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import trio

from .. import _jsonrpc as rpc
from .._exceptions import McpError

__all__ = ["GracefulShutdown"]

_SHUTTING_DOWN = "the server is shutting down"


class _Request(Protocol):
    method: str


class _Responder(Protocol):
    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def end(self) -> None: ...


class _Handler(Protocol):
    max_body_size: int

    async def handle(self, request: Any, responder: Any) -> None: ...


class GracefulShutdown:
    """Counts a server's requests in flight and refuses new ones once stopped.

    Attributes:
        stopping: Set by :meth:`stop`; front doors stop accepting when it is.
        in_flight: JSON-RPC requests whose handler runs now.
        finished: Requests whose handler ended (answered, or with an error)
            after :meth:`stop`.
        cancelled: Requests whose handler was cancelled after :meth:`stop`
            (by the peer, or when the serving call was cancelled).
        refused: Requests (HTTP or JSON-RPC) refused because of :meth:`stop`.
    """

    def __init__(self) -> None:
        self.stopping = trio.Event()
        self.in_flight = 0
        self.finished = 0
        self.cancelled = 0
        self.refused = 0
        self._exchanges = 0  # HTTP requests (not GET streams) being answered
        self._changed = trio.lowlevel.ParkingLot()

    def stop(self) -> None:
        """Stop taking requests (see the module's docstring); again: nothing."""
        self.stopping.set()
        self._changed.unpark_all()

    @property
    def idle(self) -> bool:
        """Whether no request is in flight (and no HTTP answer under way)."""
        return self.in_flight == 0 and self._exchanges == 0

    async def wait_idle(self) -> None:
        """Return once :attr:`idle` (at once if it is)."""
        while not self.idle:
            await self._changed.park()

    def _ended(self, cancelled: bool) -> None:
        self.in_flight -= 1
        if self.stopping.is_set():
            if cancelled:
                self.cancelled += 1
            else:
                self.finished += 1
        self._changed.unpark_all()

    def wrap_handlers(self, table: Mapping[str, Any]) -> dict[str, Any]:
        """``table`` (method -> request handler) with every handler counted."""
        return {method: self._counted(handler) for method, handler in table.items()}

    def _counted(self, handler: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        async def counted(ctx: Any, params: Any) -> Any:
            if self.stopping.is_set():
                self.refused += 1
                raise McpError(rpc.INTERNAL_ERROR, _SHUTTING_DOWN)
            self.in_flight += 1
            cancelled = False
            try:
                return await handler(ctx, params)
            except trio.Cancelled:
                cancelled = True
                raise
            finally:
                self._ended(cancelled)

        return counted

    def wrap_endpoint(self, endpoint: _Handler) -> _Handler:
        """``endpoint`` (an HTTP handler) refusing requests once stopped, its
        answers under way counted (all but ``GET``: a stream may last)."""
        return _Draining(self, endpoint)


class _Draining:
    """An HTTP handler behind :meth:`GracefulShutdown.wrap_endpoint`."""

    def __init__(self, shutdown: GracefulShutdown, inner: _Handler) -> None:
        self.shutdown = shutdown
        self.inner = inner
        self.max_body_size = inner.max_body_size

    async def handle(self, request: _Request, responder: _Responder) -> None:
        shutdown = self.shutdown
        if shutdown.stopping.is_set():
            shutdown.refused += 1
            body = rpc.encode_error(None, rpc.INTERNAL_ERROR, _SHUTTING_DOWN)
            headers = [
                ("content-type", "application/json"),
                ("content-length", str(len(body))),
                ("connection", "close"),
                ("retry-after", "5"),
            ]
            await responder.start(503, headers)
            await responder.send(body)
            await responder.end()
            return
        if request.method == "GET":
            await self.inner.handle(request, responder)
            return
        shutdown._exchanges += 1
        try:
            await self.inner.handle(request, responder)
        finally:
            shutdown._exchanges -= 1
            shutdown._changed.unpark_all()
