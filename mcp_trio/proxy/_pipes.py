"""Pipes held by OS threads, for the stdio relay of a proxy (:mod:`._relay`): what a thread
reads is offered to the relay first, and what the relay does not take is handed to trio as
the frames of an ordinary channel; what is written, by a thread or by trio, goes out whole,
one frame after another.

Rules:

* **One reading thread per input pipe**, blocking in ``os.read``.  It splits the bytes into
  lines as the stdio transport does (:class:`~mcp_trio.transports.stdio.LineFramer`, with its
  size limit), offers each frame to ``take`` (the relay), and queues the rest for trio.  The
  queue is bounded: when trio does not take the frames, the thread stops reading.  At the end
  of the input (or a read error) it ends the channel's input, calls ``on_end``, and closes the
  descriptor it read (no other thread ever closes it: a descriptor closed under a blocked read
  could be reused by another file).
* **One lock per output pipe.**  A frame is written whole under it, by a relay thread (a
  blocking write) or by trio.  Trio never blocks on it: it writes in its own thread only when
  the lock is free and the pipe has room for the whole frame (at most ``PIPE_BUF`` bytes,
  which a pipe takes at once), else it hands the write to a worker thread.
* A pipe whose reader has gone is broken: every later write fails at once (False, or
  :class:`trio.BrokenResourceError` for trio's).
"""

from __future__ import annotations

import logging
import os
import select
import stat
import threading
from collections import deque
from collections.abc import Awaitable, Callable

import trio

from ..transports._base import ChannelTraits, Frame
from ..transports.stdio import LineFramer

__all__ = ["InPipe", "OutPipe", "PipeChannel"]

log = logging.getLogger("mcp_trio.proxy")

_READ_SIZE = 65536
#: Frames a reading thread may queue for trio before it stops reading.
QUEUED = 256


class OutPipe:
    """An output pipe written whole frame by whole frame, by threads and by trio (it owns ``fd``)."""

    __slots__ = ("_fd", "_lock", "_atomic", "_poll", "broken")

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, True)
        self._fd = fd
        self._lock = threading.Lock()
        # (a pipe takes at most PIPE_BUF bytes at once when poll says it has room)
        self._atomic = select.PIPE_BUF if stat.S_ISFIFO(os.fstat(fd).st_mode) else 0
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)
        #: The reader of the pipe has gone (or it was closed): nothing more is written.
        self.broken = False

    def write(self, data: bytes) -> bool:
        """Write ``data`` whole, waiting for room (from a thread); False: the pipe is broken."""
        with self._lock:
            return self._write(data)

    def _write(self, data: bytes) -> bool:
        if self.broken:
            return False
        try:
            sent = os.write(self._fd, data)
            if sent < len(data):  # (a pipe writes all of a blocking write; other files may not)
                with memoryview(data) as view:
                    while sent < len(view):
                        sent += os.write(self._fd, view[sent:])
        except OSError:
            self.broken = True
            return False
        return True

    def write_now(self, data: bytes) -> bool | None:
        """Write ``data`` now if that cannot wait, from any thread (None: it might, and nothing
        was written; False: the pipe is broken)."""
        if len(data) > self._atomic or not self._lock.acquire(blocking=False):
            return None
        try:
            if self.broken:
                return False
            events = self._poll.poll(0)
            if not events or not events[0][1] & select.POLLOUT:
                return None
            return self._write(data)
        finally:
            self._lock.release()

    async def send(self, data: bytes) -> None:
        """Write ``data`` whole from trio, never blocking its thread.

        Raises:
            trio.BrokenResourceError: the pipe is broken.
        """
        written = self.write_now(data)
        if written is None:
            written = await trio.to_thread.run_sync(self.write, data, abandon_on_cancel=True)
        if not written:
            raise trio.BrokenResourceError("the pipe is closed: its reader has gone")

    def close(self) -> None:
        """Close the pipe, after the write under way (from a thread)."""
        with self._lock:
            self._close()

    def close_now(self) -> bool:
        """Close the pipe if no write is under way (False: one is, nothing was done)."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._close()
        finally:
            self._lock.release()
        return True

    def _close(self) -> None:
        if self._fd >= 0:
            self.broken = True
            os.close(self._fd)
            self._fd = -1


class _Inbox:
    """The frames a reading thread queues for trio (bounded: the thread waits for room)."""

    __slots__ = ("_frames", "_room", "_token", "_woken", "_ended", "_closed")

    def __init__(self, token: trio.lowlevel.TrioToken) -> None:
        self._frames: deque[Frame] = deque()
        self._room = threading.Semaphore(QUEUED)
        self._token = token
        self._woken: trio.Event | None = None
        self._ended = False
        self._closed = False

    def put(self, frame: Frame) -> bool:
        """Queue ``frame`` (from the thread; False: trio has gone, read no more)."""
        self._room.acquire()
        if self._closed:
            self._room.release()
            return True  # (no one takes it any more: dropped, as a closed channel drops)
        self._frames.append(frame)
        return self._wake()

    def end(self) -> None:
        self._ended = True
        self._wake()

    def _wake(self) -> bool:
        try:
            self._token.run_sync_soon(self._set)
        except trio.RunFinishedError:
            return False
        return True

    def _set(self) -> None:
        woken = self._woken
        if woken is not None:
            woken.set()

    async def get(self) -> Frame:
        while not self._frames:
            if self._ended:
                raise trio.EndOfChannel
            self._woken = trio.Event()
            await self._woken.wait()
        frame = self._frames.popleft()
        self._room.release()
        return frame

    def close(self) -> None:
        """No more frames are taken: the thread drops what it reads from now on."""
        self._closed = True
        self._frames.clear()
        self._room.release(QUEUED)


class InPipe:
    """An input pipe read by a thread of its own (it owns ``fd`` and closes it at the end)."""

    __slots__ = ("_fd", "_framer", "_take", "_on_end", "inbox", "thread")

    def __init__(
        self,
        fd: int,
        max_message_size: int,
        take: Callable[[Frame], bool],
        on_end: Callable[[], None],
        name: str,
    ) -> None:
        os.set_blocking(fd, True)
        self._fd = fd
        self._framer = LineFramer(max_message_size)
        self._take = take  # (True: the relay took the frame; called in the thread)
        self._on_end = on_end
        self.inbox = _Inbox(trio.lowlevel.current_trio_token())
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        take, framer, inbox = self._take, self._framer, self.inbox
        try:
            while data := os.read(self._fd, _READ_SIZE):
                for frame in framer.feed(data):
                    try:
                        if frame.error is None and take(frame):
                            continue
                    except Exception:  # (a fault of the relay must not end the reading)
                        log.exception("proxy: the stdio relay failed on a frame; it goes to the session")
                    if not inbox.put(frame):
                        return
        except OSError as exc:
            log.debug("proxy: reading a pipe failed: %s", exc)
        finally:
            inbox.end()
            try:
                self._on_end()
            finally:
                os.close(self._fd)


class PipeChannel(trio.abc.Channel[Frame], ChannelTraits):
    """The frames of an :class:`InPipe` that the relay did not take, and an :class:`OutPipe`
    for trio's own writes: the channel of a session sharing its pipes with the relay."""

    #: (stdio: requests already read are answered after the input ends)
    output_outlives_input = True

    def __init__(self, reading: InPipe, out: OutPipe, on_close: Callable[[], Awaitable[None]]) -> None:
        self._in = reading
        self._out = out
        self._on_close = on_close
        self._closed = False

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        return await self._in.inbox.get()

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        await self._out.send(value.data + b"\n")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._in.inbox.close()
        await self._on_close()
