"""The session's output: the outbox and the one task that writes it to the channel.

Rules:

* The writer task is the only task that waits on the channel's ``send``; it starts with the
  first frame queued (an idle session of a transport that takes frames without waiting never
  needs it) and hands a transport that writes several messages at once (``send_many``) every
  frame already queued, up to ``_WRITE_BATCH``: one system call per burst.
* A frame written around it (:meth:`Writer.write_alone`, through the transport's
  ``send_nowait``) is one all-or-nothing write made only while the writer is parked on an
  empty outbox, so nothing overtakes a queued frame.
* The writer runs in a shielded scope: it outlives the cancellation of the session's other
  tasks and sends what is queued until the outbox closes, within the deadline the session
  sets as it stops (``close_grace``).
* A write that finds the connection broken ends the session (the ``on_broken`` callback).
"""

from __future__ import annotations

from collections.abc import Callable

import trio

from .._exceptions import ConnectionClosed
from ..transports import _base as transport
from ..transports._base import Frame, MessageChannel
from ._common import Ending, _ended

__all__ = ["Writer"]

_WRITE_BATCH = 64  # frames the writer hands to a transport's send_many() at once
_WRITER_NAME = "mcp_trio._engine._writer.Writer.run"  # the writer task's name


class Writer:
    """The outbox of one session and its writer task (see the module's rules)."""

    __slots__ = (
        "channel",
        "ending",
        "tasks",
        "on_broken",
        "size",
        "idle",
        "closed",
        "scope",
        "_send",
        "_nowait",
    )

    def __init__(self, channel: MessageChannel, ending: Ending, size: int) -> None:
        self.channel = channel
        self.ending = ending
        #: The session's nursery, where the writer task starts (set as the session starts).
        self.tasks: trio.Nursery | None = None
        #: Called (from the writer task) when a write finds the connection broken.
        self.on_broken: Callable[[], None] | None = None
        self.size = size
        # Nothing is queued and the writer is not writing: set by the writer as it parks on
        # an empty outbox, cleared by it and by every queueing.
        self.idle = True
        self.closed = False  # no more frames may be queued
        # Shielded: see the module's rules; the session sets its deadline as it stops.
        self.scope = trio.CancelScope(shield=True)
        self._send: trio.MemorySendChannel[Frame] | None = None  # made with the writer task
        # A transport that writes a whole message at once (stdio): see write_alone.
        self._nowait = channel.send_nowait if isinstance(channel, transport.DirectOutput) else None

    def queued(self) -> int:
        """Frames waiting in the outbox."""
        return 0 if self._send is None else self._send.statistics().current_buffer_used

    async def put(self, frame: Frame) -> None:
        """Queue ``frame``, waiting for room in the outbox.

        Raises:
            ConnectionClosed: the session has ended.
        """
        self.idle = False  # the frame may be handed to the writer before it runs
        try:
            await (self._send or self._start()).send(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ConnectionClosed(self.ending.reason) from None

    def queue_nowait(self, frame: Frame) -> None:
        """Queue ``frame`` without waiting (``trio.WouldBlock``: the outbox is full)."""
        self.idle = False
        (self._send or self._start()).send_nowait(frame)

    def write_alone(self, frame: Frame) -> bool:
        """Hand ``frame`` to the transport's ``send_nowait`` when nothing is queued before it
        and the writer is not writing; False: nothing was written, queue it."""
        nowait = self._nowait
        if nowait is None or not self.idle:
            return False
        try:
            nowait(frame)
        except (trio.WouldBlock, trio.BrokenResourceError, trio.ClosedResourceError):
            return False  # the writer sends it, or finds the broken pipe and ends the session
        return True

    def close(self) -> None:
        """No more frames: the writer sends what is queued, then ends."""
        self.closed = True
        if self._send is not None:
            self._send.close()

    def _start(self) -> trio.MemorySendChannel[Frame]:
        """Make the outbox and start the writer task (on the first frame queued)."""
        if self.closed or self.tasks is None:
            raise trio.ClosedResourceError(self.ending.reason)
        self._send, outbox = trio.open_memory_channel[Frame](self.size)
        self.tasks.start_soon(self.run, outbox, name=_WRITER_NAME)
        return self._send

    async def run(self, outbox: trio.MemoryReceiveChannel[Frame]) -> None:
        """The writer task: ``outbox`` to the channel until the outbox closes."""
        channel = self.channel
        # A transport that can write several messages at once (stdio) gets every frame
        # already queued in one call: one system call per burst.
        send_many = channel.send_many if isinstance(channel, transport.BatchedOutput) else None
        with self.scope:
            try:
                while True:
                    try:
                        frame = outbox.receive_nowait()
                    except trio.WouldBlock:
                        self.idle = True  # parked on an empty outbox
                        try:
                            frame = await outbox.receive()
                        except trio.EndOfChannel:
                            return
                        finally:
                            self.idle = False
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
                self.ending.reason = _ended("the connection to the peer broke", channel)
                if self.on_broken is not None:
                    self.on_broken()
