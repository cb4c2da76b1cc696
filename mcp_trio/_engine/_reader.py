"""The session's input: frames read from the channel (or pushed in by the transport), turned
into events by the core and routed to the collaborator each concerns.

Rules:

* The reader does sync work and non-blocking hand-offs only: requests go to the
  :class:`~._handlers.HandlerRunner` (the reader waits for room past ``max_queued``:
  backpressure), answers and progress to the :class:`~._outgoing.Caller`'s waiters, our own
  frames the core made (a batch reply, an error) to the :class:`~._writer.Writer`,
  notifications to :class:`~._notifications.Notifications`, cancellations to the running
  request's scope.
* Push input (a transport with ``attach_receiver``, Streamable HTTP): :meth:`Reader.feed`
  takes a frame in the transport's task and never waits for room: a request finding none is
  refused (such a transport bounds what it hands over itself).
* A batch is taken ``BATCH_SLICE`` members at a time, with a checkpoint that cannot be
  cancelled before the first slice and then once ``STEP`` seconds have passed, so other tasks
  run while a large one is read, and it is never left half read.
* When the input ends (EOF) our pending requests fail with :class:`ConnectionClosed`; the
  requests already read get ``eof_grace`` to be answered (:meth:`Reader.after_eof`).
* Reader relay (the session's ``reader_relay`` option; off by default): over a channel with
  ``buffered()``, a request that is the last thing read and
  finds a free slot runs in the reader's task and cancel scope, in a copy of its context
  (``_compat_trio.until_it_waits``).  If it never yields, the reader reads on; the first time
  it yields, a successor reader is started and the task stays the request's.  A scope a
  handler has seen (``ctx.cancel_scope``), or cancelled for a request before it began, is
  never read in again.
"""

from __future__ import annotations

import contextvars
import time
from typing import TYPE_CHECKING, Any

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
)
from .._exceptions import ConnectionClosed
from ..transports._base import BufferedInput, Frame, MessageChannel
from ._common import Ending, _ended, log
from ._compat_trio import until_it_waits
from ._handlers import BATCH_SLICE, STEP, HandlerRunner
from ._notifications import Notifications
from ._outgoing import Caller
from ._writer import Writer

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["Reader"]

_READER_NAME = "mcp_trio._engine._reader.Reader.next_reader"  # of successor readers (reader relay)


class Reader:
    """Reads one session's input and routes each event (see the module's rules)."""

    __slots__ = (
        "core",
        "channel",
        "runner",
        "writer",
        "caller",
        "notifications",
        "ending",
        "initialized",
        "eof",
        "eof_grace",
        "session",
        "tasks",
        "relay",
    )

    def __init__(
        self,
        core: SessionCore,
        channel: MessageChannel,
        runner: HandlerRunner,
        writer: Writer,
        caller: Caller,
        notifications: Notifications,
        ending: Ending,
        eof_grace: float,
        relay: bool = False,
    ) -> None:
        self.core = core
        self.channel = channel
        self.runner = runner
        self.writer = writer
        self.caller = caller
        self.notifications = notifications
        self.ending = ending
        #: The session's: set by the peer's ``notifications/initialized``.
        self.initialized = trio.Event()
        self.eof = False  # the reader met the end of the input (not an error)
        self.eof_grace = eof_grace  # seconds the requests already read get once the input ends
        # Given as the session starts, taken back as it ends (no reference cycle is left).
        self.session: Session | None = None
        self.tasks: trio.Nursery | None = None
        self.relay = relay  # the reader relay (the ``reader_relay`` option)

    async def run(self) -> bool:
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
                self.runner.start_queued()
            return outcome

    async def _read(self, scope: trio.CancelScope) -> bool | None:
        """The reader's loop (see :meth:`run`), in ``scope``; None: a request
        it served spoilt ``scope``, go on in a fresh one."""
        channel = self.channel
        core = self.core
        runner = self.runner
        queue = runner.queue
        buffered = channel.buffered if self.relay and isinstance(channel, BufferedInput) else None
        while True:
            try:
                frame = await channel.receive()
            except trio.EndOfChannel:
                self.eof = True
                self.ending.reason = _ended("the peer closed the connection", channel)
                return False
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                self.ending.reason = _ended("the peer closed the connection", channel)
                return False
            if frame.error is not None:
                log.warning("framing error from peer: %s", frame.error)
                events = core.framing_error(frame.error)
            elif core.is_batch(frame.data):
                await self.take_batch(frame.data, push=False)
                continue
            else:
                events = core.receive(frame.data)
            if not events:
                continue
            last = events.pop()
            for event in events:
                await self.dispatch(event)
            if (
                buffered is not None
                and isinstance(last, RequestReceived)
                and not queue.waiting
                and runner.tally.running < runner.max_in_flight
                and not buffered()
                and not runner.stopped
            ):
                runner.take_slot()
                waited, fit = await until_it_waits(
                    runner.handle_request(last, scope), contextvars.copy_context(), self._start_successor
                )
                if waited:
                    return True  # a successor took over the reading
                if not fit:
                    return None
                continue
            await self.dispatch(last)

    def _start_successor(self) -> None:
        assert self.tasks is not None
        self.tasks.start_soon(self.next_reader, name=_READER_NAME)

    async def next_reader(self) -> None:
        """A successor of a reader that took a request (see :meth:`run`)."""
        if not await self.run():
            session = self.session
            assert session is not None  # (attached while the session runs)
            await self.after_eof()
            session._stop()

    async def after_eof(self) -> None:
        """The input ended (EOF, not an error): our own pending requests fail
        with :class:`ConnectionClosed` (nobody can answer them now), and the
        requests already read, running or queued, get up to ``eof_grace``
        seconds to finish and queue their answers; the caller then stops the
        session, which cancels what remains.  A failed write stops the session
        at once, as always."""
        if not self.eof or self.runner.stopped or self.eof_grace <= 0:
            return
        self.caller.fail_all(ConnectionClosed(self.ending.reason))
        await self.runner.drain(self.eof_grace)

    async def feed(self, frame: Frame) -> None:
        """Push input: take ``frame`` in the task of the transport that received it
        (see the module's rules).

        Raises:
            trio.ClosedResourceError: the session has ended.
        """
        core = self.core
        if core.closed:
            raise trio.ClosedResourceError(self.ending.reason)
        try:
            if frame.error is not None:
                log.warning("framing error from peer: %s", frame.error)
                events = core.framing_error(frame.error)
            elif core.is_batch(frame.data):
                await self.take_batch(frame.data, push=True)
                return
            else:
                events = core.receive(frame.data)
            for event in events:
                if isinstance(event, RequestReceived):
                    await self.runner.admit(event)
                else:
                    await self.dispatch(event)
        except ConnectionClosed:
            raise trio.ClosedResourceError(self.ending.reason) from None

    async def take_batch(self, data: bytes, push: bool) -> None:
        """Take a batch, ``BATCH_SLICE`` members at a time (see the module's rules):
        its requests are queued, when no room is left refused (``push``: a
        transport's push input) or waited for (the reader)."""
        core = self.core
        slices = core.receive_slices(data, BATCH_SLICE)
        clock = time.perf_counter
        began = 0.0
        while True:
            # Other tasks (other sessions) run before the batch is split into
            # members and then once a step has taken ``STEP`` seconds; a batch is
            # never left half read, or its reply would wait for members never received.
            if not began or clock() - began > STEP:
                await trio.lowlevel.cancel_shielded_checkpoint()
                began = clock()
            if core.closed:
                return
            events = next(slices, None)
            if events is None:
                return
            for event in events:
                if push and isinstance(event, RequestReceived):
                    await self.runner.admit(event)
                else:
                    await self.dispatch(event)

    async def dispatch(self, event: Any) -> None:
        """Route one event of the core to the collaborator it concerns."""
        if isinstance(event, RequestReceived):
            runner = self.runner
            queue = runner.queue
            while len(queue.waiting) >= queue.limit and runner.tally.running >= runner.max_in_flight:
                runner.room = trio.Event()
                await runner.room.wait()  # backpressure: stop reading
            await runner.admit(event)  # (refused past max_queued_total)
        elif isinstance(event, ResponseReceived):
            waiter = self.caller.waiters.get(event.id)
            if waiter is not None:
                waiter.finish(event.result, event.error)
        elif isinstance(event, Outgoing):
            frame = Frame(event.data, event.related, event.final)
            if not self.writer.write_alone(frame):
                await self.writer.put(frame)
        elif isinstance(event, NotificationReceived):
            assert self.session is not None and self.tasks is not None  # (attached while it runs)
            await self.notifications.deliver(event, self.session, self.tasks)
        elif isinstance(event, CancelRequested):
            scope = self.runner.scopes.get(event.id)
            if scope is not None:
                scope.cancel()
        elif isinstance(event, ProgressReceived):
            waiter = self.caller.waiters.get(event.id)
            if waiter is not None:
                waiter.add_progress(event)
        elif isinstance(event, PeerInitialized):
            self._peer_initialized()
        elif isinstance(event, ProtocolViolation):
            log.info("protocol violation by peer: %s", event.message)

    def _peer_initialized(self) -> None:
        """The peer's ``notifications/initialized`` came: the handshake is done."""
        self.initialized.set()
        if self.runner.log_requests:
            info = self.core.peer_info
            log.debug(
                "session initialized: revision %s, client %s %s",
                self.core.version,
                info.get("name", "?"),
                info.get("version", "?"),
            )
