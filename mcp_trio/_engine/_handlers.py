"""Running the requests we receive: :class:`HandlerRunner` owns the handler table, the slots,
the queue and the handler tasks of one session (the reasoning and the measurements:
docs/engine.md; the reader relay, which runs a request in the reader's task, is in
:mod:`._reader`).

Rules:

* At most ``max_in_flight`` requests run at once; up to ``max_queued`` more
  wait in arrival order while the reader goes on (:mod:`._queue`); beyond that
  the reader stops reading until a slot frees (backpressure).  A request that
  cannot wait (any request a transport pushes in, Streamable HTTP's) is refused
  instead, at once, with -32603 naming the bound; so is, over any transport, a
  request past ``max_queued_total`` waiting in the queue budget it draws on
  (its server's).  The session goes on.
* Fairness (docs/engine.md): a handler task that goes on with queued requests
  that never wait passes a checkpoint once it has run ``STEP`` seconds (or
  ``SLICE`` requests), so other tasks run now and then all the same; at most
  ``STARTING`` tasks given a request of the session wait to run at once (one at
  its checkpoint counts), a request given a slot past that is deferred until
  one of them runs, and a task that would pass its checkpoint with ``STARTING``
  already waiting ends instead.  Requests that wait hold their slots: the bound
  is on tasks ready to run, not on requests in flight.
* A stopping session starts nothing more from its queue and drops it at once.
* A handler task goes on with queued requests in its scope until the queue is
  empty, the session stops, a handler changed the task's context (set a
  context variable: the next request gets a task of its own, and so a fresh
  copy), or the scope is cancelled or unfit (a scope a handler has seen,
  ``ctx.cancel_scope``, or cancelled for a request before it began).  Each
  handler is awaited as any coroutine is: nothing is stepped by hand.  Then
  one such task per session waits for the next request instead of ending,
  until the engine's sweep finds it idle twice in a row (``_idle``).
* A handler's return value is the result; :class:`McpError` answers with that
  error, any other exception -32603 (logged); a cancelled request sends
  nothing.  The answer is the request's last act: written at once, queued
  without waiting, or, with the outbox full, left to a task of its own outside
  the request's scope.
* ``alive`` counts the work that may still write; the last one out closes a
  stopping session's outbox.
"""

from __future__ import annotations

import contextvars
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import trio

from .. import _jsonrpc as rpc
from .._core import RequestReceived, SessionCore
from .._exceptions import ConnectionClosed, LocalProtocolError
from ..transports._base import Frame
from ._common import RequestTally, log, refusal
from ._context import RequestContext
from ._idle import idle_sweep
from ._queue import RequestQueue
from ._writer import Writer

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["HandlerRunner", "RequestHandler"]

RequestHandler = Callable[[RequestContext, Any], Awaitable[Any]]

#: Seconds of work between two checkpoints: a handler task going on with queued requests that
#: never wait, or the taking of a batch (``Reader.take_batch``).
STEP = 0.0002
#: Members of a batch the input takes before it looks at the clock (see ``STEP``).
BATCH_SLICE = 16
#: Tasks a session may have started for its requests that trio has not run yet.
STARTING = 8
SLICE = 128  # requests a handler task takes at most between two checkpoints (quicker than STEP)

_HANDLER_NAME = "mcp_trio._engine._handlers.HandlerRunner.handle_request"  # trio task name of handlers


class HandlerRunner:
    """Runs the peer's requests for one session (see the module's rules)."""

    __slots__ = (
        "core",
        "writer",
        "close_grace",
        "table",
        "max_in_flight",
        "queue",
        "room",
        "scopes",
        "alive",
        "idle",
        "starting",
        "deferred",
        "drained",
        "stopped",
        "tally",
        "log_requests",
        "session",
        "tasks",
    )

    def __init__(
        self,
        core: SessionCore,
        writer: Writer,
        table: Mapping[str, RequestHandler] | None,
        max_in_flight: int,
        queue: RequestQueue,
        close_grace: float,
    ) -> None:
        if max_in_flight < 1:
            raise ValueError("max_in_flight must be at least 1")
        self.core = core
        self.writer = writer
        self.close_grace = close_grace
        # A read-only table (a MappingProxyType, as a Server hands every session)
        # is shared until somebody asks for request_handlers to change it.
        self.table: Mapping[str, RequestHandler] = (
            table if isinstance(table, MappingProxyType) else dict(table or {})
        )
        self.max_in_flight = max_in_flight
        self.queue = queue  # (its own from now on)
        self.room: trio.Event | None = None  # the reader waits for a free slot
        self.scopes: dict[Any, trio.CancelScope] = {}  # of the requests being handled, by id
        self.alive = 0  # request handler tasks (and answers on their way) not finished yet
        #: The session's idle handler task, parked in :meth:`_linger`.
        self.idle: IdleTask | None = None
        #: Tasks given a request of this session that have not run yet (at most ``STARTING``).
        self.starting = 0
        #: Requests given a slot that wait for ``starting`` to drop (oldest first).
        self.deferred: deque[RequestReceived] = deque()
        self.drained: trio.Event | None = None  # set when the last request after the input's end is done
        self.stopped = False  # the session stops: nothing more starts
        self.tally = RequestTally()  # its requests (running: from the moment a slot is taken)
        #: Log each request received at DEBUG (set when the session starts: a
        #: check of the logger per request would cost every request).
        self.log_requests = False
        # Given as the session starts, taken back as it ends (no reference cycle is left).
        self.session: Session | None = None
        self.tasks: trio.Nursery | None = None

    def own_table(self) -> dict[str, RequestHandler]:
        """The handler table as this session's own dict (a shared one is copied first)."""
        if not isinstance(self.table, dict):
            self.table = dict(self.table)
        return self.table

    def use_table(
        self, table: Mapping[str, RequestHandler], instead_of: Mapping[str, RequestHandler] | None
    ) -> bool:
        """Take ``table`` (with ``instead_of``: only in place of that one); whether it was taken."""
        if instead_of is not None and self.table is not instead_of:
            return False
        self.table = table
        return True

    def stop(self) -> None:
        """The session stops: nothing more starts, the queue is dropped, no idle task waits."""
        self.stopped = True
        self.queue.drop()
        deferred = self.deferred
        while deferred:  # (given a slot, never started: the slot is given back)
            deferred.popleft()
            self.tally.count_unstarted()
            self.release()
        idle_sweep().discard(self)  # (not kept until the next sweep)

    async def drain(self, grace: float) -> None:
        """Wait up to ``grace`` seconds for the requests already read, running or queued."""
        if self.alive == 0 and not self.queue.waiting:
            return
        self.drained = trio.Event()
        with trio.move_on_after(grace):
            await self.drained.wait()

    def write_now(self, frame: Frame) -> bool:
        """Write the answer ``frame`` from the handler's task, if it is safe
        and worth it; False: nothing was written, queue it for the writer.

        Only while no other request runs or waits (their answers leave in one
        write per burst), through :meth:`Writer.write_alone`: one all-or-nothing
        write, with no await in between to cancel (docs/engine.md).
        """
        if self.tally.running > 1 or self.queue.waiting:
            return False
        return self.writer.write_alone(frame)

    async def _put_answer(self, frame: Frame) -> None:
        """Queue ``frame`` once the outbox has room (see :meth:`handle_request`)."""
        try:
            await self.writer.put(frame)
        except ConnectionClosed:
            pass
        finally:
            self.release()

    async def admit(self, event: RequestReceived) -> None:
        """Queue a request that cannot wait for room (see the module's rules), or refuse it."""
        if self.stopped:
            return  # nothing more starts (the core has ended: nobody to answer)
        bound = None if self.tally.running < self.max_in_flight else self.queue.full()
        if bound is None:  # (it runs at once, or waits)
            self.queue.push(event)
            self.start_queued()
            return
        data = self.core.error(event.id, rpc.INTERNAL_ERROR, bound)
        self.tally.count_error(refused=True)
        if data is not None:  # (None: a batch reply still waits for others)
            frame = Frame(data, event.id, True)
            if not self.writer.write_alone(frame):
                await self.writer.put(frame)

    def take_slot(self) -> None:
        """Count a request about to be handled (``handle_request`` gives the slot back)."""
        self.alive += 1
        self.tally.count_start()

    def start_queued(self) -> None:
        """Start queued requests while slots are free: the first in the session's
        idle handler task if it has one (see :meth:`_linger`), the others each in
        a task of its own."""
        assert self.tasks is not None
        queue = self.queue
        while queue.waiting and self.tally.running < self.max_in_flight and not self.stopped:
            self.take_slot()
            self._launch(queue.pop())
        if self.room is not None:
            self.room.set()

    def _launch(self, event: RequestReceived) -> None:
        """Start ``event`` (its slot taken) in the idle handler task or a task of its own,
        or, with ``STARTING`` tasks not yet run, defer it until one of them runs."""
        idle = self.idle
        if idle is not None:
            self.idle = None
            self.starting += 1
            idle.handed = event
            trio.lowlevel.reschedule(idle.task)
        elif self.starting < STARTING:
            self.starting += 1
            assert self.tasks is not None
            # (a name given: trio need not build one from the method per task)
            self.tasks.start_soon(self._handler_task, event, name=_HANDLER_NAME)
        else:
            self.deferred.append(event)

    def _running(self) -> None:
        """A task given a request runs: a deferred request may start in its place."""
        self.starting -= 1
        if self.deferred and not self.stopped:
            self._launch(self.deferred.popleft())

    async def _linger(self) -> RequestReceived | None:
        """Wait, as the session's idle handler task, for the next request
        :meth:`start_queued` hands over (its slot taken); None: the engine's
        sweep ended the task (:meth:`sweep_idle_handler`), or the session ends
        (its nursery is cancelled)."""
        idle = self.idle = IdleTask(trio.lowlevel.current_task())
        idle_sweep().add(self)

        def abort(_: object) -> trio.lowlevel.Abort:  # (the session ends)
            if self.idle is idle:
                self.idle = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)
        return idle.handed

    def sweep_idle_handler(self) -> bool:
        """Called now and then by the engine's sweep (:class:`~._idle.IdleSweep`,
        where an idle handler task registers its session): end the session's
        idle handler task if it has waited since the previous call, so a
        session that has gone quiet holds no task.  False: the session has no
        idle handler task now (no longer to be swept)."""
        idle = self.idle
        if idle is None:
            return False
        if not idle.swept:
            idle.swept = True
            return True
        self.idle = None
        trio.lowlevel.reschedule(idle.task)  # (nothing handed: it ends)
        return False

    async def _handler_task(self, event: RequestReceived) -> None:
        """A request's own task: answers ``event``, then takes requests still
        queued, one at a time, in the same cancel scope, awaiting each handler
        as any coroutine is awaited, until the session stops, a request spoils
        the scope (see :meth:`handle_request`) or is cancelled (which ends the
        task), a handler changed the task's context (the next request then gets
        a task of its own, so each sees the context the task started with, as a
        task of its own would), or the queue holds more than a free slot allows.
        With the queue empty, the first such task to find it so stays as the
        session's idle handler task and takes the next request that comes
        (:meth:`_linger`, until the sweep ends it: :meth:`sweep_idle_handler`):
        a session whose requests come one after another costs no task and no
        cancel scope per request.
        """
        self._running()
        context = contextvars.copy_context()
        taken = 1
        clock = time.perf_counter
        try:
            with trio.CancelScope() as scope:
                fit = await self.handle_request(event, scope)
                began = clock()  # (of the task's step, near enough: since it last yielded)
                queue = self.queue
                # (a handler that caught its cancellation and returned left it cancelled;
                # one that set a context variable ends the task: the next gets a fresh copy)
                while fit and not self.stopped and not scope.cancel_called and _unchanged(context):
                    if self.deferred:  # (its slot taken)
                        event = self.deferred.popleft()
                    elif queue.waiting and self.tally.running < self.max_in_flight:
                        self.take_slot()
                        event = queue.pop()
                        if self.room is not None:
                            self.room.set()
                    elif not queue.waiting and self.idle is None:
                        handed = await self._linger()
                        if handed is None:
                            break
                        context.run(self._running)  # (handed by _launch)
                        event = handed
                        began = clock()
                    else:
                        break
                    fit = await self.handle_request(event, scope)
                    taken += 1
                    if (self.deferred or queue.waiting) and (taken % SLICE == 0 or clock() - began > STEP):
                        # More to take: other tasks run now and then all the same, and this
                        # session's tasks waiting to run count this one.  (With nothing to take
                        # the task waits or ends next: it yields.)
                        if self.starting >= STARTING:
                            break  # (they go on with the queue)
                        self.starting += 1
                        await trio.lowlevel.cancel_shielded_checkpoint()
                        # (in the context the task started with: a task it starts must
                        # not see what the handler it ran set)
                        context.run(self._running)
                        began = clock()
        finally:
            # (from the context the task started with: the first handler may have changed its own)
            context.run(self.start_queued)

    async def handle_request(self, event: RequestReceived, scope: trio.CancelScope) -> bool:
        """Answer ``event`` in ``scope``, a cancel scope its caller entered (a
        reader's (the reader relay, :mod:`._reader`), or a handler task's, see
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
            self.scopes[id] = scope
            if core.is_cancelled(id):
                scope.cancel()
                fit = False
            handler = self.table.get(event.method)
            try:
                if handler is None:
                    self.tally.count_error()
                    data = core.error(id, rpc.METHOD_NOT_FOUND, f"Method not found: {event.method}")
                else:
                    assert self.session is not None  # (attached while the session runs)
                    ctx = RequestContext(self.session, event, scope)
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
                    if not self.write_now(frame):
                        self.writer.queue_nowait(frame)
                except trio.WouldBlock:
                    # No room: a task of its own waits for it, outside ``scope``
                    # (a reader's, or shared with the requests after this one),
                    # whose cancellation must not take back an answer once made.
                    self.alive += 1
                    assert self.tasks is not None
                    self.tasks.start_soon(self._put_answer, frame)
                except (trio.ClosedResourceError, trio.BrokenResourceError):
                    raise ConnectionClosed("the session has ended") from None  # (caught below)
        except ConnectionClosed:
            pass
        except BaseException:  # cancelled (or failed) before an answer was made
            if data is None:
                self.tally.count_cancelled()
            raise
        finally:
            self.tally.count_end()
            self.scopes.pop(id, None)
            leftover = core.drop(id)
            if leftover is not None and data is None:
                with trio.move_on_after(self.close_grace, shield=True):
                    try:
                        await self.writer.put(Frame(leftover, id, True))
                    except ConnectionClosed:
                        pass
            self.release()
        return fit and not (ctx is not None and ctx._scope_seen)

    def cut(self, reason: str) -> None:
        """Answer every request being handled with an error saying ``reason`` and cancel it."""
        for id, scope in list(self.scopes.items()):
            data = self.core.error(id, rpc.INTERNAL_ERROR, reason)
            if data is not None and self.tasks is not None:
                self.alive += 1
                self.tasks.start_soon(self._put_answer, Frame(data, id, True))
            scope.cancel()

    def totals(self) -> tuple[int, int, int]:
        """The requests of the peer this session has finished: (answered with a
        result, answered with an error, cancelled or left unanswered as the
        session ended).  Requests refused for lack of room count as errors."""
        tally = self.tally
        return tally.done - tally.error - tally.cancelled, tally.error, tally.cancelled

    def release(self) -> None:
        """A request's work that may still write (counted in ``alive``) is done:
        the last one out closes the outbox of a stopping session."""
        self.alive -= 1
        if self.alive == 0:
            if self.stopped:
                self.writer.close()
            elif self.drained is not None and not self.queue.waiting:
                self.drained.set()


class IdleTask:
    """A session's idle handler task (see ``HandlerRunner._linger``): the request handed
    to it as it is woken, and whether a sweep has already found it idle."""

    __slots__ = ("task", "handed", "swept")

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task = task
        self.handed: RequestReceived | None = None
        self.swept = False


def _unchanged(context: contextvars.Context) -> bool:
    """Whether the current context holds what ``context`` (a copy of it taken before) does.
    (Cheap when nothing was set since: both share one mapping, compared by identity first.)"""
    try:
        return contextvars.copy_context() == context
    except Exception:  # (a value whose ``==`` fails: a NumPy array, say)
        return False


def _subject(params: Any) -> str:
    """`` (NAME)`` for the tool, prompt or resource a failed request named ("" if none)."""
    for key in ("name", "uri"):
        value = params.get(key) if isinstance(params, dict) else getattr(params, key, None)
        if isinstance(value, str):
            return f" ({value[:200]})"
    return ""
