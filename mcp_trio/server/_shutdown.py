"""Graceful shutdown of a server: stop taking requests, let those under way finish.

A :class:`GracefulShutdown` handed to ``Server.serve_http``, ``serve_websocket``
or ``serve_stdio`` watches the server's requests in flight.  Once :meth:`stop
<GracefulShutdown.stop>` is called, the front doors close their listening
sockets (new clients are refused), an HTTP request arriving on a connection
still open is answered 503 with ``connection: close``, and a JSON-RPC request
arriving on a session still open gets error -32603 ("the server is shutting
down").  :meth:`~GracefulShutdown.wait_idle` returns once no request is in
flight any more (for HTTP: once its answer is written).  When the caller
gives up waiting, :meth:`~GracefulShutdown.cut` answers the requests left with
an error ("cancelled by server shutdown") and cancels them; the caller then
cancels the serving call, which ends every session.  ``mcp-trio serve`` does
that on SIGINT / SIGTERM within ``--grace-period``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import trio

from .. import _jsonrpc as rpc
from .._exceptions import McpError

if TYPE_CHECKING:
    from ._stats import ServerStatistics

__all__ = ["GracefulShutdown"]

_SHUTTING_DOWN = "the server is shutting down"
#: What a request cut at the end of a grace period is answered (see :meth:`GracefulShutdown.cut`).
CUT = "cancelled by server shutdown: the grace period is over"
_LOOK_AGAIN = 0.02  # seconds between looks at the requests in flight while draining


class _Request(Protocol):
    method: str


class _Responder(Protocol):
    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def end(self) -> None: ...


class _Handler(Protocol):
    max_body_size: int

    async def handle(self, request: Any, responder: Any) -> None: ...


class _Cuttable(Protocol):
    def cut(self, reason: str) -> None: ...


class _Holding(Protocol):
    """Requests a shutdown waits for that the server does not count itself (a proxy's stdio
    relay: :mod:`mcp_trio.proxy`)."""

    @property
    def in_flight(self) -> int: ...

    def cut(self, reason: str) -> None: ...


class _Served(Protocol):
    """What a shutdown needs of a server it stops (a :class:`~mcp_trio.server.Server`)."""

    @property
    def _sessions(self) -> Collection[_Cuttable]: ...

    def statistics(self) -> ServerStatistics: ...

    def _refuse_requests(self, refuse: Callable[[Any, Any], Awaitable[Any]]) -> None: ...


class GracefulShutdown:
    """Stops a server's intake and lets the requests under way finish.

    It costs nothing per request before :meth:`stop`: the requests in flight
    are the server's own count (:meth:`Server.statistics
    <mcp_trio.server.Server.statistics>`), and the handlers that refuse new
    requests are put in place only when it stops.

    Attributes:
        stopping: Set by :meth:`stop`; front doors stop accepting when it is.
        refused: Requests (HTTP or JSON-RPC) refused because of :meth:`stop`.
    """

    def __init__(self) -> None:
        self.stopping = trio.Event()
        self.refused = 0
        self._refused_calls = 0  # JSON-RPC refusals: the server counts them as errors
        self._servers: list[_Served] = []
        self._at_stop: list[ServerStatistics] = []
        self._exchanges = 0  # HTTP requests (not GET streams) being answered
        self._changed = trio.lowlevel.ParkingLot()
        self._held: list[_Holding] = []

    def _hold(self, holding: _Holding) -> None:
        """Wait for the requests of ``holding`` too (and cut them with the server's)."""
        if all(h is not holding for h in self._held):
            self._held.append(holding)

    def _attach(self, server: _Served) -> None:
        """Stop ``server`` with this shutdown (its ``serve_*`` calls this)."""
        if any(s is server for s in self._servers):
            return
        self._servers.append(server)
        if self.stopping.is_set():
            self._at_stop.append(server.statistics())
            server._refuse_requests(self._refuse)

    def stop(self) -> None:
        """Stop taking requests (see the module's docstring); again: nothing."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self._at_stop = [server.statistics() for server in self._servers]
        for server in self._servers:
            server._refuse_requests(self._refuse)
        self._changed.unpark_all()

    def cut(self, reason: str = CUT) -> None:
        """Answer every request still in flight with a JSON-RPC error (-32603) saying
        ``reason`` and cancel its handler: what to do at the end of a grace period,
        before the serving call is cancelled (give the answers a moment to be written:
        :meth:`wait_idle` within a second or so), so that no client is left with a
        connection closed under its request."""
        self.stop()
        for server in self._servers:
            for session in list(server._sessions):
                session.cut(reason)
        for holding in self._held:
            holding.cut(reason)

    async def _refuse(self, ctx: Any, params: Any) -> Any:
        self.refused += 1
        self._refused_calls += 1
        raise McpError(rpc.INTERNAL_ERROR, _SHUTTING_DOWN)

    @property
    def in_flight(self) -> int:
        """JSON-RPC requests whose handler runs now."""
        held = sum(holding.in_flight for holding in self._held)
        return held + sum(server.statistics().requests_in_flight for server in self._servers)

    @property
    def finished(self) -> int:
        """Requests whose handler ended (answered, or with an error) after :meth:`stop`."""
        ended = sum(
            now.requests_ok + now.requests_error - then.requests_ok - then.requests_error
            for now, then in self._since_stop()
        )
        return ended - self._refused_calls

    @property
    def cancelled(self) -> int:
        """Requests cancelled after :meth:`stop` (by the peer, or when the
        serving call was cancelled)."""
        return sum(now.requests_cancelled - then.requests_cancelled for now, then in self._since_stop())

    def _since_stop(self) -> list[tuple[ServerStatistics, ServerStatistics]]:
        return [
            (server.statistics(), then) for server, then in zip(self._servers, self._at_stop, strict=True)
        ]

    @property
    def idle(self) -> bool:
        """Whether no request is in flight (and no HTTP answer under way)."""
        return self._exchanges == 0 and self.in_flight == 0

    async def wait_idle(self) -> None:
        """Return once :attr:`idle` (at once if it is)."""
        while not self.idle:
            # An HTTP answer's end wakes us; a request's end is only counted
            # by the server, so look again soon.
            with trio.move_on_after(_LOOK_AGAIN):
                await self._changed.park()

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
