"""Messages we send: ``request()``, ``notify()``, progress and stream controls.

Rules: ``request()`` waits in the caller's task, for a :class:`_Waiter` the
reader fills in.  Its timeout is an idle deadline that each progress
notification may push back, bounded by an optional total.  On timeout or
cancellation it sends ``notifications/cancelled`` (shielded, at most
``close_grace``; never for ``initialize``) before raising, and a late answer
is dropped.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import trio

from .._core import ProgressReceived, SessionCore
from .._exceptions import ConnectionClosed
from ..transports._base import CLOSE_STREAM, Frame, HostedSession, MessageChannel
from ._common import _DEFAULT

__all__ = ["ProgressCallback", "RequestTimeout"]

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]


class RequestTimeout(trio.TooSlowError):
    """An outgoing request got no answer in time.

    A subclass of :class:`trio.TooSlowError`.  The engine has already sent
    ``notifications/cancelled`` for the request.
    """


_PROGRESS_BACKLOG = 256


class _Waiter:
    """Where the reader leaves the answer (and progress) for one outgoing request."""

    __slots__ = ("done", "result", "error", "progress", "wakeup", "idle_scope", "idle_timeout")

    def __init__(self) -> None:
        self.done = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.progress: deque[ProgressReceived] = deque(maxlen=_PROGRESS_BACKLOG)
        self.wakeup = trio.Event()
        self.idle_scope: trio.CancelScope | None = None
        self.idle_timeout: float | None = None

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.result = result
        self.error = error
        self.wakeup.set()

    def add_progress(self, event: ProgressReceived) -> None:
        self.progress.append(event)
        if self.idle_scope is not None and self.idle_timeout is not None:
            self.idle_scope.deadline = trio.current_time() + self.idle_timeout
        self.wakeup.set()


class _Outgoing:
    """The sending half of :class:`~mcp_trio.Session` (a mixin of it)."""

    core: SessionCore
    channel: MessageChannel
    default_timeout: float | None
    close_grace: float
    _close_reason: str
    _waiters: dict[Any, _Waiter]

    if TYPE_CHECKING:

        async def _put(self, frame: Frame) -> None: ...

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None | object = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = True,
        max_total_timeout: float | None = None,
        related: Any = None,
        on_sent: Callable[[Any], None] | None = None,
        result_type: Any = None,
    ) -> Any:
        """Send a request and wait for its result.

        Args:
            method: The method name.
            params: A params Struct, a dict (validated against the revision's
                params type), or ``None``.
            timeout: Seconds to wait for the answer (``None``: forever); by
                default the session's ``default_timeout``.
            on_progress: ``async (progress, total, message)`` called in this
                task for each progress notification; asks the peer for progress.
            reset_timeout_on_progress: Each progress notification restarts the
                ``timeout`` clock.
            max_total_timeout: An upper bound that progress cannot extend.
            related: The id of the incoming request this one is made on behalf
                of (Streamable HTTP sends it on that request's stream).
            on_sent: Called with the request's id before it is written (to
                correlate what the peer sends about it, e.g. a subscription).
            result_type: Decode the method's ordinary result as this type
                instead of the revision's (e.g. ``dict[str, Any]`` for a
                caller that reads it tolerantly); alternatives it names by
                ``resultType`` keep their types.

        Returns:
            The decoded result Struct (a ``dict`` for custom methods).

        Raises:
            McpError: the peer answered with an error.
            RequestTimeout: no answer in time (``notifications/cancelled`` was sent).
            ConnectionClosed: the session ended first.
            LocalProtocolError: the request may not be sent now.
            RemoteProtocolError: the peer's answer was invalid.

        Cancellation: cancelling the calling task sends ``notifications/cancelled``
        to the peer (except for ``initialize``) and drops any late answer.
        """
        if self.core.closed:
            raise ConnectionClosed(self._close_reason)
        if timeout is _DEFAULT:
            timeout = self.default_timeout
        assert timeout is None or isinstance(timeout, int | float)
        id, data = self.core.start_request(
            method, params, progress=on_progress is not None, result_type=result_type
        )
        if on_sent is not None:
            on_sent(id)
        waiter = _Waiter()
        self._waiters[id] = waiter
        timed_out: str | None = None
        try:
            await self._put(Frame(data, related))
            idle = math.inf if timeout is None else float(timeout)
            with trio.move_on_after(
                math.inf if max_total_timeout is None else max_total_timeout
            ) as total_scope:
                with trio.move_on_after(idle) as idle_scope:
                    if reset_timeout_on_progress and timeout is not None:
                        waiter.idle_scope = idle_scope
                        waiter.idle_timeout = float(timeout)
                    while True:
                        if waiter.progress and on_progress is not None:
                            p = waiter.progress.popleft()
                            await on_progress(p.progress, p.total, p.message)
                            continue
                        if waiter.done:
                            break
                        waiter.wakeup = trio.Event()
                        if waiter.progress or waiter.done:
                            continue
                        await waiter.wakeup.wait()
            if not waiter.done:
                if total_scope.cancelled_caught:
                    timed_out = f"{method} got no answer within {max_total_timeout} s in total"
                else:
                    timed_out = f"{method} got no answer within {timeout} s"
        finally:
            if not waiter.done:
                cancel = self.core.cancel(id, timed_out or "cancelled by the caller")
                if cancel is not None:
                    with trio.move_on_after(self.close_grace, shield=True):
                        try:
                            await self._put(Frame(cancel, related))
                        except ConnectionClosed:
                            pass
            self._waiters.pop(id, None)
        if timed_out is not None:
            raise RequestTimeout(timed_out)
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def notify(self, method: str, params: Any = None, *, related: Any = None) -> None:
        """Send a notification.

        Raises:
            LocalProtocolError: it may not be sent now (lifecycle, capability).
            ConnectionClosed: the session has ended.
        """
        if self.core.closed:
            raise ConnectionClosed(self._close_reason)
        await self._put(Frame(self.core.notify(method, params), related))

    async def close_stream(self, request_id: Any) -> bool:
        """Ask the transport to end the response stream of the peer's request
        ``request_id`` while the request goes on (SSE polling).

        What was sent before reaches the stream first.  Returns False when the
        transport has no such streams (stdio, in-memory); Streamable HTTP
        closes the stream only when the client can resume it (an event store,
        a session, 2025-11-25 or later: the stream began with a priming event)
        and otherwise keeps it open.
        """
        if not (isinstance(self.channel, HostedSession) and self.channel.stream_controls):
            return False
        if self.core.closed:
            raise ConnectionClosed(self._close_reason)
        await self._put(Frame(b"", request_id, control=CLOSE_STREAM))
        return True

    async def send_progress(
        self,
        request_id: Any,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on the peer's request ``request_id`` (no-op without a token)."""
        data = self.core.progress(request_id, progress, total, message)
        if data is not None:
            await self._put(Frame(data, request_id))

    async def ping(self, *, timeout: float | None | object = _DEFAULT) -> None:
        await self.request("ping", timeout=timeout)
