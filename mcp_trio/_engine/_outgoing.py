"""Messages we send: :class:`Caller` (a session's ``request()``, ``notify()``, progress and
stream controls) and the table of our requests waiting for an answer.

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
from typing import Any

import trio

from .._core import ProgressReceived, SessionCore
from .._exceptions import ConnectionClosed, McpError
from ..transports._base import CLOSE_STREAM, Frame, HostedSession, MessageChannel
from ..types import _versions
from ._common import _DEFAULT, Ending, log
from ._writer import Writer

__all__ = ["Caller", "ProgressCallback", "RequestTimeout"]

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


class Caller:
    """What a session sends on its own account, and the answers it waits for (its
    ``request``, ``notify``, ``close_stream``, ``send_progress``: documented there)."""

    __slots__ = ("core", "channel", "writer", "ending", "default_timeout", "close_grace", "waiters")

    def __init__(
        self,
        core: SessionCore,
        channel: MessageChannel,
        writer: Writer,
        ending: Ending,
        default_timeout: float | None,
        close_grace: float,
    ) -> None:
        self.core = core
        self.channel = channel
        self.writer = writer
        self.ending = ending
        self.default_timeout = default_timeout
        self.close_grace = close_grace
        #: Our requests waiting for an answer, by id (the reader fills them in).
        self.waiters: dict[Any, _Waiter] = {}

    async def keepalive(
        self, initialized: trio.Event, interval: float, timeout: float, end: Callable[[str], None]
    ) -> None:
        """Ping the peer every ``interval`` seconds once ``initialized`` (not in a stateless
        revision, which has no ping); when a ping fails, ``end`` the session saying why."""
        await initialized.wait()
        if self.core.version is None or _versions.is_stateless(self.core.version):
            return  # stateless revisions have no ping
        while True:
            await trio.sleep(interval)
            try:
                await self.request("ping", timeout=timeout)
            except (RequestTimeout, McpError, ConnectionClosed) as exc:
                log.warning("keepalive failed (%s); closing the session", exc)
                end(f"keepalive failed: {exc}")
                return

    def fail_all(self, error: BaseException) -> None:
        """Every request still waiting gets ``error`` (the peer cannot answer them now)."""
        for waiter in list(self.waiters.values()):
            waiter.finish(error=error)

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
        """See :meth:`mcp_trio.Session.request`."""
        if self.core.closed:
            raise ConnectionClosed(self.ending.reason)
        if timeout is _DEFAULT:
            timeout = self.default_timeout
        assert timeout is None or isinstance(timeout, int | float)
        id, data = self.core.start_request(
            method, params, progress=on_progress is not None, result_type=result_type
        )
        if on_sent is not None:
            on_sent(id)
        waiter = _Waiter()
        self.waiters[id] = waiter
        timed_out: str | None = None
        try:
            await self.writer.put(Frame(data, related))
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
                            await self.writer.put(Frame(cancel, related))
                        except ConnectionClosed:
                            pass
            self.waiters.pop(id, None)
        if timed_out is not None:
            raise RequestTimeout(timed_out)
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def notify(self, method: str, params: Any = None, *, related: Any = None) -> None:
        """See :meth:`mcp_trio.Session.notify`."""
        if self.core.closed:
            raise ConnectionClosed(self.ending.reason)
        await self.writer.put(Frame(self.core.notify(method, params), related))

    async def close_stream(self, request_id: Any) -> bool:
        """See :meth:`mcp_trio.Session.close_stream`."""
        if not (isinstance(self.channel, HostedSession) and self.channel.stream_controls):
            return False
        if self.core.closed:
            raise ConnectionClosed(self.ending.reason)
        await self.writer.put(Frame(b"", request_id, control=CLOSE_STREAM))
        return True

    async def send_progress(
        self,
        request_id: Any,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """See :meth:`mcp_trio.Session.send_progress`."""
        data = self.core.progress(request_id, progress, total, message)
        if data is not None:
            await self.writer.put(Frame(data, request_id))
