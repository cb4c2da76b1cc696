"""Every use of hypercorn's private API, in one place (``hypercorn>=0.17,<0.19`` in
pyproject.toml; tests/transports/http/test_compat_hypercorn.py exercises each against the installed
hypercorn and fails loudly when it changes shape).

The hypercorn door (:func:`.asgi.serve_hypercorn`) runs hypercorn's trio connection server
(``hypercorn.trio.tcp_server.TCPServer``) with four changes, each measured and each standing for
behaviour hypercorn has in public but pays more for:

* :class:`IdleTimer`: hypercorn's idle timeout (its ``idle_task``, a task started anew after each
  request), as one task for the connection's life whose deadline moves;
* :func:`put_now` and :func:`next_message`: hypercorn's hand-over of a request's body to the app
  and the app's read of it (trio memory channels inside hypercorn), without a trip through the
  scheduler when the channel has room or a message;
* :func:`connection_server`: the connection server, telling the gate when a connection is busy
  (a request came whole; the app reads its end once the gate gives it a turn), writing a
  response at once when the socket takes it, and ending a connection whose write timed out;
* :func:`forget_connection`: an ended connection's reference cycles broken at once.

Private names used: ``TCPServer._read_data``, ``TCPServer._task_group`` (and its ``_nursery``
and ``spawn_app``), ``TCPServer._protocol``, ``TCPServer._initiate_server_close``,
``TCPServer.idle_task``, ``TCPServer.send_lock``; the ``__self__`` of the ``receive`` and ``put``
callables hypercorn hands out (bound methods of trio memory channels).
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, cast

import trio

from ._gate import ConnectionGate, TimedStream

__all__ = ["IdleTimer", "connection_server", "forget_connection", "next_message", "put_now"]


async def next_message(receive: Callable[[], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
    """The ASGI server's next message; one already queued on a trio memory channel
    (hypercorn's) is taken without a trip through the scheduler."""
    channel = getattr(receive, "__self__", None)
    if isinstance(channel, trio.MemoryReceiveChannel):
        try:
            return cast(dict[str, Any], channel.receive_nowait())
        except trio.WouldBlock:
            pass
    return await receive()


async def put_now(
    spawn_app: Callable[..., Awaitable[Any]], on_whole: Callable[[], Awaitable[None]] | None, *args: Any
) -> Any:
    """Hypercorn's ``spawn_app``, whose returned ``put`` (how the connection hands the
    app a request's body, end and disconnect) queues a message at once when the app's
    channel has room, as ``send`` would after a trip through the scheduler; and
    ``on_whole()`` is awaited before the body's end is handed over (the request is whole:
    the app reads it once that returns)."""
    put = await spawn_app(*args)
    channel = getattr(put, "__self__", None)
    if not isinstance(channel, trio.MemorySendChannel):
        return put

    async def put_now(message: Any) -> None:
        kind = message.get("type")
        if on_whole is not None and (
            kind == "http.request" and not message.get("more_body") or kind == "websocket.connect"
        ):
            await on_whole()  # (a whole request, or an upgrade to a WebSocket: busy from now on)
        try:
            channel.send_nowait(message)
        except trio.WouldBlock:
            await put(message)

    return put_now


class IdleTimer:
    """A hypercorn connection's idle timer (its ``SingleTask``), in one task for the
    connection's life.  Hypercorn starts a new task for it each time a request ends
    (``Nursery.start``, a few scheduler rounds) and cancels it when the next begins;
    here the task is started once and a request only moves its deadline.  As
    hypercorn's: the connection is closed once idle for ``keep_alive_timeout``, or
    once idle after the server began shutting down."""

    def __init__(self, server: Any) -> None:
        self._server = server
        self._scope: trio.CancelScope | None = None
        self._ended = False

    async def restart(self, task_group: Any, action: Callable[[], Awaitable[None]]) -> None:
        """The connection is idle (``action``, hypercorn's own timer, is not used)."""
        deadline = trio.current_time() + self._server.config.keep_alive_timeout
        if self._scope is None:
            self._scope = trio.CancelScope(deadline=deadline)
            task_group._nursery.start_soon(self._run, self._scope)
        else:
            self._scope.deadline = deadline

    async def stop(self) -> None:
        """A request is under way: no idle timeout until it ends."""
        if self._scope is not None:
            self._scope.deadline = math.inf

    def end(self) -> None:
        """The connection's reading ended (hypercorn's cancelled timer task: none is left)."""
        self._ended = True
        if self._scope is not None:
            self._scope.cancel()

    async def _run(self, scope: trio.CancelScope) -> None:
        server = self._server
        with scope:
            await server.context.terminated.wait()
            while not server.idle:  # (shutting down: a request under way ends first)
                await server.timed.changed.park()
        if not self._ended:
            with trio.CancelScope(shield=True):
                await server._initiate_server_close()


def forget_connection(server: Any) -> None:
    """Break the reference cycles of an ended hypercorn connection (its server, protocol wrapper
    and protocol point at each other through their send callbacks and task group), so that its
    objects are freed at once, not by the cyclic GC's full passes (which under a flood of
    connections grew long enough to delay every client)."""
    wrapper = getattr(server, "protocol", None)
    for part in (getattr(wrapper, "protocol", None), wrapper, server):
        if part is not None and hasattr(part, "__dict__"):
            vars(part).clear()


def connection_server(gate: ConnectionGate) -> type[Any]:
    """Hypercorn's trio connection server class with the changes above, telling ``gate`` how
    each connection stands: reading a body once a request head comes whole, busy once the
    request is whole, idle once it is answered (kept alive). An instance gets
    ``timed`` (the connection's :class:`TimedStream`), ``plain`` (False under TLS) and ``ended``
    (the cancel scope of its tasks) from its caller."""
    from hypercorn.events import Event, RawData, Updated
    from hypercorn.trio.tcp_server import TCPServer

    class Connection(TCPServer):
        """Hypercorn's connection server, telling when it is idle (no request under way),
        with one idle timer for the connection's life (see :class:`IdleTimer`)."""

        idle = True
        timed: TimedStream
        plain = True  # (False: TLS, whose writes go through its own stream)
        ended: trio.CancelScope  # (cancelled: the connection's tasks end)

        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.idle_task = cast(Any, IdleTimer(self))  # (hypercorn's restart and stop)

        async def _read_data(self) -> None:
            try:
                await super()._read_data()
            finally:
                cast(IdleTimer, self.idle_task).end()

        @property
        def protocol(self) -> Any:  # pyright: ignore[reportIncompatibleVariableOverride]
            return self._protocol

        @protocol.setter
        def protocol(self, protocol: Any) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
            # Set once the connection's task group exists: its requests' apps are handed
            # their messages without a trip through the scheduler each (see put_now).
            self._protocol = protocol
            group: Any = self._task_group
            group.spawn_app = partial(put_now, group.spawn_app, self.request_whole)

        async def request_whole(self) -> None:
            """The request under way is whole: its connection is busy answering it, once
            its turn comes (other addresses' requests first: see ConnectionGate)."""
            stream = self.timed.transport_stream
            gate.busy(stream)
            if not gate.take_turn(stream):
                await gate.turn(stream)

        async def protocol_send(self, event: Event) -> None:
            if isinstance(event, RawData) and self.plain and not self.send_lock.locked():
                # Written at once when the socket takes it all, as TimedStream.send_all would,
                # without the send lock's trip through the scheduler: no other send can come
                # in between.  (h11's end of a sized body is empty: nothing to write.)
                view = memoryview(event.data)
                sent = self.timed.write_some(view)
                if sent == view.nbytes and (sent or not self.timed.closed):
                    return
                event = RawData(data=cast(bytes, view[sent:]))  # (the rest, not copied)
            await super().protocol_send(event)
            if self.timed.closed and isinstance(event, RawData):  # the write timed out here:
                self.ended.cancel()  # the connection ends now, its app's send with it
                await trio.lowlevel.checkpoint()
            if isinstance(event, Updated):
                self.idle = event.idle
                if event.idle:  # answered, kept alive
                    gate.idle(self.timed.transport_stream)
                else:  # a request head came whole: its body comes next
                    gate.reading(self.timed.transport_stream, self.timed)
                self.timed.changed.unpark_all()

    return Connection
