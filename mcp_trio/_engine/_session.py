"""The trio engine's session: runs a :class:`SessionCore` over a transport channel.

``Session`` is an orchestrator: it holds the options and the session's life (its nursery,
stopping, ending) and forwards the rest to collaborators that each own one piece of state
and state at their top the rules they keep:

* :class:`._writer.Writer` (``_writer``): the outbox and the writer task;
* :class:`._handlers.HandlerRunner` (``_runner``): the handler table, the slots, the queue
  (:class:`._queue.RequestQueue`, drawing on a :class:`._queue.QueueBudget`), the handler
  tasks and the session's idle handler task;
* :class:`._reader.Reader` (``_reader``): the input, read or pushed in, routed event by event,
  and the reader relay;
* :class:`._outgoing.Caller` (``_caller``): our requests and notifications, the answers we
  wait for;
* :class:`._notifications.Notifications` (``_notifications``): the user's notification
  handlers and their task;
* :class:`._handshake.ClientHandshake`: a client's ``connect()``/``initialize()`` (made per
  call, it holds no state).

Task layout of one session (one nursery, opened by ``Session.run``)::

    run              the reader: channel.receive → core.receive → dispatch (sync
     │               work and non-blocking hand-offs only; it never runs user
     │               code but a request it relays), or, for a push transport
     │               (``attach_receiver``), a wait while the transport feeds
     │               frames from its own tasks
     ├─ writer        the only task that calls channel.send (outbox → channel),
     │                started with the first frame queued; a lone answer may
     │                skip it (see HandlerRunner.write_now)
     ├─ notifications user notification handlers, in arrival order (on first use)
     ├─ keepalive     optional pings
     ├─ background    work handed to spawn() (e.g. a server's tasks), cancelled
     │                when the session ends
     └─ one task per incoming request, each in its own CancelScope

Rules kept here:

* When the input ends (EOF) our pending requests fail with
  :class:`ConnectionClosed`; the requests already read get ``eof_grace`` to
  be answered (:meth:`._reader.Reader.after_eof`), then the session ends.
* When the peer goes away every pending request fails at once with
  :class:`ConnectionClosed` and every handler is cancelled; the writer
  (shielded) flushes what is queued within ``close_grace``; nothing outlives
  the ``async with`` block.
* The collaborators that call back into the session (the reader, the runner, the
  writer) are given it as it starts and lose it as it ends: an ended session is
  freed by reference counting alone (tests/engine/test_session_garbage.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from .._core import SessionCore, State
from .._exceptions import ConnectionClosed
from ..transports import _base as transport  # (what channels declare they offer)
from ..transports._base import MessageChannel
from ._common import _DEFAULT, Ending, RequestTally, _ended, _settle_era, _unwrap, spawn_guarded
from ._handlers import HandlerRunner, RequestHandler
from ._handshake import ClientHandshake
from ._notifications import NotificationHandler, Notifications
from ._outgoing import Caller, ProgressCallback, RequestTimeout
from ._queue import QueueBudget, RequestQueue, queue_bounds
from ._reader import Reader
from ._writer import Writer

__all__ = [
    "new_session",
    "NotificationHandler",
    "ProgressCallback",
    "RequestHandler",
    "RequestTimeout",
    "Session",
    "open_session",
]


class Session:
    """One MCP session over one transport channel (low-level API).

    Create it with :func:`open_session`.  Register handlers for the peer's
    requests and notifications, then call :meth:`request` and :meth:`notify`.

    Concurrency: every method may be called from any task of the session's
    trio run.  Incoming requests are handled concurrently, each in its own task.
    """

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
        reader_relay: bool = False,
    ) -> None:
        self.core = core
        self.channel = channel
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_grace = close_grace
        #: Seconds requests already read get to finish once the input ends (EOF);
        #: default: 2 over a transport whose output outlives its input (stdio), else 0.
        if eof_grace is None:
            outlives = isinstance(channel, transport.ChannelTraits) and channel.output_outlives_input
            eof_grace = 2.0 if outlives else 0.0
        self.eof_grace = eof_grace
        #: Set once the session has ended.
        self.closed = trio.Event()
        self._ending = ending = Ending()  # what a closed session's calls say
        self._writer = writer = Writer(channel, ending, outbox_size)
        queue = RequestQueue(
            *queue_bounds(channel, max_in_flight, max_queued, max_queued_total), queue_budget
        )
        self._runner = runner = HandlerRunner(
            core, writer, request_handlers, max_in_flight, queue, close_grace
        )
        self._caller = caller = Caller(core, channel, writer, ending, default_timeout, close_grace)
        self._notifications = notes = Notifications(notification_handlers, outbox_size)
        self._reader = Reader(core, channel, runner, writer, caller, notes, ending, eof_grace, reader_relay)
        #: Set once the handshake (or era detection) finished.
        self.initialized = self._reader.initialized
        self._tasks: trio.Nursery | None = None

    # ------------------------------------------------------------- properties

    @property
    def request_handlers(self) -> dict[str, RequestHandler]:
        """The handlers of the peer's requests, by method; this session's own dict
        (changing it changes nothing else)."""
        return self._runner.own_table()

    @property
    def handled_methods(self) -> frozenset[str]:
        """The methods of the peer's requests this session has a handler for."""
        return frozenset(self._runner.table)

    def use_handlers(
        self, table: Mapping[str, RequestHandler], *, instead_of: Mapping[str, RequestHandler] | None = None
    ) -> bool:
        """Answer the peer's requests with ``table`` from the next one on (a read-only table, as a
        server shares with its sessions); with ``instead_of``, only while the session still
        answers with that one (its ``request_handlers`` were not taken to be changed). Returns
        whether the session took ``table``."""
        return self._runner.use_table(table, instead_of)

    @property
    def notification_handlers(self) -> dict[str, NotificationHandler]:
        """The handlers of the peer's notifications, by method (change it freely)."""
        return self._notifications.handlers

    @property
    def default_timeout(self) -> float | None:
        """Seconds :meth:`request` waits for an answer unless told (``None``: no limit)."""
        return self._caller.default_timeout

    @property
    def max_in_flight(self) -> int:
        return self._runner.max_in_flight

    @property
    def max_queued(self) -> int:
        return self._runner.queue.limit

    @property
    def max_queued_total(self) -> int:
        return self._runner.queue.total

    @property
    def tally(self) -> RequestTally:
        """Counts of its requests (running: from the moment a slot is taken)."""
        return self._runner.tally

    @property
    def log_requests(self) -> bool:
        """Log each request received at DEBUG (set before the session starts)."""
        return self._runner.log_requests

    @log_requests.setter
    def log_requests(self, value: bool) -> None:
        self._runner.log_requests = value

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

    @property
    def state(self) -> State:
        return self.core.state

    def statistics(self) -> dict[str, int]:
        """Counts for monitoring: pending outgoing and in-flight incoming requests."""
        return {
            "pending_requests": len(self._caller.waiters),
            "requests_in_progress": self._runner.tally.running,  # (from the moment a slot is taken)
            "requests_queued": len(self._runner.queue),
            "queued_frames": self._writer.queued(),
        }

    def request_totals(self) -> tuple[int, int, int]:
        """The requests of the peer this session has finished: (answered with a
        result, answered with an error, cancelled or left unanswered as the
        session ended).  Requests refused for lack of room count as errors."""
        return self._runner.totals()

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
            self._writer.closed = True
            self._shutdown()
            # (the collaborators lose the session: no reference cycle outlives it)
            self._reader.session = self._runner.session = self._writer.on_broken = None
            if isinstance(self.channel, transport.PushInput):  # (nothing to wait for: no scope to enter)
                self.channel.close_nowait()
            else:
                with trio.move_on_after(self.close_grace, shield=True):
                    await self.channel.aclose()
            self.closed.set()

    async def _run_tasks(self, task_status: trio.TaskStatus[Session]) -> None:
        """:meth:`run` up to its shutdown: the session's nursery, its exception unwrapped."""
        unwrapped: BaseException | None = None
        try:
            # One nursery for everything; _stop() cancels it, but the writer
            # (shielded) sends what is queued, and the outbox closes once the
            # last request handler is done (its answer may still be on the way).
            async with trio.open_nursery() as tasks:
                self._tasks = self._reader.tasks = self._runner.tasks = self._writer.tasks = tasks
                self._reader.session = self._runner.session = self
                self._writer.on_broken = self._stop
                try:
                    if self._runner.stopped:
                        return  # closed before it ran
                    if (interval := self.keepalive_interval) is not None:
                        ping = self._caller.keepalive
                        tasks.start_soon(
                            ping, self.initialized, interval, self.keepalive_timeout, self._close
                        )
                    task_status.started(self)
                    if isinstance(self.channel, transport.PushInput):
                        await self.channel.attach_receiver(self._reader.feed, self._input_ended)
                        await trio.sleep_forever()  # until _input_ended() or _stop()
                    else:
                        if await self._reader.run():  # handed on: a successor reads
                            await trio.sleep_forever()  # until _stop()
                        await self._reader.after_eof()
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

    def _input_ended(self) -> None:
        """Push input: the transport has no more frames (see ``attach_receiver``)."""
        if not self._runner.stopped:
            self._ending.reason = _ended("the peer closed the connection", self.channel)
        self._stop()

    def _close(self, reason: str) -> None:
        """End the session (from any task), saying ``reason`` to the calls that find it ended."""
        self._ending.reason = reason
        self._stop()

    def _stop(self) -> None:
        """End the session (from any task): no more input, pending requests
        fail, handlers and background work are cancelled, and the writer gets
        ``close_grace`` to send what is queued."""
        self._shutdown()
        if self._runner.stopped:
            return
        self._runner.stop()
        if self._tasks is None:
            return  # not running yet: run() returns at once
        self._writer.scope.deadline = trio.current_time() + self.close_grace
        self._tasks.cancel_scope.cancel()
        if self._runner.alive == 0:
            self._writer.close()

    def _shutdown(self) -> None:
        if self.core.closed and not self._caller.waiters:
            return
        self.core.close()
        self._caller.fail_all(ConnectionClosed(self._ending.reason))

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
        return await self._caller.request(
            method,
            params,
            timeout=timeout,
            on_progress=on_progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_total_timeout=max_total_timeout,
            related=related,
            on_sent=on_sent,
            result_type=result_type,
        )

    async def notify(self, method: str, params: Any = None, *, related: Any = None) -> None:
        """Send a notification.

        Raises:
            LocalProtocolError: it may not be sent now (lifecycle, capability).
            ConnectionClosed: the session has ended.
        """
        await self._caller.notify(method, params, related=related)

    async def close_stream(self, request_id: Any) -> bool:
        """Ask the transport to end the response stream of the peer's request
        ``request_id`` while the request goes on (SSE polling).

        What was sent before reaches the stream first.  Returns False when the
        transport has no such streams (stdio, in-memory); Streamable HTTP
        closes the stream only when the client can resume it (an event store,
        a session, 2025-11-25 or later: the stream began with a priming event)
        and otherwise keeps it open.
        """
        return await self._caller.close_stream(request_id)

    async def send_progress(
        self,
        request_id: Any,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> None:
        """Report progress on the peer's request ``request_id`` (no-op without a token)."""
        await self._caller.send_progress(request_id, progress, total, message)

    async def ping(self, *, timeout: float | None | object = _DEFAULT) -> None:
        await self._caller.request("ping", timeout=timeout)

    async def initialize(self, *, version: str | None = None, timeout: Any = _DEFAULT) -> Any:
        """Client: the legacy ``initialize`` handshake, then ``notifications/initialized``.

        Returns the ``InitializeResult``.

        Raises:
            RemoteProtocolError: the server answered a version this client does
                not accept (or not an ``InitializeResult``).  The session is
                closed first: the client disconnects, as the specification asks.
        """
        return await ClientHandshake(self).initialize(version=version, timeout=timeout)

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
        return await ClientHandshake(self).connect(probe_timeout=probe_timeout, timeout=timeout)

    def cut(self, reason: str) -> None:
        """Answer every request being handled with an error saying ``reason`` and cancel it."""
        self._runner.cut(reason)

    def spawn(self, async_fn: Callable[..., Awaitable[Any]], *args: Any, name: str | None = None) -> None:
        """Run ``async_fn(*args)`` in the background, inside the session's nursery.

        It runs until it returns or the session ends, whichever comes first
        (then it is cancelled): nothing outlives the session.  An exception it
        raises is logged and does not end the session.

        Raises:
            ConnectionClosed: the session has ended.
        """
        nursery = self._tasks
        if nursery is None or self.core.closed or not spawn_guarded(nursery, async_fn, args, name):
            raise ConnectionClosed(self._ending.reason)

    async def aclose(self) -> None:
        """End the session: stop reading, cancel handlers, fail pending requests,
        flush what is queued (bounded by ``close_grace``) and close the channel.
        Waits until all of that is done."""
        self._close("the session was closed")
        await self.closed.wait()


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
            once the input ends; default 2 over stdio, 0 elsewhere),
            ``reader_relay`` (run a request read last in the reader's own task,
            stepping its handler by hand through trio's private protocol: less
            CPU per call on stdio, off by default; docs/engine.md).

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
                session._close("the session was closed")
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
