"""The trio engine: runs a :class:`SessionCore` over a transport channel.

Task layout of one session (one nursery, opened by ``Session.run``)::

    run              the reader: channel.receive → core.receive → dispatch (sync
     │               work and non-blocking hand-offs only; it never runs user
     │               code), or, for a push transport (``attach_receiver``), a
     │               wait while the transport feeds frames from its own tasks
     ├─ writer        the only task that calls channel.send (outbox → channel),
     │                started with the first frame queued; a lone answer may
     │                skip it (see Session._write_now)
     ├─ notifications user notification handlers, in arrival order (on first use)
     ├─ keepalive     optional pings
     ├─ background    work handed to spawn() (e.g. a server's tasks), cancelled
     │                when the session ends
     └─ one task per incoming request, each in its own CancelScope

Rules:

* A request handler's return value is the result; raising :class:`McpError`
  answers with that error; any other exception answers -32603 and is logged.
  A handler cancelled by ``notifications/cancelled`` sends nothing.
* At most ``max_in_flight`` incoming requests run at once; up to
  ``max_queued`` more wait their turn in arrival order while the reader goes
  on (so answers to the handlers' own calls to the peer still get through);
  beyond that the reader stops reading (backpressure) until one finishes.
* ``request()`` waits in the caller's task.  Its timeout is an idle deadline
  that each progress notification may push back, bounded by an optional
  total.  On timeout or cancellation it sends ``notifications/cancelled``
  (shielded, bounded) before raising.
* When the peer goes away every pending request fails at once with
  :class:`ConnectionClosed` and every handler is cancelled; nothing outlives
  the ``async with`` block.
"""

from __future__ import annotations

import contextvars
import logging
import math
import types
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any, TypeVar

import trio

from .. import _jsonrpc as rpc
from .._core import (
    CancelRequested,
    NotificationReceived,
    Outgoing,
    PeerInitialized,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    SessionCore,
    State,
)
from .._exceptions import ConnectionClosed, LocalProtocolError, McpError, RemoteProtocolError
from ..transports._base import CLOSE_STREAM, Frame, MessageChannel
from ..types import _versions
from ._context import RequestContext

__all__ = [
    "new_session",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "RequestTimeout",
    "Session",
    "open_session",
]

log = logging.getLogger("mcp_trio")

RequestHandler = Callable[[RequestContext, Any], Awaitable[Any]]
NotificationHandler = Callable[["Session", str, Any], Awaitable[None]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]

_DEFAULT = object()


class RequestTimeout(trio.TooSlowError):
    """An outgoing request got no answer in time.

    A subclass of :class:`trio.TooSlowError`.  The engine has already sent
    ``notifications/cancelled`` for the request.
    """

_PROGRESS_BACKLOG = 256
_WRITE_BATCH = 64  # frames the writer hands to a transport's send_many() at once
_HANDLER_NAME = "mcp_trio._engine._session.Session._handle_request"  # trio task name of request handlers
_READER_NAME = "mcp_trio._engine._session.Session._next_reader"  # of successor readers (reader relay)
_T = TypeVar("_T")


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


class Session:
    """One MCP session over one transport channel (low-level API).

    Create it with :func:`open_session`.  Register handlers for the peer's
    requests and notifications, then call :meth:`request` and :meth:`notify`.

    Concurrency: every method may be called from any task of the session's
    trio run.  Incoming requests are handled concurrently, each in its own task.
    """

    def __init__(
        self,
        core: SessionCore,
        channel: MessageChannel,
        *,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        notification_handlers: Mapping[str, NotificationHandler] | None = None,
        default_timeout: float | None = 60.0,
        max_in_flight: int = 64,
        max_queued: int | None = None,
        outbox_size: int = 256,
        keepalive_interval: float | None = None,
        keepalive_timeout: float = 10.0,
        close_grace: float = 2.0,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        if max_queued is not None and max_queued < 0:
            raise ValueError("max_queued must not be negative")
        self.core = core
        self.channel = channel
        # A read-only table (a MappingProxyType, as a Server hands every session)
        # is shared until somebody asks for request_handlers to change it.
        self._handlers: Mapping[str, RequestHandler] = (
            request_handlers if isinstance(request_handlers, MappingProxyType) else dict(request_handlers or {})
        )
        self.notification_handlers: dict[str, NotificationHandler] = dict(
            notification_handlers or {}
        )
        self.default_timeout = default_timeout
        self.max_in_flight = max_in_flight
        #: Requests that may wait for a free slot (default: ``max_in_flight``).
        self.max_queued = max_in_flight if max_queued is None else max_queued
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_grace = close_grace
        #: Set once the handshake (or era detection) finished.
        self.initialized = trio.Event()
        #: Set once the session has ended.
        self.closed = trio.Event()
        # Made with the writer, on the first frame queued.
        self._outbox_size = outbox_size
        self._outbox_send: trio.MemorySendChannel[Frame] | None = None
        # A transport that can write one whole message without waiting (stdio)
        self._send_nowait: Callable[[Frame], None] | None = getattr(channel, "send_nowait", None)
        # Nothing is queued and the writer is not writing: set by the writer
        # as it parks on an empty outbox, cleared by it and by every queueing.
        # The writer starts with the first frame queued (idle sessions of a
        # transport that takes frames without waiting never need it).
        self._writer_idle = True
        self._outbox_closed = False
        # Notifications for user handlers: channel and loop made on the first one.
        self._notify_send: trio.MemorySendChannel[NotificationReceived] | None = None
        self._running = 0
        self._queued: deque[RequestReceived] | tuple[()] = ()  # a deque from the first one
        self._room: trio.Event | None = None  # the reader waits for a free slot
        self._waiters: dict[Any, _Waiter] = {}
        self._scopes: dict[Any, trio.CancelScope] = {}
        # Shielded: the writer outlives the cancellation of the other tasks
        # and sends what is queued, within close_grace (see _stop).
        self._writer_scope = trio.CancelScope(shield=True)
        self._stopping = False
        self._alive = 0  # request handler tasks not finished yet
        self._tasks: trio.Nursery | None = None
        self._close_reason: str = "the session was closed"

    # ------------------------------------------------------------- properties

    @property
    def request_handlers(self) -> dict[str, RequestHandler]:
        """The handlers of the peer's requests, by method; this session's own dict
        (changing it changes nothing else)."""
        handlers = self._handlers
        if not isinstance(handlers, dict):
            handlers = self._handlers = dict(handlers)
        return handlers

    @property
    def role(self) -> str:
        return self.core.role

    @property
    def protocol_version(self) -> str | None:
        """The negotiated protocol revision (``None`` before negotiation)."""
        return self.core.version

    @property
    def peer_info(self) -> dict[str, Any]:
        return self.core.peer_info

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        return self.core.peer_capabilities

    def statistics(self) -> dict[str, int]:
        """Counts for monitoring: pending outgoing and in-flight incoming requests."""
        return {
            "pending_requests": len(self._waiters),
            "requests_in_progress": self._running,  # (from the moment a slot is taken)
            "requests_queued": len(self._queued),
            "queued_frames": (
                0 if self._outbox_send is None else self._outbox_send.statistics().current_buffer_used
            ),
        }

    # ------------------------------------------------------------------ tasks

    async def run(self, *, task_status: trio.TaskStatus[Session] = trio.TASK_STATUS_IGNORED) -> None:
        """Run the session in this task until it ends (the peer leaves, or
        :meth:`close`); ``task_status.started(session)`` once it takes messages.

        Exceptions of the session's own tasks propagate unwrapped (not in an
        exception group) when there is one.  Sessions made by
        :func:`open_session` already run: use this only with :func:`new_session`.
        """
        try:
            # One nursery for everything; _stop() cancels it, but the writer
            # (shielded) sends what is queued, and the outbox closes once the
            # last request handler is done (its answer may still be on the way).
            async with trio.open_nursery() as tasks:
                self._tasks = tasks
                try:
                    if self._stopping:
                        return  # closed before it ran
                    if self.keepalive_interval is not None:
                        tasks.start_soon(self._keepalive)
                    task_status.started(self)
                    attach = getattr(self.channel, "attach_receiver", None)
                    if attach is None:
                        if await self._reader():  # handed on: a successor reads
                            await trio.sleep_forever()  # until _stop()
                    else:
                        await attach(self._feed, self._input_ended)
                        await trio.sleep_forever()  # until _input_ended() or _stop()
                finally:
                    self._stop()
        except BaseExceptionGroup as group:
            raise _unwrap(group) from None
        finally:
            self._outbox_closed = True
            self._shutdown()
            close_nowait = getattr(self.channel, "close_nowait", None)
            if close_nowait is not None:  # (a transport with nothing to wait for: no scope to enter)
                close_nowait()
            else:
                with trio.move_on_after(self.close_grace, shield=True):
                    await self.channel.aclose()
            self.closed.set()

    async def _reader(self) -> bool:
        """Read and dispatch frames until the input ends (False), or until this
        task becomes the task of a request it read and hands the reading on
        (True).

        A request that is the last thing read so far (the channel says
        nothing more is buffered: the peer is most likely waiting for this
        answer) and that finds a free slot is handled here, in a context of
        its own (a copy of the reader's, as a new task would get).  If it
        ends without ever yielding to trio (a handler that does not wait,
        its answer written at once), reading simply goes on: the request
        cost no task and no extra trip through the scheduler, and nothing
        could have been read meanwhile anyway (trio runs one task at a
        time).  The first time it does yield (a checkpoint or a wait), a
        successor reader is started first, so reading goes on while it
        waits, and this task stays the request's until it is done.
        Channels that cannot tell what they hold (no ``buffered``) get a
        task for every request.

        Such a request's cancel scope is the reader's own, entered once
        around the reading rather than once per request (entering and
        leaving a trio cancel scope was a fifth of the instructions of a
        sequential stdio call).  That is exact: while the handler has not
        yielded nothing can cancel it, and once it has, this task and the
        scope are the request's alone.  A handler that sees the scope
        (``ctx.cancel_scope``, which it might keep) or a request already
        cancelled when it starts spoils it for reading: reading goes on in a
        fresh scope.  So the scope is never cancelled while this task reads,
        and a cancellation it catches is that of a request this task went on
        with after handing the reading on.
        """
        while True:
            outcome: bool | None = True  # (what a cancellation caught here means)
            with trio.CancelScope() as scope:
                outcome = await self._read(scope)
            if outcome is None:
                continue  # the scope was spoilt: a fresh one
            if outcome:  # this task served a request to its end (or its cancellation)
                self._start_queued()
            return outcome

    async def _read(self, scope: trio.CancelScope) -> bool | None:
        """The reader's loop (see :meth:`_reader`), in ``scope``; None: a request
        it served spoilt ``scope``, go on in a fresh one."""
        channel = self.channel
        core = self.core
        buffered = getattr(channel, "buffered", None)
        while True:
            try:
                frame = await channel.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError, trio.BrokenResourceError):
                self._close_reason = _ended("the peer closed the connection", channel)
                return False
            if frame.error is not None:
                log.warning("framing error from peer: %s", frame.error)
                events = core.framing_error(frame.error)
            else:
                events = core.receive(frame.data)
            if not events:
                continue
            last = events.pop()
            for event in events:
                await self._dispatch(event)
            if (
                buffered is not None
                and isinstance(last, RequestReceived)
                and not self._queued
                and self._running < self.max_in_flight
                and not buffered()
                and not self._stopping
            ):
                self._take_slot()
                waited, fit = await _until_it_waits(
                    self._handle_request(last, scope), contextvars.copy_context(), self._start_successor
                )
                if waited:
                    return True  # a successor took over the reading
                if not fit:
                    return None
                continue
            await self._dispatch(last)

    def _start_successor(self) -> None:
        assert self._tasks is not None
        self._tasks.start_soon(self._next_reader, name=_READER_NAME)

    async def _next_reader(self) -> None:
        """A successor of a reader that took a request (see :meth:`_reader`)."""
        if not await self._reader():
            self._stop()

    def _input_ended(self) -> None:
        """Push input: the transport has no more frames (see ``attach_receiver``)."""
        if not self._stopping:
            self._close_reason = _ended("the peer closed the connection", self.channel)
        self._stop()

    async def _feed(self, frame: Frame) -> None:
        """Push input (a transport with ``attach_receiver``, such as Streamable
        HTTP): take ``frame`` in the task of the transport that received it,
        as the reader would, but without waiting for room: such a transport
        bounds the requests it hands over itself.  Request handlers still run
        in tasks of their own, never in the caller's.

        Raises:
            trio.ClosedResourceError: the session has ended.
        """
        core = self.core
        if core.closed:
            raise trio.ClosedResourceError(self._close_reason)
        if frame.error is not None:
            log.warning("framing error from peer: %s", frame.error)
            events = core.framing_error(frame.error)
        else:
            events = core.receive(frame.data)
        for event in events:
            if isinstance(event, RequestReceived):
                self._enqueue(event)
            else:
                try:
                    await self._dispatch(event)
                except ConnectionClosed:
                    raise trio.ClosedResourceError(self._close_reason) from None

    async def _dispatch(self, event: Any) -> None:
        if isinstance(event, RequestReceived):
            while len(self._queued) >= self.max_queued and self._running >= self.max_in_flight:
                self._room = trio.Event()
                await self._room.wait()  # backpressure: stop reading
            self._enqueue(event)
        elif isinstance(event, ResponseReceived):
            waiter = self._waiters.get(event.id)
            if waiter is not None:
                waiter.finish(event.result, event.error)
        elif isinstance(event, Outgoing):
            frame = Frame(event.data, event.related, event.final)
            if not self._write_alone(frame):
                await self._put(frame)
        elif isinstance(event, NotificationReceived):
            if event.method not in self.notification_handlers:
                return  # nobody listens: nothing to queue
            if self._notify_send is None:  # made on the first one: idle sessions stay small
                assert self._tasks is not None
                self._notify_send, notify_recv = trio.open_memory_channel[NotificationReceived](
                    self._outbox_size
                )
                self._tasks.start_soon(self._notification_loop, notify_recv)
            await self._notify_send.send(event)
        elif isinstance(event, CancelRequested):
            scope = self._scopes.get(event.id)
            if scope is not None:
                scope.cancel()
        elif isinstance(event, ProgressReceived):
            waiter = self._waiters.get(event.id)
            if waiter is not None:
                waiter.add_progress(event)
        elif isinstance(event, PeerInitialized):
            self.initialized.set()
        elif isinstance(event, ProtocolViolation):
            log.info("protocol violation by peer: %s", event.message)

    async def _writer(self, outbox: trio.MemoryReceiveChannel[Frame]) -> None:
        channel = self.channel
        # A transport that can write several messages at once (stdio) gets
        # every frame already queued in one call: one system call per burst.
        send_many = getattr(channel, "send_many", None)
        with self._writer_scope:
            try:
                while True:
                    try:
                        frame = outbox.receive_nowait()
                    except trio.WouldBlock:
                        self._writer_idle = True  # parked on an empty outbox
                        try:
                            frame = await outbox.receive()
                        except trio.EndOfChannel:
                            return
                        finally:
                            self._writer_idle = False
                    except trio.EndOfChannel:
                        return
                    batch = [frame]
                    if send_many is not None:
                        while len(batch) < _WRITE_BATCH:
                            try:
                                batch.append(outbox.receive_nowait())
                            except (trio.WouldBlock, trio.EndOfChannel):
                                break
                    if len(batch) == 1:
                        await channel.send(frame)
                    else:
                        await send_many(batch)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._close_reason = _ended("the connection to the peer broke", channel)
                self._stop()

    async def _notification_loop(self, notifications: trio.MemoryReceiveChannel[NotificationReceived]) -> None:
        async for event in notifications:
            handler = self.notification_handlers.get(event.method)
            if handler is None:
                continue
            try:
                await handler(self, event.method, event.params)
            except Exception:
                log.exception("notification handler for %s failed", event.method)

    async def _keepalive(self) -> None:
        interval = self.keepalive_interval
        assert interval is not None
        await self.initialized.wait()
        if self.core.version is None or _versions.is_stateless(self.core.version):
            return  # stateless revisions have no ping
        while True:
            await trio.sleep(interval)
            try:
                await self.request("ping", timeout=self.keepalive_timeout)
            except (RequestTimeout, McpError, ConnectionClosed) as exc:
                log.warning("keepalive failed (%s); closing the session", exc)
                self._close_reason = f"keepalive failed: {exc}"
                self._stop()
                return

    def _stop(self) -> None:
        """End the session (from any task): no more input, pending requests
        fail, handlers and background work are cancelled, and the writer gets
        ``close_grace`` to send what is queued."""
        self._shutdown()
        if self._stopping:
            return
        self._stopping = True
        if self._tasks is None:
            return  # not running yet: run() returns at once
        self._writer_scope.deadline = trio.current_time() + self.close_grace
        self._tasks.cancel_scope.cancel()
        if self._alive == 0:
            self._close_outbox()

    def _close_outbox(self) -> None:
        self._outbox_closed = True
        if self._outbox_send is not None:
            self._outbox_send.close()  # the writer sends what is in it, then ends

    def _shutdown(self) -> None:
        if self.core.closed and not self._waiters:
            return
        self.core.close()
        error = ConnectionClosed(self._close_reason)
        for waiter in list(self._waiters.values()):
            waiter.finish(error=error)

    async def _put(self, frame: Frame) -> None:
        self._writer_idle = False  # the frame may be handed to the writer before it runs
        try:
            await (self._outbox_send or self._start_writer()).send(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ConnectionClosed(self._close_reason) from None

    def _queue_nowait(self, frame: Frame) -> None:
        """Queue ``frame`` for the writer without waiting (``trio.WouldBlock``: the outbox is full)."""
        self._writer_idle = False
        (self._outbox_send or self._start_writer()).send_nowait(frame)

    def _start_writer(self) -> trio.MemorySendChannel[Frame]:
        """Make the outbox and start the writer (on the first frame queued)."""
        if self._outbox_closed or self._tasks is None:
            raise trio.ClosedResourceError(self._close_reason)
        self._outbox_send, outbox = trio.open_memory_channel[Frame](self._outbox_size)
        self._tasks.start_soon(self._writer, outbox)
        return self._outbox_send

    # ------------------------------------------------------ incoming requests

    def _enqueue(self, event: RequestReceived) -> None:
        queued = self._queued
        if not isinstance(queued, deque):
            queued = self._queued = deque()
        queued.append(event)
        self._start_queued()

    def _take_slot(self) -> None:
        """Count a request about to be handled (``_handle_request`` gives the slot back)."""
        self._running += 1
        self._alive += 1

    def _start_queued(self) -> None:
        """Start queued requests while slots are free, each in a task of its own."""
        assert self._tasks is not None
        while self._queued and self._running < self.max_in_flight:
            self._take_slot()
            # (a name given: trio need not build one from the method per task)
            self._tasks.start_soon(self._handler_task, self._queued.popleft(), name=_HANDLER_NAME)  # type: ignore[union-attr]
        if self._room is not None:
            self._room.set()

    async def _handler_task(self, event: RequestReceived) -> None:
        """A request's own task: answers ``event``, then takes requests still
        queued, one at a time, in the same cancel scope, each in a fresh copy
        of the context the task started with (what a task of its own would
        get), until the queue is empty, the session stops, or a request
        spoils the scope (see :meth:`_reader`) or is cancelled (which ends
        the task).  So a burst beyond ``max_in_flight`` (a pipelining peer)
        costs a task and a cancel scope per slot, not per request.
        """
        context = contextvars.copy_context()
        try:
            with trio.CancelScope() as scope:
                fit = await self._handle_request(event, scope)
                while (
                    fit
                    and self._queued
                    and self._running < self.max_in_flight
                    and not self._stopping
                    # (a handler that caught its cancellation and returned left it cancelled)
                    and not scope.cancel_called
                ):
                    self._take_slot()
                    event = self._queued.popleft()  # type: ignore[union-attr]
                    if self._room is not None:
                        self._room.set()
                    _, fit = await _until_it_waits(self._handle_request(event, scope), context.copy(), _nothing)
        finally:
            # (from the context the task started with: the first handler may have changed its own)
            context.run(self._start_queued)

    async def _handle_request(self, event: RequestReceived, scope: trio.CancelScope) -> bool:
        """Answer ``event`` in ``scope``, a cancel scope its caller entered (a
        reader's, see :meth:`_reader`, or a handler task's, see
        :meth:`_handler_task`), where its cancellation ends up; the caller
        starts queued requests once it is done.  Returns whether ``scope`` is
        fit for another request: not cancelled for this one before it began,
        and never seen by its handler."""
        core = self.core
        id = event.id
        data: bytes | None = None
        ctx: RequestContext | None = None
        fit = True
        try:
            self._scopes[id] = scope
            if core.is_cancelled(id):
                scope.cancel()
                fit = False
            handler = self._handlers.get(event.method)
            try:
                if handler is None:
                    data = core.error(id, rpc.METHOD_NOT_FOUND, f"Method not found: {event.method}")
                else:
                    ctx = RequestContext(self, event, scope)
                    result = await handler(ctx, event.params)
                    if core.closed:  # the session ended meanwhile: nobody to answer
                        return False
                    try:
                        data = core.respond(id, result)
                    except LocalProtocolError as exc:
                        log.error("handler for %s returned an invalid result: %s", event.method, exc)
                        data = core.error(id, rpc.INTERNAL_ERROR, f"Internal error: {exc}")
            except McpError as exc:
                if core.closed:
                    return False
                data = core.error(id, exc.code, exc.message, exc.data)
            except Exception as exc:
                if core.closed:  # e.g. a call back to the peer found it gone
                    log.debug("handler for %s ended with the session: %r", event.method, exc)
                    return False
                log.exception("handler for %s failed", event.method)
                data = core.error(id, rpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")
            if data is not None:  # (None: a batch reply still waits for others)
                frame = Frame(data, id, True)
                try:
                    # The answer is this request's last act: write it at once when
                    # that is safe, or queue it without a second trip through the
                    # scheduler when there is room.
                    if not self._write_now(frame):
                        self._queue_nowait(frame)
                except trio.WouldBlock:
                    # No room: a task of its own waits for it, outside ``scope``
                    # (a reader's, or shared with the requests after this one),
                    # whose cancellation must not take back an answer once made.
                    self._alive += 1
                    assert self._tasks is not None
                    self._tasks.start_soon(self._put_answer, frame)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    raise ConnectionClosed(self._close_reason) from None
        except ConnectionClosed:
            pass
        finally:
            self._scopes.pop(id, None)
            leftover = core.drop(id)
            self._running -= 1
            if leftover is not None and data is None:
                with trio.move_on_after(self.close_grace, shield=True):
                    try:
                        await self._put(Frame(leftover, id, True))
                    except ConnectionClosed:
                        pass
            self._release()
        return fit and not (ctx is not None and ctx._scope_seen)

    async def _put_answer(self, frame: Frame) -> None:
        """Queue ``frame`` once the outbox has room (see :meth:`_handle_request`)."""
        try:
            await self._put(frame)
        except ConnectionClosed:
            pass
        finally:
            self._release()

    def _release(self) -> None:
        """A request's work that may still write (counted in ``_alive``) is done:
        the last one out closes the outbox of a stopping session."""
        self._alive -= 1
        if self._stopping and self._alive == 0:
            self._close_outbox()

    def _write_now(self, frame: Frame) -> bool:
        """Write the answer ``frame`` from the handler's task, if it is safe
        and worth it; False: nothing was written, queue it for the writer.

        The writer stays the only task that ever waits on the transport: this
        is one synchronous, all-or-nothing write (the transport's
        ``send_nowait``, on stdio one atomic ``write(2)`` to a pipe), made
        only while the writer is parked on an empty outbox.  So no message is
        ever interleaved with another or left half written (there is no await
        in between to cancel), and none overtakes a frame queued before it.
        It is skipped while other requests are running or queued, so their
        answers still leave in one write per burst.  What it saves: two trips
        through the scheduler (waking the writer, its checkpoint) per answer.
        """
        if self._running > 1 or self._queued:
            return False
        return self._write_alone(frame)

    def _write_alone(self, frame: Frame) -> bool:
        """Hand ``frame`` to the transport's ``send_nowait`` when nothing is
        queued before it and the writer is not writing (see :meth:`_write_now`);
        False: nothing was written, queue it for the writer."""
        send_nowait = self._send_nowait
        if send_nowait is None or not self._writer_idle:
            return False
        try:
            send_nowait(frame)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return False  # the writer sends it, or finds the broken pipe and ends the session
        return True

    # ------------------------------------------------------------ public API

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
        id, data = self.core.start_request(method, params, progress=on_progress is not None)
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
        if not getattr(self.channel, "stream_controls", False):
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

    def spawn(
        self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None
    ) -> None:
        """Run ``async_fn(*args)`` in the background, inside the session's nursery.

        It runs until it returns or the session ends, whichever comes first
        (then it is cancelled): nothing outlives the session.  An exception it
        raises is logged and does not end the session.

        Raises:
            ConnectionClosed: the session has ended.
        """
        nursery = self._tasks
        if nursery is None or self.core.closed or nursery.cancel_scope.cancel_called:
            raise ConnectionClosed(self._close_reason)

        async def guarded() -> None:
            try:
                await async_fn(*args)
            except Exception:
                log.exception(
                    "background task %s failed", name or getattr(async_fn, "__name__", async_fn)
                )

        try:
            nursery.start_soon(guarded, name=name or getattr(async_fn, "__qualname__", None))
        except RuntimeError:  # the nursery is closing
            raise ConnectionClosed(self._close_reason) from None

    async def ping(self, *, timeout: float | None | object = _DEFAULT) -> None:
        await self.request("ping", timeout=timeout)

    async def initialize(self, *, version: str | None = None, timeout: Any = _DEFAULT) -> Any:
        """Client: the legacy ``initialize`` handshake, then ``notifications/initialized``.

        Returns the ``InitializeResult``.

        Raises:
            RemoteProtocolError: the server answered a version this client does
                not accept (or not an ``InitializeResult``).  The session is
                closed first: the client disconnects, as the specification asks.
        """
        core = self.core
        version = version or (core.legacy_versions[0] if core.legacy_versions else None)
        if version is None:
            raise LocalProtocolError("this client accepts no protocol version with a handshake")
        params = {
            "protocolVersion": version,
            "capabilities": core.capabilities,
            "clientInfo": core.info,
        }
        try:
            result = await self.request("initialize", params, timeout=timeout)
        except RemoteProtocolError as exc:
            self._close_reason = f"the handshake failed: {exc}"
            self._stop()
            with trio.move_on_after(2 * self.close_grace):
                await self.closed.wait()
            raise
        await self.notify("notifications/initialized")
        self.initialized.set()
        return result

    async def connect(self, *, probe_timeout: float = 5.0, timeout: Any = _DEFAULT) -> str:
        """Client: settle the protocol era and version with the server.

        With a stateless (2026-07-28+) version allowed, probes with
        ``server/discover``; a server that answers it is modern, one that
        names its supported versions in an ``UnsupportedProtocolVersionError``
        is modern with another version, anything else (another error, an
        answer that is not a valid ``DiscoverResult``, or no answer within
        ``probe_timeout``) is legacy and gets ``initialize``.  If
        that ``initialize`` is refused with an ``UnsupportedProtocolVersionError``
        naming a stateless version we accept (a server that was only slow to
        answer the probe), the client goes modern after all.

        Returns:
            The negotiated protocol version.
        """
        core = self.core
        if core.modern_versions:
            preferred = core.modern_versions[0]
            core.use_modern(preferred)
            try:
                result = await self.request("server/discover", timeout=probe_timeout)
            except McpError as exc:
                supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
                if exc.code == rpc.UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list):
                    common = self._modern_in(exc)
                    if common:
                        return await self._use_discovered(common[0], timeout)
                    core.reset_era()
                    if not any(v in supported for v in core.legacy_versions):
                        raise LocalProtocolError(
                            f"no protocol version in common: server supports {supported}, "
                            f"client {list(core.versions)}"
                        ) from None
                else:
                    core.reset_era()
            except (RequestTimeout, RemoteProtocolError):
                # No answer in time, or an answer that is not a DiscoverResult
                # (servers that answer every unknown method with ``{}``).
                core.reset_era()
            else:
                supported = list(result.supportedVersions)
                common = [v for v in core.modern_versions if v in supported]
                if common:
                    self._adopt_discover(common[0], result)
                    self.initialized.set()
                    return common[0]
                core.reset_era()
        if not core.legacy_versions:
            raise LocalProtocolError("the server does not speak a protocol version this client accepts")
        try:
            await self.initialize(timeout=timeout)
        except McpError as exc:
            # A server slow to start may answer the probe after it timed out and
            # then refuse ``initialize`` as a modern server does: take its word.
            common = self._modern_in(exc)
            if not common:
                raise
            return await self._use_discovered(common[0], timeout)
        assert core.version is not None
        return core.version

    def _modern_in(self, exc: McpError) -> list[str]:
        """The stateless versions we accept that an UnsupportedProtocolVersion error lists."""
        if exc.code != rpc.UNSUPPORTED_PROTOCOL_VERSION or not isinstance(exc.data, dict):
            return []
        supported = exc.data.get("supported")
        if not isinstance(supported, list):
            return []
        return [v for v in self.core.modern_versions if v in supported]

    async def _use_discovered(self, version: str, timeout: Any) -> str:
        self.core.use_modern(version)
        result = await self.request("server/discover", timeout=timeout)
        self._adopt_discover(version, result)
        self.initialized.set()
        return version

    def _adopt_discover(self, version: str, result: Any) -> None:
        meta = getattr(result, "meta", None)
        info = meta.get("io.modelcontextprotocol/serverInfo") if isinstance(meta, dict) else None
        instructions = getattr(result, "instructions", None)
        self.core.use_modern(
            version,
            server_capabilities=result.capabilities,
            server_info=info if isinstance(info, dict) else None,
            instructions=instructions if isinstance(instructions, str) else None,
        )

    async def aclose(self) -> None:
        """End the session: stop reading, cancel handlers, fail pending requests,
        flush what is queued (bounded by ``close_grace``) and close the channel.
        Waits until all of that is done."""
        self._close_reason = "the session was closed"
        self._stop()
        await self.closed.wait()

    @property
    def state(self) -> State:
        return self.core.state


def _nothing() -> None:
    pass


@types.coroutine
def _until_it_waits(
    coro: Coroutine[Any, Any, _T], context: contextvars.Context, on_wait: Callable[[], None]
) -> Generator[Any, Any, tuple[bool, _T]]:
    """Run ``coro`` to its end, each step in ``context``, and return (whether
    it ever yielded to trio, its result).  The first time it yields (a
    checkpoint, a wait), call ``on_wait()``, then go on exactly as ``await
    coro`` would (what trio sends or throws in is passed on)."""
    send = coro.send
    try:
        value = context.run(send, None)
    except StopIteration as end:
        return False, end.value
    on_wait()
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # trio resumes the task with an error (a Cancelled, say)
            try:
                value = context.run(coro.throw, exc)
            except StopIteration as end:
                return True, end.value
        else:
            try:
                value = context.run(send, sent)
            except StopIteration as end:
                return True, end.value


def _ended(what: str, channel: Any) -> str:
    """``what`` happened, with the transport's own account (``end_reason``) when it has one,
    such as a WebSocket close code."""
    reason = getattr(channel, "end_reason", None)
    return f"{what} ({reason})" if reason else what


@asynccontextmanager
async def open_session(
    channel: MessageChannel,
    *,
    role: str,
    info: Any,
    capabilities: Any = None,
    versions: Any = None,
    instructions: str | None = None,
    extra_methods: Any = (),
    **options: Any,
) -> AsyncIterator[Session]:
    """Run an MCP session over ``channel`` for the duration of the ``async with`` block.

    Args:
        channel: A transport channel (see :mod:`mcp_trio.transports`).
        role: ``"client"`` or ``"server"``.
        info: This side's implementation info, ``{"name": ..., "version": ...}``.
        capabilities: The capabilities this side advertises (dict or Struct).
        versions: Protocol revisions accepted, newest first (default: all).
        instructions: Server only: instructions for ``initialize``/``server/discover``.
        extra_methods: Non-spec methods this side handles (params arrive as JSON values).
        **options: Passed to :class:`Session`: ``request_handlers``,
            ``notification_handlers``, ``default_timeout``, ``max_in_flight``,
            ``keepalive_interval``, ``keepalive_timeout``, ``close_grace``.

    A client session must still settle the protocol: ``await session.connect()``
    (or ``initialize()``).  A server session answers ``initialize``,
    ``server/discover`` and ``ping`` by itself and dispatches the rest.

    The session is closed when the block exits.  Exceptions raised in the block
    propagate unchanged (not wrapped in an exception group).
    """
    session = new_session(
        channel,
        role=role,
        info=info,
        capabilities=capabilities,
        versions=versions,
        instructions=instructions,
        extra_methods=extra_methods,
        **options,
    )
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            try:
                yield session
            finally:
                session._close_reason = "the session was closed"
                session._stop()
    except BaseExceptionGroup as group:
        raise _unwrap(group) from None


def new_session(
    channel: MessageChannel,
    *,
    role: str,
    info: Any,
    capabilities: Any = None,
    versions: Any = None,
    instructions: str | None = None,
    extra_methods: Any = (),
    **options: Any,
) -> Session:
    """A :class:`Session` over ``channel``, not running yet (arguments as for
    :func:`open_session`): ``await session.run()`` runs it in the calling task
    until it ends, with no task or nursery of the caller's in between (what
    :meth:`Server.serve_session <mcp_trio.server.Server.serve_session>` does
    for each connection)."""
    core = SessionCore(
        role,  # type: ignore[arg-type]
        info=info,
        capabilities=capabilities,
        versions=versions,
        instructions=instructions,
        extra_methods=extra_methods,
    )
    assumed = getattr(channel, "assumed_version", None)
    if assumed is not None and core.role == "server":
        # A transport without sessions (stateless Streamable HTTP): no handshake.
        core.assume_initialized(assumed)
    if getattr(channel, "expect_modern", False) and core.role == "server":
        # The transport saw a stateless version in the request's headers.
        core.expect_modern()
    session = Session(core, channel, **options)
    if assumed is not None and core.role == "server":
        session.initialized.set()
    return session


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside (nested) one-member groups, else the group."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
