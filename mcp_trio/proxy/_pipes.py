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
* **One lock per output pipe**, which is in non-blocking mode.  A frame is written whole under
  it, by a relay thread (waiting for room with poll) or by trio.  Trio never blocks on it: it
  writes in its own thread when the lock is free and the pipe takes some of the frame at once
  (the rest, if any, is written by a thread started for it, which releases the lock once the
  frame is whole), else it hands the write to a worker thread.  The relay's thread reading the
  client writes to the child the same way (:meth:`OutPipe.write_now`), so that a busy child
  never stops it.
* A pipe whose reader has gone is broken: every later write fails at once (False, or
  :class:`trio.BrokenResourceError` for trio's).
"""

from __future__ import annotations

import logging
import os
import select
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
    """An output pipe written whole frame by whole frame, by threads and by trio (it owns ``fd``,
    and puts it in non-blocking mode)."""

    __slots__ = ("_fd", "_was_blocking", "_lock", "_poll", "broken")

    def __init__(self, fd: int) -> None:
        self._was_blocking = os.get_blocking(fd)  # (put back when closed: the file may be shared)
        os.set_blocking(fd, False)
        self._fd = fd
        self._lock = threading.Lock()
        self._poll = select.poll()
        self._poll.register(fd, select.POLLOUT)
        #: The reader of the pipe has gone (or it was closed): nothing more is written.
        self.broken = False

    def write(self, data: bytes) -> bool:
        """Write ``data`` whole, waiting for room (from a thread); False: the pipe is broken."""
        with self._lock:
            return self._write_from(data, 0)

    def _write_from(self, data: bytes, sent: int) -> bool:
        """Write ``data[sent:]``, waiting for room (the lock held); False: the pipe is broken."""
        with memoryview(data) as view:
            while sent < len(view) and not self.broken:
                try:  # (the whole frame at once, as a pipe mostly takes it: no slice)
                    sent += os.write(self._fd, view[sent:] if sent else data)
                except BlockingIOError:
                    self._poll.poll()
                except OSError:
                    self.broken = True
        return not self.broken

    def write_now(self, data: bytes) -> bool | None:
        """Start writing ``data`` now if the pipe takes some of it at once, from any thread: the
        rest, if any, is written by a thread of its own, which holds the lock until the frame is
        whole.  None: the lock is held or the pipe is full, and nothing was written; False: the
        pipe is broken."""
        if not self._lock.acquire(blocking=False):
            return None
        finishing = False
        try:
            if self.broken:
                return False
            try:
                sent = os.write(self._fd, data)
            except BlockingIOError:
                return None
            except OSError:
                self.broken = True
                return False
            if sent < len(data):
                try:
                    threading.Thread(target=self._finish, args=(data, sent), daemon=True).start()
                    finishing = True
                except RuntimeError:  # (no thread to be had: finished here, waiting)
                    return self._write_from(data, sent)
            return True
        finally:
            if not finishing:
                self._lock.release()

    def _finish(self, data: bytes, sent: int) -> None:
        try:
            self._write_from(data, sent)
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
            _restore(self._fd, self._was_blocking)
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

    __slots__ = ("_fd", "_was_blocking", "_framer", "_take", "_on_end", "inbox", "thread")

    def __init__(
        self,
        fd: int,
        max_message_size: int,
        take: Callable[[Frame], bool],
        on_end: Callable[[], None],
        name: str,
    ) -> None:
        self._was_blocking = os.get_blocking(fd)
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
            while data := self._read():
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
                _restore(self._fd, self._was_blocking)
                os.close(self._fd)

    def _read(self) -> bytes:
        """The next bytes (b"": the end), waiting for them; in blocking mode, or not if another
        process sharing the file changed it."""
        while True:
            try:
                return os.read(self._fd, _READ_SIZE)
            except BlockingIOError:
                waiting = select.poll()
                waiting.register(self._fd, select.POLLIN)
                waiting.poll()


def _restore(fd: int, blocking: bool) -> None:
    try:
        os.set_blocking(fd, blocking)
    except OSError:
        pass


class PipeChannel(trio.abc.Channel[Frame], ChannelTraits):
    """The frames of an :class:`InPipe` that the relay did not take, and an :class:`OutPipe`
    for trio's own writes: the channel of a session sharing its pipes with the relay."""

    #: (stdio: requests already read are answered after the input ends)
    output_outlives_input = True
    counted_as = "stdio"

    def __init__(
        self,
        reading: InPipe,
        out: OutPipe,
        on_close: Callable[[], Awaitable[None]],
        on_send: Callable[[bytes], None] | None = None,
    ) -> None:
        self._in = reading
        self._out = out
        self._on_close = on_close
        self._on_send = on_send  # (told each frame trio sends, before it is written)
        self._closed = False

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        return await self._in.inbox.get()

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if self._on_send is not None:
            self._on_send(value.data)
        await self._out.send(value.data + b"\n")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._in.inbox.close()
        await self._on_close()
