"""Running the requests we receive: slots, the queue, the reader relay and
handler tasks (the reasoning and the measurements: docs/engine.md).

Rules:

* At most ``max_in_flight`` requests run at once; up to ``max_queued`` more
  wait in arrival order while the reader goes on; beyond that the reader stops
  reading until a slot frees (backpressure).  A request that cannot wait (any
  request a transport pushes in, Streamable HTTP's) is refused instead, at
  once, with -32603 naming the bound; so is, over any transport, a request
  past ``max_queued_total`` waiting in all the sessions drawing on its
  :class:`QueueBudget` (a server's sessions, by default).  The session goes on.
* A batch is taken ``_SLICE`` members at a time, with a checkpoint between
  slices that cannot be cancelled, so other tasks run while a large one is
  read, and it is never left half read; a handler task that goes on with
  queued requests passes one every ``_SLICE`` requests too.
* A stopping session starts nothing more from its queue and drops it at once.
* Reader relay: over a channel with ``buffered()``, a request that is the last
  thing read and finds a free slot runs in the reader's task and cancel scope,
  in a copy of its context.  If it never yields, the reader reads on; the first
  time it yields, a successor reader is started and the task stays the
  request's.  A scope a handler has seen (``ctx.cancel_scope``), or cancelled
  for a request before it began, is never read in again.
* A handler task goes on with queued requests in its scope, each in a fresh
  copy of its starting context, until the queue is empty, the session stops,
  or the scope is cancelled or unfit.  In a hosted session (Streamable HTTP),
  one such task per session then waits for the next request instead of
  ending, until the engine's sweep finds it idle twice in a row (``_idle``).
* A handler's return value is the result; :class:`McpError` answers with that
  error, any other exception -32603 (logged); a cancelled request sends
  nothing.  The answer is the request's last act: written at once, queued
  without waiting, or, with the outbox full, left to a task of its own outside
  the request's scope.
* ``_alive`` counts the work that may still write; the last one out closes a
  stopping session's outbox.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from .. import _jsonrpc as rpc
from .._core import RequestReceived, SessionCore
from .._exceptions import ConnectionClosed, LocalProtocolError
from ..transports._base import BufferedInput, Frame, HostedSession, MessageChannel
from ._common import RequestTally, _ended, log, refusal
from ._compat_trio import until_it_waits
from ._context import RequestContext
from ._idle import idle_sweep

__all__ = ["RequestHandler"]

RequestHandler = Callable[[RequestContext, Any], Awaitable[Any]]

_SLICE = 128  # batch members taken between two checkpoints
DEFAULT_MAX_QUEUED_TOTAL = 16_384

_HANDLER_NAME = "mcp_trio._engine._session.Session._handle_request"  # trio task name of request handlers
_READER_NAME = "mcp_trio._engine._session.Session._next_reader"  # of successor readers (reader relay)


def _queue_bounds(
    channel: object, max_in_flight: int, max_queued: int | None, max_queued_total: int | None
) -> tuple[int, int]:
    """A session's ``max_queued`` and ``max_queued_total``: as given, else the
    channel's (a transport's own defaults, Streamable HTTP's), else
    ``max_in_flight`` and ``DEFAULT_MAX_QUEUED_TOTAL``."""
    if isinstance(channel, HostedSession):  # (the endpoint's own defaults)
        if max_queued is None:
            max_queued = channel.max_queued
        if max_queued_total is None:
            max_queued_total = channel.max_queued_total
    if max_queued is not None and max_queued < 0:
        raise ValueError("max_queued must not be negative")
    if max_queued_total is not None and max_queued_total < 0:
        raise ValueError("max_queued_total must not be negative")
    return (
        max_in_flight if max_queued is None else max_queued,
        DEFAULT_MAX_QUEUED_TOTAL if max_queued_total is None else max_queued_total,
    )


class QueueBudget:
    """The requests waiting for a handler slot in every session that draws on it: what
    ``max_queued_total`` bounds.  A :class:`~mcp_trio.server.Server` gives its own to each
    session it serves (``Server(queue_budget=...)`` to share one between servers); a session
    given none draws on :data:`SHARED_BUDGET` with every other such session of the process."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0  #: requests waiting now


#: The budget of the sessions made without one (``queue_budget=None``).
SHARED_BUDGET = QueueBudget()


class _Handlers:
    """The request-running methods of :class:`~mcp_trio.Session` (a mixin of it)."""

    core: SessionCore
    channel: MessageChannel
    max_in_flight: int
    max_queued: int
    max_queued_total: int
    queue_budget: QueueBudget
    close_grace: float
    eof_grace: float
    _handlers: Mapping[str, RequestHandler]
    _alive: int
    _queued: deque[RequestReceived] | tuple[()]
    _room: trio.Event | None = None  # the reader waits for a free slot (rare: not an instance's own)
    #: The session's idle handler task, parked in :meth:`_linger`.
    _idle: _IdleTask | None = None
    _scopes: dict[Any, trio.CancelScope]
    _stopping: bool
    _tasks: trio.Nursery | None
    _close_reason: str
    _waiters: dict[Any, Any]
    initialized: trio.Event
    _input_eof: bool = False  # the reader met the end of the input (not an error)
    _drained: trio.Event | None = None  # set when the last request after the input's end is done
    tally: RequestTally  # this session's requests (see request_totals), and its server's
    #: Log each request received at DEBUG (set when the session starts: a
    #: check of the logger per request would cost every request).
    log_requests = False

    if TYPE_CHECKING:

        async def _dispatch(self, event: Any) -> None: ...
        async def _put(self, frame: Frame) -> None: ...
        async def _put_answer(self, frame: Frame) -> None: ...
        def _queue_nowait(self, frame: Frame) -> None: ...
        def _write_now(self, frame: Frame) -> bool: ...
        def _write_alone(self, frame: Frame) -> bool: ...
        def _close_outbox(self) -> None: ...
        def _stop(self) -> None: ...

    async def _reader(self) -> bool:
        """Read and dispatch frames until the input ends (False), or until this
        task becomes the task of a request it read and hands the reading on
        (True): the reader relay (see the module's rules).

        The loop runs in a cancel scope entered once around the reading, which
        a request served here shares until it yields; a fresh one replaces a
        scope a request spoilt.  So a cancellation this scope catches is that
        of a request this task went on with after handing the reading on.
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
        buffered = channel.buffered if isinstance(channel, BufferedInput) else None
        while True:
            try:
                frame = await channel.receive()
            except trio.EndOfChannel:
                self._input_eof = True
                self._close_reason = _ended("the peer closed the connection", channel)
                return False
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self._close_reason = _ended("the peer closed the connection", channel)
                return False
            if frame.error is not None:
                log.warning("framing error from peer: %s", frame.error)
                events = core.framing_error(frame.error)
            elif core.is_batch(frame.data):
                await self._take_batch(frame.data, push=False)
                continue
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
                and self.tally.running < self.max_in_flight
                and not buffered()
                and not self._stopping
            ):
                self._take_slot()
                waited, fit = await until_it_waits(
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
            await self._finish_after_eof()
            self._stop()

    async def _finish_after_eof(self) -> None:
        """The input ended (EOF, not an error): our own pending requests fail
        with :class:`ConnectionClosed` (nobody can answer them now), and the
        requests already read, running or queued, get up to ``eof_grace``
        seconds to finish and queue their answers; the caller then stops the
        session, which cancels what remains.  A failed write stops the session
        at once, as always."""
        if not self._input_eof or self._stopping or self.eof_grace <= 0:
            return
        error = ConnectionClosed(self._close_reason)
        for waiter in list(self._waiters.values()):
            waiter.finish(error=error)
        if self._alive == 0 and not self._queued:
            return
        self._drained = trio.Event()
        with trio.move_on_after(self.eof_grace):
            await self._drained.wait()

    async def _take_batch(self, data: bytes, push: bool) -> None:
        """Take a batch, ``_SLICE`` members at a time (see the module's rules):
        its requests are queued, when no room is left refused (``push``: a
        transport's push input) or waited for (the reader)."""
        core = self.core
        slices = core.receive_slices(data, _SLICE)
        while True:
            # Other tasks (other sessions) run before each slice (and before the
            # batch is split into members); a batch is never left half read, or its
            # reply would wait for members never received.
            await trio.lowlevel.cancel_shielded_checkpoint()
            if core.closed:
                return
            events = next(slices, None)
            if events is None:
                return
            for event in events:
                if push and isinstance(event, RequestReceived):
                    await self._admit(event)
                else:
                    await self._dispatch(event)

    async def _admit(self, event: RequestReceived) -> None:
        """Queue a request that cannot wait for room (see the module's rules), or refuse it."""
        if self._stopping:
            return  # nothing more starts (the core has ended: nobody to answer)
        bound = self._queue_full()
        if bound is None:
            self._enqueue(event)
            return
        data = self.core.error(event.id, rpc.INTERNAL_ERROR, bound)
        self.tally.count_error(refused=True)
        if data is not None:  # (None: a batch reply still waits for others)
            frame = Frame(data, event.id, True)
            if not self._write_alone(frame):
                await self._put(frame)

    def _queue_full(self) -> str | None:
        """Why a request cannot be queued now (the bound it meets), or ``None``."""
        if self.tally.running < self.max_in_flight:
            return None  # it runs at once
        if len(self._queued) >= self.max_queued:
            return f"Server busy: the session's queue is full (max_queued={self.max_queued}); retry later"
        if self.queue_budget.count >= self.max_queued_total:
            total = self.max_queued_total
            return f"Server busy: the server's queue is full (max_queued_total={total}); retry later"
        return None

    def _enqueue(self, event: RequestReceived) -> None:
        queued = self._queued
        if not isinstance(queued, deque):
            queued = self._queued = deque()
        queued.append(event)
        self.queue_budget.count += 1
        self._start_queued()

    def _dequeue(self) -> RequestReceived:
        self.queue_budget.count -= 1
        return self._queued.popleft()  # type: ignore[union-attr]

    def _drop_queue(self) -> None:
        """The session stops: what waits in its queue is never started."""
        self.queue_budget.count -= len(self._queued)
        self._queued = ()

    def _take_slot(self) -> None:
        """Count a request about to be handled (``_handle_request`` gives the slot back)."""
        self._alive += 1
        self.tally.count_start()

    def _start_queued(self) -> None:
        """Start queued requests while slots are free: the first in the session's
        idle handler task if it has one (see :meth:`_linger`), the others each in
        a task of its own."""
        assert self._tasks is not None
        while self._queued and self.tally.running < self.max_in_flight and not self._stopping:
            self._take_slot()
            idle = self._idle
            if idle is not None:
                self._idle = None
                idle.handed = self._dequeue()
                trio.lowlevel.reschedule(idle.task)
            else:
                # (a name given: trio need not build one from the method per task)
                self._tasks.start_soon(self._handler_task, self._dequeue(), name=_HANDLER_NAME)
        if self._room is not None:
            self._room.set()

    async def _linger(self) -> RequestReceived | None:
        """Wait, as the session's idle handler task, for the next request
        :meth:`_start_queued` hands over (its slot taken); None: the engine's
        sweep ended the task (:meth:`sweep_idle_handler`), or the session ends
        (its nursery is cancelled)."""
        idle = self._idle = _IdleTask(trio.lowlevel.current_task())
        idle_sweep().add(self)

        def abort(_: object) -> trio.lowlevel.Abort:  # (the session ends)
            if self._idle is idle:
                self._idle = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        return idle.handed

    def sweep_idle_handler(self) -> bool:
        """Called now and then by the engine's sweep (:class:`~._idle.IdleSweep`,
        where an idle handler task registers its session): end the session's
        idle handler task if it has waited since the previous call, so a
        session that has gone quiet holds no task.  False: the session has no
        idle handler task now (no longer to be swept)."""
        idle = self._idle
        if idle is None:
            return False
        if not idle.swept:
            idle.swept = True
            return True
        self._idle = None
        trio.lowlevel.reschedule(idle.task)  # (nothing handed: it ends)
        return False

    async def _handler_task(self, event: RequestReceived) -> None:
        """A request's own task: answers ``event``, then takes requests still
        queued, one at a time, in the same cancel scope, each in a fresh copy
        of the context the task started with (what a task of its own would
        get), until the session stops, a request spoils the scope (see
        :meth:`_reader`) or is cancelled (which ends the task), or the queue
        holds more than a free slot allows.  With the queue empty, in a session
        hosted by an endpoint (see :meth:`sweep_idle_handler`),
        the first such task to find it so stays as the session's idle handler
        task and takes the next request that comes (:meth:`_linger`): a
        session whose requests come one after another costs no task and no
        cancel scope per request.
        """
        context = contextvars.copy_context()
        taken = 1
        try:
            with trio.CancelScope() as scope:
                fit = await self._handle_request(event, scope)
                # (a handler that caught its cancellation and returned left it cancelled)
                while fit and not self._stopping and not scope.cancel_called:
                    if self._queued and self.tally.running < self.max_in_flight:
                        self._take_slot()
                        event = self._dequeue()
                        if self._room is not None:
                            self._room.set()
                    elif not self._queued and self._idle is None and isinstance(self.channel, HostedSession):
                        handed = await self._linger()
                        if handed is None:
                            break
                        event = handed
                    else:
                        break
                    _, fit = await until_it_waits(
                        self._handle_request(event, scope), context.copy(), _nothing
                    )
                    taken += 1
                    if taken % _SLICE == 0:
                        # Handlers that never wait: other tasks run now and then all the same.
                        await trio.lowlevel.cancel_shielded_checkpoint()
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
        if self.log_requests:
            log.debug("request %s (id %r)", event.method, id)
        try:
            self._scopes[id] = scope
            if core.is_cancelled(id):
                scope.cancel()
                fit = False
            handler = self._handlers.get(event.method)
            try:
                if handler is None:
                    self.tally.count_error()
                    data = core.error(id, rpc.METHOD_NOT_FOUND, f"Method not found: {event.method}")
                else:
                    ctx = RequestContext(self, event, scope)  # type: ignore[arg-type]  # (self is a Session)
                    result = await handler(ctx, event.params)
                    if core.closed:  # the session ended meanwhile: nobody to answer
                        self.tally.count_cancelled()
                        return False
                    try:
                        data = core.respond(id, result)
                    except LocalProtocolError as exc:
                        log.error("handler for %s returned an invalid result: %s", event.method, exc)
                        self.tally.count_error()
                        data = core.error(id, rpc.INTERNAL_ERROR, f"Internal error: {exc}")
            except Exception as exc:
                if core.closed:  # e.g. a call back to the peer found it gone
                    log.debug("handler for %s ended with the session: %r", event.method, exc)
                    self.tally.count_cancelled()
                    return False
                self.tally.count_error()
                refused = refusal(exc)  # (an McpError, or the same one from each of its tasks)
                if refused is not None:
                    data = core.error(id, refused.code, refused.message, refused.data)
                else:
                    log.exception("handler for %s%s failed", event.method, _subject(event.params))
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
        except BaseException:  # cancelled (or failed) before an answer was made
            if data is None:
                self.tally.count_cancelled()
            raise
        finally:
            self.tally.count_end()
            self._scopes.pop(id, None)
            leftover = core.drop(id)
            if leftover is not None and data is None:
                with trio.move_on_after(self.close_grace, shield=True):
                    try:
                        await self._put(Frame(leftover, id, True))
                    except ConnectionClosed:
                        pass
            self._release()
        return fit and not (ctx is not None and ctx._scope_seen)

    def cut(self, reason: str) -> None:
        """Answer every request being handled with an error saying ``reason`` and cancel it."""
        for id, scope in list(self._scopes.items()):
            data = self.core.error(id, rpc.INTERNAL_ERROR, reason)
            if data is not None and self._tasks is not None:
                self._alive += 1
                self._tasks.start_soon(self._put_answer, Frame(data, id, True))
            scope.cancel()

    def request_totals(self) -> tuple[int, int, int]:
        """The requests of the peer this session has finished: (answered with a
        result, answered with an error, cancelled or left unanswered as the
        session ended).  Requests refused for lack of room count as errors."""
        tally = self.tally
        return tally.done - tally.error - tally.cancelled, tally.error, tally.cancelled

    def _peer_initialized(self) -> None:
        """The peer's ``notifications/initialized`` came: the handshake is done."""
        self.initialized.set()
        if self.log_requests:
            info = self.core.peer_info
            log.debug(
                "session initialized: revision %s, client %s %s",
                self.core.version,
                info.get("name", "?"),
                info.get("version", "?"),
            )

    def _release(self) -> None:
        """A request's work that may still write (counted in ``_alive``) is done:
        the last one out closes the outbox of a stopping session."""
        self._alive -= 1
        if self._alive == 0:
            if self._stopping:
                self._close_outbox()
            elif self._drained is not None and not self._queued:
                self._drained.set()


class _IdleTask:
    """A session's idle handler task (see ``_Handlers._linger``): the request handed
    to it as it is woken, and whether a sweep has already found it idle."""

    __slots__ = ("task", "handed", "swept")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.handed: RequestReceived | None = None
        self.swept = False


def _nothing() -> None:
    pass


def _subject(params: Any) -> str:
    """`` (NAME)`` for the tool, prompt or resource a failed request named ("" if none)."""
    for key in ("name", "uri"):
        value = params.get(key) if isinstance(params, dict) else getattr(params, key, None)
        if isinstance(value, str):
            return f" ({value[:200]})"
    return ""
