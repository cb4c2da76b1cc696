"""stdio transport: newline-delimited JSON over byte streams.

Framing rules:

* One message per line, UTF-8, terminated by ``\\n``; a ``\\r`` before the
  ``\\n`` is tolerated and removed; empty lines are skipped.
* The byte stream may be split anywhere: a message is delivered only when its
  newline has arrived.
* A line longer than ``max_message_size`` bytes is discarded up to its
  newline and delivered as a :class:`Frame` whose ``error`` says so, so the
  session can answer it; reading goes on with the next line.
* Invalid UTF-8 or JSON is the session's business (it answers -32700).
"""

from __future__ import annotations

import errno
import logging
import os
import select
import signal
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import IO, Any

import trio

from ._base import BatchedOutput, BufferedInput, ChannelTraits, DirectOutput, Frame

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "LineFramer",
    "StreamChannel",
    "open_stdio_client",
    "open_stdio_server_channel",
    "stdio_server_pipes",
]

log = logging.getLogger("mcp_trio.stdio")

#: Default limit on one incoming message, in bytes.
DEFAULT_MAX_MESSAGE_SIZE = 32 * 1024 * 1024
_READ_SIZE = 65536
_SMALL_WRITE = 65536


class LineFramer:
    """Sans-IO line splitter: feed bytes, get whole lines (as frames).

    Args:
        max_message_size: Longest line accepted, in bytes (without the newline).
    """

    def __init__(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        if max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        self.max_message_size = max_message_size
        self._buf = bytearray()
        self._scan_from = 0
        self._discarding = False
        self._discarded = 0

    def feed(self, data: bytes | bytearray) -> list[Frame]:
        """Add bytes; return every frame they complete, in order."""
        if data and not self._buf and not self._discarding and data.find(b"\n") == len(data) - 1:
            # The common case, one whole line and nothing held back: no copy
            # through the buffer.
            end = len(data) - 1
            if end and data[end - 1] == 0x0D:
                end -= 1
            if end <= self.max_message_size:
                line = data[:end]
                return [Frame(bytes(line))] if line and not line.isspace() else []
        frames: list[Frame] = []
        buf = self._buf
        if self._discarding:
            nl = data.find(b"\n")
            if nl < 0:
                self._discarded += len(data)
                return frames
            self._discarded += nl
            frames.append(self._too_large())
            data = data[nl + 1 :]
        buf += data
        start = 0
        scan = self._scan_from
        limit = self.max_message_size
        while True:
            nl = buf.find(b"\n", scan)
            if nl < 0:
                break
            end = nl
            if end > start and buf[end - 1] == 0x0D:
                end -= 1
            if end - start > limit:
                self._discarded = end - start
                frames.append(self._too_large())
            elif end > start:
                line = bytes(buf[start:end])
                if not line.isspace():
                    frames.append(Frame(line))
            start = nl + 1
            scan = start
        if start:
            del buf[:start]
        self._scan_from = len(buf)
        if len(buf) > limit + 1:
            # No newline within the limit: drop what we have and skip to the next newline.
            self._discarding = True
            self._discarded = len(buf)
            buf.clear()
            self._scan_from = 0
        return frames

    def _too_large(self) -> Frame:
        size = self._discarded
        self._discarding = False
        self._discarded = 0
        return Frame(
            b"",
            error=f"message too large: {size} bytes or more exceeds the limit of "
            f"{self.max_message_size} bytes",
        )

    @property
    def pending(self) -> int:
        """Bytes of an incomplete line held back."""
        return len(self._buf)


class StreamChannel(trio.abc.Channel[Frame], ChannelTraits, DirectOutput, BatchedOutput, BufferedInput):
    """A message channel over a receive stream and a send stream.

    Args:
        receive_stream: Where incoming bytes come from.
        send_stream: Where outgoing messages go (one ``send_all`` per message,
            or per burst with :meth:`send_many`).
        max_message_size: Limit for one incoming message, in bytes.
    """

    #: The input may end (stdin closed) while the peer still reads what we
    #: write: a session answers what it already read (``eof_grace``).
    output_outlives_input = True

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        self._send_all_nowait = getattr(send_stream, "send_all_nowait", None)
        self._framer = LineFramer(max_message_size)
        self._ready: list[Frame] = []
        self._eof = False
        self._closed = False

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        while not self._ready:
            if self._eof:
                raise trio.EndOfChannel
            data = await self._receive_stream.receive_some(_READ_SIZE)
            if not data:
                self._eof = True
                if self._framer.pending:
                    log.info("peer closed mid-message; %d bytes discarded", self._framer.pending)
                continue
            frames = self._framer.feed(data)
            frames.reverse()
            self._ready = frames
        return self._ready.pop()

    @property
    def max_message_size(self) -> int:
        """The limit on one incoming message, in bytes."""
        return self._framer.max_message_size

    def pipes(self) -> tuple[int, int] | None:
        """The file descriptors the channel reads and writes, ``(input, output)``, when both
        streams are descriptors of this process (trio's ``FdStream``: a subprocess's pipes, or
        the stdio server's), and neither is closed; else None."""
        streams = (self._receive_stream, self._send_stream)
        fds = [s.fileno() if isinstance(s, trio.lowlevel.FdStream | _PipeStream) else -1 for s in streams]
        return (fds[0], fds[1]) if not self._closed and min(fds) >= 0 else None

    def buffered(self) -> int:
        """How many messages were read and not yet taken by :meth:`receive`
        (0: the next one must be read from the stream)."""
        return len(self._ready)

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        data = value.data
        if len(data) < _SMALL_WRITE:
            await self._send_stream.send_all(data + b"\n")
        else:
            await self._send_stream.send_all(data)
            await self._send_stream.send_all(b"\n")

    def send_nowait(self, frame: Frame) -> None:
        """Write one message now, whole, without waiting, or nothing at all.

        For a caller that knows no other write is in progress or queued (the
        session engine, when its writer is idle) and would rather not hand
        the message to the writer task.  Possible only on a send stream with
        an atomic ``send_all_nowait`` (the stdio server's pipes) and for a
        message that fits in one atomic write.

        Raises:
            trio.WouldBlock: it cannot be written at once; nothing was written.
            trio.ClosedResourceError: the channel was closed.
            trio.BrokenResourceError: the peer is gone.
        """
        if self._closed:
            raise trio.ClosedResourceError
        send_all_nowait = self._send_all_nowait
        if send_all_nowait is None:
            raise trio.WouldBlock
        send_all_nowait(frame.data + b"\n")

    async def send_many(self, frames: Sequence[Frame]) -> None:
        """Send several messages, in order, with as few writes as possible.

        Same framing as :meth:`send` (one line each); small messages are
        joined into one ``send_all``, so a burst of answers costs one system
        call instead of one per message.
        """
        if self._closed:
            raise trio.ClosedResourceError
        buffer = bytearray()
        for value in frames:
            data = value.data
            if len(data) >= _SMALL_WRITE:
                if buffer:
                    await self._send_stream.send_all(buffer)
                    buffer = bytearray()
                await self.send(value)
                continue
            buffer += data
            buffer += b"\n"
        if buffer:
            await self._send_stream.send_all(buffer)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._send_stream.aclose()
        finally:
            await self._receive_stream.aclose()


class _PipeStream(trio.abc.Stream):
    """One of the stdio server's pipes: trio's ``FdStream`` with fewer trips through the scheduler.

    ``FdStream`` yields to the scheduler before every read and write.  Here
    each operation tries first: a read that must wait for data goes straight
    to the wait (which is its checkpoint), and a write goes out at once and
    yields afterwards, without a cancel point, so a message that was written
    is never reported as cancelled.  After a read that emptied the pipe (it
    returned less than asked) the next one waits first instead of trying: a
    peer that waits for our answer has sent nothing more, and the try would
    cost a system call that fails.  Otherwise the same checkpoints and
    errors as ``FdStream``, which owns the descriptor: it puts it in
    non-blocking mode (shared with any other process using the same pipe)
    and restores the previous mode when closed.  One task reads and one
    task writes at a time (the engine's reader and writer).
    """

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(fd)
        # POSIX: a non-blocking write of at most PIPE_BUF bytes to a pipe is
        # atomic, all of it or EAGAIN; other files (a terminal, a socket, a
        # file) give no such promise, so send_all_nowait never writes to them.
        self._atomic_limit = select.PIPE_BUF if stat.S_ISFIFO(os.fstat(fd).st_mode) else 0
        self._drained = False  # the last read returned less than it asked for

    def _fd(self) -> int:
        fd = self._stream.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("the pipe was already closed")
        return fd

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        size = _READ_SIZE if max_bytes is None else max_bytes
        waited = self._drained
        if waited:
            await trio.lowlevel.wait_readable(self._fd())
        else:
            await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            fd = self._fd()
            try:
                data = os.read(fd, size)
            except BlockingIOError:
                waited = True
                await trio.lowlevel.wait_readable(fd)
                continue
            except OSError as exc:
                raise _pipe_error(exc) from None
            self._drained = len(data) < size
            if not waited:
                await trio.lowlevel.cancel_shielded_checkpoint()
            return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()
        fd = self._fd()
        waited = False
        with memoryview(data) as view:
            sent = 0
            while sent < len(view):
                try:
                    with view[sent:] as remaining:
                        sent += os.write(fd, remaining)
                except BlockingIOError:
                    waited = True
                    await trio.lowlevel.wait_writable(fd)
                    fd = self._fd()
                except OSError as exc:
                    raise _pipe_error(exc) from None
        if not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()

    def send_all_nowait(self, data: bytes) -> None:
        """Write ``data`` whole with one atomic non-blocking write, or nothing.

        Only for a pipe and at most ``PIPE_BUF`` bytes, where POSIX makes the
        write all-or-nothing, so the stream never holds half a message; the
        caller must know no ``send_all`` is in progress.  No checkpoint.

        Raises:
            trio.WouldBlock: not a pipe, too long, or the pipe is full;
                nothing was written.
            trio.BrokenResourceError: the reader end is closed.
            trio.ClosedResourceError: this stream was closed.
        """
        if len(data) > self._atomic_limit:
            raise trio.WouldBlock
        fd = self._fd()
        try:
            sent = os.write(fd, data)
        except BlockingIOError:
            raise trio.WouldBlock from None
        except OSError as exc:
            raise _pipe_error(exc) from None
        if sent != len(data):  # POSIX excludes it for pipes; the stream would be corrupt
            raise trio.BrokenResourceError(f"short write to a pipe: {sent} of {len(data)} bytes")

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    def fileno(self) -> int:
        """The descriptor (-1 once closed)."""
        return self._stream.fileno()

    async def aclose(self) -> None:
        await self._stream.aclose()


def _pipe_error(exc: OSError) -> trio.BrokenResourceError | trio.ClosedResourceError:
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("the pipe was already closed")
    return trio.BrokenResourceError(str(exc))


@contextmanager
def stdio_server_pipes(*, protect_stdout: bool = True) -> Iterator[tuple[int, int]]:
    """Descriptors of the server side of stdio, ``(stdin, stdout)``: duplicates the caller
    owns (and closes).

    Args:
        protect_stdout: While the block runs, point file descriptor 1 and ``sys.stdout`` at
            stderr, so a stray ``print`` cannot corrupt the protocol stream (messages still go
            to the real stdout, through the duplicate).
    """
    if sys.platform == "win32":  # pragma: no cover - FdStream is POSIX only
        raise RuntimeError("the stdio server transport needs a POSIX system")
    sys.stdout.flush()
    in_fd, out_fd = os.dup(0), os.dup(1)
    saved_fd: int | None = None
    saved_stdout = sys.stdout
    if protect_stdout:
        saved_fd = os.dup(1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
    try:
        yield in_fd, out_fd
    finally:
        if saved_fd is not None:
            sys.stdout = saved_stdout
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


@asynccontextmanager
async def open_stdio_server_channel(
    *,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    protect_stdout: bool = True,
) -> AsyncIterator[StreamChannel]:
    """The server side of stdio: read stdin, write stdout.

    Args:
        max_message_size: Limit for one incoming message, in bytes.
        protect_stdout: While the channel is open, point file descriptor 1 and
            ``sys.stdout`` at stderr, so a stray ``print`` cannot corrupt the
            protocol stream (messages still go to the real stdout).
    """
    with stdio_server_pipes(protect_stdout=protect_stdout) as (in_fd, out_fd):
        channel = StreamChannel(_PipeStream(in_fd), _PipeStream(out_fd), max_message_size=max_message_size)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.aclose()


class _ProcessGroup:
    """The process group a stdio server leads (POSIX: it started a session of its own), with
    whatever it started in it."""

    def __init__(self, pid: int) -> None:
        self.pgid = pid
        try:
            self.own = sys.platform != "win32" and os.getpgid(pid) == pid
        except OSError:  # (it has exited and was reaped: its pgid is its pid, as it started)
            self.own = sys.platform != "win32"

    def alive(self) -> bool:
        """Whether any process of the group is left and running (the server itself, or what
        it started; one that has exited but whose new parent has not reaped it yet is not)."""
        if not self.own:
            return False
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # (a member changed user: it is there)
            return True
        return _running_in_group(self.pgid)

    def end(self, process: trio.Process, signum: int) -> None:
        """Send ``signum`` to the whole group (to the server alone without one)."""
        if not self.own:
            process.send_signal(signum)
            return
        try:
            os.killpg(self.pgid, signum)
        except ProcessLookupError:
            pass

    async def gone(self, process: trio.Process) -> None:
        """Wait until the server has exited and the group is empty."""
        await process.wait()
        while self.alive():  # (not our children: nothing tells when they are gone)  # noqa: ASYNC110
            await trio.sleep(0.02)


def _running_in_group(pgid: int) -> bool:
    """Whether a process of group ``pgid`` is running, zombies not counted (Linux: /proc; elsewhere
    every member counts)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return True
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                fields = stat_file.read().rsplit(b")", 1)[1].split()
        except OSError:  # (gone meanwhile)
            continue
        if int(fields[2]) == pgid and fields[0] != b"Z":
            return True
    return False


class StdioProcess:
    """A server subprocess and the channel to it (see :func:`open_stdio_client`)."""

    def __init__(self, process: trio.Process, channel: StreamChannel) -> None:
        self.process = process
        self.channel = channel

    @property
    def stderr(self) -> trio.abc.ReceiveStream | None:
        """The server's stderr stream when it was captured (``stderr=subprocess.PIPE``)."""
        return self.process.stderr


@asynccontextmanager
async def open_stdio_client(
    command: str | Sequence[str],
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    stderr: int | IO[Any] | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    shutdown_grace: float = 2.0,
) -> AsyncIterator[StdioProcess]:
    """Launch an MCP server as a subprocess and talk to it over its stdin/stdout.

    Args:
        command: The program (a string) or a full argv list.
        args: Extra arguments appended to ``command``.
        env: The environment (default: inherit ours).
        cwd: The working directory.
        stderr: Where the server's stderr goes: ``None`` passes it through,
            ``subprocess.PIPE`` captures it (read ``StdioProcess.stderr``
            inside the block: it is closed on exit),
            ``subprocess.DEVNULL`` drops it, or a file.
        max_message_size: Limit for one incoming message, in bytes.
        shutdown_grace: Seconds to wait at each step of shutdown.

    Shutdown (on leaving the block): close the server's stdin, wait up to
    ``shutdown_grace`` for it to exit, then SIGTERM, wait again, then SIGKILL.
    On POSIX the server starts in a session (and process group) of its own,
    and what it started is ended with it: a server launched through ``npx``,
    ``uvx`` or ``sh -c`` leaves no process behind (holding our stderr open),
    even when the launcher itself exits first. Ctrl-C in a terminal reaches
    the server through this shutdown, not from the terminal directly.
    """
    argv = [command] if isinstance(command, str) else list(command)
    argv.extend(args)
    process = await trio.lowlevel.open_process(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=stderr,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=sys.platform != "win32",
    )
    assert process.stdin is not None and process.stdout is not None
    channel = StreamChannel(process.stdout, process.stdin, max_message_size=max_message_size)
    try:
        yield StdioProcess(process, channel)
    finally:
        with trio.CancelScope(shield=True):
            await _shutdown(process, channel, shutdown_grace)


async def _shutdown(process: trio.Process, channel: StreamChannel, grace: float) -> None:
    try:
        assert process.stdin is not None
        await process.stdin.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    with trio.move_on_after(grace):
        await process.wait()
    group = _ProcessGroup(process.pid)
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if process.returncode is None or group.alive():
            group.end(process, signum)
            with trio.move_on_after(grace):
                await group.gone(process)
    await process.wait()  # (killed: it is reaped)
    await channel.aclose()
    if process.stderr is not None:
        await process.stderr.aclose()
