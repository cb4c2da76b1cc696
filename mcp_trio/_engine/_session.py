"""The trio engine's session: runs a :class:`SessionCore` over a transport channel.

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

Rules (incoming requests: ``_handlers``; outgoing ones: ``_outgoing``):

* The writer is the only task that waits on the channel; a frame written
  around it (``send_nowait``) is one all-or-nothing write made only while the
  writer is parked on an empty outbox, so nothing overtakes a queued frame.
* When the input ends (EOF) our pending requests fail with
  :class:`ConnectionClosed`; the requests already read get ``eof_grace`` to
  be answered (``_Handlers._finish_after_eof``), then the session ends.
* When the peer goes away every pending request fails at once with
  :class:`ConnectionClosed` and every handler is cancelled; the writer
  (shielded) flushes what is queued within ``close_grace``; nothing outlives
  the ``async with`` block.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any

import trio

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
from .._exceptions import ConnectionClosed, McpError
from ..transports import _base as transport  # (what channels declare they offer)
from ..transports._base import Frame, MessageChannel
from ..types import _versions
from ._common import RequestTally, _ended, _settle_era, _unwrap, log
from ._handlers import SHARED_BUDGET, QueueBudget, RequestHandler, _Handlers, _queue_bounds
from ._handshake import _Handshake
from ._idle import idle_sweep
from ._outgoing import ProgressCallback, RequestTimeout, _Outgoing, _Waiter

__all__ = [
    "new_session",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "RequestTimeout",
    "Session",
    "open_session",
]

NotificationHandler = Callable[["Session", str, Any], Awaitable[None]]

_WRITE_BATCH = 64  # frames the writer hands to a transport's send_many() at once


class Session(_Handlers, _Handshake, _Outgoing):
    """One MCP session over one transport channel (low-level API).

    Create it with :func:`open_session`.  Register handlers for the peer's
    requests and notifications, then call :meth:`request` and :meth:`notify`.

    Concurrency: every method may be called from any task of the session's
    trio run.  Incoming requests are handled concurrently, each in its own task.
    """

    # What a closed session's calls say; set on the instance only when the session ends.  Under
    # 30 instance attributes, CPython shares one table of attribute names between the instances
    # (about 1.3 KiB less per session): tests/engine/test_session_garbage.py holds the count.
    _close_reason = "the session was closed"
    principal: Hashable | None = None  #: whom it serves, if set: the owner of its tasks (TaskManager)

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
        max_queued_total: int | None = None,
        queue_budget: QueueBudget | None = None,
        outbox_size: int = 256,
        keepalive_interval: float | None = None,
        keepalive_timeout: float = 10.0,
        close_grace: float = 2.0,
        eof_grace: float | None = None,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.core = core
        self.channel = channel
        # A read-only table (a MappingProxyType, as a Server hands every session)
        # is shared until somebody asks for request_handlers to change it.
        self._handlers: Mapping[str, RequestHandler] = (
            request_handlers
            if isinstance(request_handlers, MappingProxyType)
            else dict(request_handlers or {})
        )
        self.notification_handlers: dict[str, NotificationHandler] = dict(notification_handlers or {})
        self.default_timeout = default_timeout
        self.max_in_flight = max_in_flight
        #: Requests that may wait for a free slot, of this session and of all the
        #: sessions drawing on ``queue_budget`` (see ``_queue_bounds``).
        self.max_queued, self.max_queued_total = _queue_bounds(
            channel, max_in_flight, max_queued, max_queued_total
        )
        self.queue_budget = SHARED_BUDGET if queue_budget is None else queue_budget
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_grace = close_grace
        #: Seconds requests already read get to finish once the input ends (EOF);
        #: default: 2 over a transport whose output outlives its input (stdio), else 0.
        if eof_grace is None:
            outlives = isinstance(channel, transport.ChannelTraits) and channel.output_outlives_input
            eof_grace = 2.0 if outlives else 0.0
        self.eof_grace = eof_grace
        #: Set once the handshake (or era detection) finished.
        self.initialized = trio.Event()
        #: Set once the session has ended.
        self.closed = trio.Event()
        # Made with the writer, on the first frame queued.
        self._outbox_size = outbox_size
        self._outbox_send: trio.MemorySendChannel[Frame] | None = None
        self._send_nowait: Callable[[Frame], None] | None = None
        if isinstance(channel, transport.DirectOutput):  # writes a whole message at once (stdio)
            self._send_nowait = channel.send_nowait
        # Nothing is queued and the writer is not writing: set by the writer
        # as it parks on an empty outbox, cleared by it and by every queueing.
        # The writer starts with the first frame queued (idle sessions of a
        # transport that takes frames without waiting never need it).
        self._writer_idle = True
        self._outbox_closed = False
        # Notifications for user handlers: channel and loop made on the first one.
        self._notify_send: trio.MemorySendChannel[NotificationReceived] | None = None
        self.tally = RequestTally()  # its requests (running: from the moment a slot is taken)
        self._queued: deque[RequestReceived] | tuple[()] = ()  # a deque from the first one
        self._waiters: dict[Any, _Waiter] = {}
        self._scopes: dict[Any, trio.CancelScope] = {}
        # Shielded: the writer outlives the cancellation of the other tasks
        # and sends what is queued, within close_grace (see _stop).
        self._writer_scope = trio.CancelScope(shield=True)
        self._stopping = False
        self._alive = 0  # request handler tasks not finished yet
        self._tasks: trio.Nursery | None = None

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
    def handled_methods(self) -> frozenset[str]:
        """The methods of the peer's requests this session has a handler for."""
        return frozenset(self._handlers)

    def use_handlers(
        self, table: Mapping[str, RequestHandler], *, instead_of: Mapping[str, RequestHandler] | None = None
    ) -> bool:
        """Answer the peer's requests with ``table`` from the next one on (a read-only table, as a
        server shares with its sessions); with ``instead_of``, only while the session still
        answers with that one (its ``request_handlers`` were not taken to be changed). Returns
        whether the session took ``table``."""
        if instead_of is not None and self._handlers is not instead_of:
            return False
        self._handlers = table
        return True

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
            "requests_in_progress": self.tally.running,  # (from the moment a slot is taken)
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
            await self._run_tasks(task_status)
        finally:
            self._outbox_closed = True
            self._shutdown()
            if isinstance(self.channel, transport.PushInput):  # (nothing to wait for: no scope to enter)
                self.channel.close_nowait()
            else:
                with trio.move_on_after(self.close_grace, shield=True):
                    await self.channel.aclose()
            self.closed.set()

    def _input_ended(self) -> None:
        """Push input: the transport has no more frames (see ``attach_receiver``)."""
        if not self._stopping:
            self._close_reason = _ended("the peer closed the connection", self.channel)
        self._stop()

    async def _feed(self, frame: Frame) -> None:
        """Push input (a transport with ``attach_receiver``, such as Streamable
        HTTP): take ``frame`` in the task of the transport that received it,
        as the reader would, but without waiting for room: such a transport
        bounds the open requests (POSTs) it hands over itself, and a request
        finding no room in the queue is refused (``max_queued``,
        ``max_queued_total``).  Request handlers still run in tasks of their
        own, never in the caller's.

        Raises:
            trio.ClosedResourceError: the session has ended.
        """
        core = self.core
        if core.closed:
            raise trio.ClosedResourceError(self._close_reason)
        try:
            if frame.error is not None:
                log.warning("framing error from peer: %s", frame.error)
                events = core.framing_error(frame.error)
            elif core.is_batch(frame.data):
                await self._take_batch(frame.data, push=True)
                return
            else:
                events = core.receive(frame.data)
            for event in events:
                if isinstance(event, RequestReceived):
                    await self._admit(event)
                else:
                    await self._dispatch(event)
        except ConnectionClosed:
            raise trio.ClosedResourceError(self._close_reason) from None

    async def _dispatch(self, event: Any) -> None:
        if isinstance(event, RequestReceived):
            while len(self._queued) >= self.max_queued and self.tally.running >= self.max_in_flight:
                self._room = trio.Event()
                await self._room.wait()  # backpressure: stop reading
            await self._admit(event)  # (refused past max_queued_total)
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
            self._peer_initialized()
        elif isinstance(event, ProtocolViolation):
            log.info("protocol violation by peer: %s", event.message)

    async def _writer(self, outbox: trio.MemoryReceiveChannel[Frame]) -> None:
        channel = self.channel
        # A transport that can write several messages at once (stdio) gets
        # every frame already queued in one call: one system call per burst.
        send_many = channel.send_many if isinstance(channel, transport.BatchedOutput) else None
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
                        assert send_many is not None  # only it batches
                        await send_many(batch)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._close_reason = _ended("the connection to the peer broke", channel)
                self._stop()

    async def _notification_loop(
        self, notifications: trio.MemoryReceiveChannel[NotificationReceived]
    ) -> None:
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
        self._drop_queue()
        if isinstance(self.channel, transport.HostedSession):  # (not kept until the next sweep)
            idle_sweep().discard(self)
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

    async def _run_tasks(self, task_status: trio.TaskStatus[Session]) -> None:
        """:meth:`run` up to its shutdown: the session's nursery, its exception unwrapped."""
        unwrapped: BaseException | None = None
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
                    if isinstance(self.channel, transport.PushInput):
                        await self.channel.attach_receiver(self._feed, self._input_ended)
                        await trio.sleep_forever()  # until _input_ended() or _stop()
                    else:
                        if await self._reader():  # handed on: a successor reads
                            await trio.sleep_forever()  # until _stop()
                        await self._finish_after_eof()
                finally:
                    self._stop()
        except BaseExceptionGroup as group:
            if (unwrapped := _unwrap(group)) is group:
                raise
        if unwrapped is not None:  # raised out of the handler: no cycle via __context__ (the GC's work)
            try:
                raise unwrapped
            finally:
                unwrapped = None  # (nor via this frame)

    def _shutdown(self) -> None:
        if self.core.closed and not self._waiters:
            return
        self.core.close()
        error = ConnectionClosed(self._close_reason)
        for waiter in list(self._waiters.values()):
            waiter.finish(error=error)

    # ---------------------------------------------------------------- writing

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

    async def _put_answer(self, frame: Frame) -> None:
        """Queue ``frame`` once the outbox has room (see :meth:`_handle_request`)."""
        try:
            await self._put(frame)
        except ConnectionClosed:
            pass
        finally:
            self._release()

    def _write_now(self, frame: Frame) -> bool:
        """Write the answer ``frame`` from the handler's task, if it is safe
        and worth it; False: nothing was written, queue it for the writer.

        Only while no other request runs or waits (their answers leave in one
        write per burst), through :meth:`_write_alone`: one all-or-nothing
        write, with no await in between to cancel (docs/engine.md).
        """
        if self.tally.running > 1 or self._queued:
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

    def spawn(self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
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
                log.exception("background task %s failed", name or getattr(async_fn, "__name__", async_fn))

        try:
            nursery.start_soon(guarded, name=name or getattr(async_fn, "__qualname__", None))
        except RuntimeError:  # the nursery is closing
            raise ConnectionClosed(self._close_reason) from None

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


@asynccontextmanager
async def open_session(
    channel: MessageChannel, *, role: str, info: Any, **arguments: Any
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
            ``max_queued``, ``max_queued_total``, ``queue_budget`` (the
            :class:`QueueBudget` that ``max_queued_total`` bounds; default: one
            shared by every session given none), ``keepalive_interval``,
            ``keepalive_timeout``, ``close_grace``,
            ``eof_grace`` (seconds the requests already read get to be answered
            once the input ends; default 2 over stdio, 0 elsewhere).

    (``arguments`` are those of :func:`new_session` after ``role`` and ``info``.)

    A client session must still settle the protocol: ``await session.connect()``
    (or ``initialize()``).  A server session answers ``initialize``,
    ``server/discover`` and ``ping`` by itself and dispatches the rest.

    The session is closed when the block exits.  Exceptions raised in the block
    propagate unchanged (not wrapped in an exception group).
    """
    session = new_session(channel, role=role, info=info, **arguments)
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
    settled = _settle_era(core, channel) if core.role == "server" else False
    session = Session(core, channel, **options)
    if settled:
        session.initialized.set()
    return session
