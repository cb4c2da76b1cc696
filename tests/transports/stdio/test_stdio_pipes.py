"""The stdio server's pipe streams: the atomic ``send_all_nowait`` and the
read that waits first after emptying the pipe (real pipes, no mocks)."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio.transports._base import Frame
from mcp_trio.transports.stdio import LineFramer, StreamChannel, _PipeStream
from tests._support.paths import ROOT


def drain(fd: int) -> bytes:
    """Everything readable on the non-blocking ``fd`` now."""
    out = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return out
        if not chunk:
            return out
        out += chunk


@pytest.mark.parametrize(
    "line",
    [b"{}\n", b"\n", b"\r\n", b"  \t\n", b'{"a":1}\r\n', b"abc\n", b"abcd\n", b"abc\r\n", b"ab\rc\n"],
)
def test_framer_whole_line_shortcut_matches_the_general_path(line: bytes) -> None:
    # One whole line on an empty buffer takes a shortcut; the frames (and the
    # size limit of 3 bytes) must be those of feeding it byte by byte.
    def summary(frames: list[Frame]) -> list[tuple[bytes, bool]]:
        # (the size named in a too-large error is a lower bound that depends on chunking)
        return [(f.data, f.error is not None) for f in frames]

    whole = LineFramer(max_message_size=3).feed(line)
    bytewise = LineFramer(max_message_size=3)
    pieces = [f for i in range(len(line)) for f in bytewise.feed(line[i : i + 1])]
    assert summary(whole) == summary(pieces)


@pytest.fixture
def pipe() -> Any:
    r, w = os.pipe()
    os.set_blocking(r, False)
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


async def test_send_all_nowait_writes_a_whole_message(pipe: tuple[int, int]) -> None:
    r, w = pipe
    stream = _PipeStream(os.dup(w))
    try:
        stream.send_all_nowait(b'{"a":1}\n')
        line = b"x" * (select.PIPE_BUF - 1) + b"\n"  # exactly PIPE_BUF bytes
        stream.send_all_nowait(line)
        assert drain(r) == b'{"a":1}\n' + line
    finally:
        await stream.aclose()


async def test_send_all_nowait_refuses_what_might_be_split(pipe: tuple[int, int]) -> None:
    r, w = pipe
    stream = _PipeStream(os.dup(w))
    try:
        with pytest.raises(trio.WouldBlock):
            stream.send_all_nowait(b"x" * select.PIPE_BUF + b"\n")
        assert drain(r) == b""
        # A full pipe: refused whole, nothing written, the rest still intact.
        os.set_blocking(w, False)  # (FdStream already made the shared description non-blocking)
        filler = 0
        while True:
            try:
                filler += os.write(w, b"f" * 4096)
            except BlockingIOError:
                break
        with pytest.raises(trio.WouldBlock):
            stream.send_all_nowait(b'{"late":true}\n')
        assert drain(r) == b"f" * filler
        stream.send_all_nowait(b'{"late":true}\n')
        assert drain(r) == b'{"late":true}\n'
    finally:
        await stream.aclose()


async def test_send_all_nowait_errors(pipe: tuple[int, int]) -> None:
    r, w = pipe
    stream = _PipeStream(os.dup(w))
    os.close(r)
    with pytest.raises(trio.BrokenResourceError):
        stream.send_all_nowait(b"{}\n")
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        stream.send_all_nowait(b"{}\n")


async def test_send_all_nowait_only_on_pipes() -> None:
    # A socket gives no all-or-nothing promise: never written that way.
    a, b = socket.socketpair()
    with a, b:
        stream = _PipeStream(os.dup(a.fileno()))
        try:
            with pytest.raises(trio.WouldBlock):
                stream.send_all_nowait(b"{}\n")
            b.setblocking(False)
            with pytest.raises(BlockingIOError):
                b.recv(10)
        finally:
            await stream.aclose()


async def test_channel_send_nowait(pipe: tuple[int, int]) -> None:
    r, w = pipe
    out = _PipeStream(os.dup(w))
    left, right = trio.testing.memory_stream_pair()
    channel = StreamChannel(left, out)
    channel.send_nowait(Frame(b'{"id":1}'))
    assert drain(r) == b'{"id":1}\n'
    # Over a stream without the atomic write (here a memory stream): refused.
    other = StreamChannel(left, right)
    with pytest.raises(trio.WouldBlock):
        other.send_nowait(Frame(b"{}"))
    await channel.aclose()
    with pytest.raises(trio.ClosedResourceError):
        channel.send_nowait(Frame(b"{}"))


async def test_read_after_emptying_the_pipe_waits_for_more(pipe: tuple[int, int]) -> None:
    r, w = pipe
    stream = _PipeStream(os.dup(r))
    try:
        os.write(w, b"one\ntw")
        assert await stream.receive_some(100) == b"one\ntw"  # short: the pipe is empty now
        got: list[bytes] = []

        async def read() -> None:
            got.append(await stream.receive_some(100))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            await trio.testing.wait_all_tasks_blocked()
            assert got == []  # waiting, not spinning
            os.write(w, b"o\n")
        assert got == [b"o\n"]
        # A full read (as much as asked) tries the next one at once.
        os.write(w, b"abcdef")
        assert await stream.receive_some(3) == b"abc"
        assert await stream.receive_some(3) == b"def"
        os.close(w)
        with trio.fail_after(5):
            assert await stream.receive_some(3) == b""
    finally:
        await stream.aclose()


async def test_waiting_read_is_cancellable(pipe: tuple[int, int]) -> None:
    r, w = pipe
    stream = _PipeStream(os.dup(r))
    try:
        os.write(w, b"x")
        assert await stream.receive_some(10) == b"x"
        with trio.move_on_after(0.05) as scope:
            await stream.receive_some(10)
        assert scope.cancelled_caught
        os.write(w, b"y")
        assert await stream.receive_some(10) == b"y"
    finally:
        await stream.aclose()


class LineReader:
    """Lines from a pipe, each within a deadline (a stuck server fails the test)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    def line(self, timeout: float = 10.0) -> bytes:
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            assert ready, "no answer in time"
            chunk = os.read(self.fd, 1 << 16)
            assert chunk, "the server closed its stdout"
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def test_calls_through_a_real_server_process() -> None:
    # The benchmark's echo server over real pipes: answers in order, whole,
    # for calls one at a time and for a burst of pipelined calls.
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    reader = LineReader(proc.stdout.fileno())

    def answer(i: int) -> bytes:
        return b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"t%d"}]}}' % (i, i)

    def call(i: int) -> bytes:
        return (
            b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
            b'"arguments":{"text":"t%d"}}}\n' % (i, i)
        )

    try:
        proc.stdin.write(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
            b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
        )
        assert b'"id":0' in reader.line(30)
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for i in range(1, 51):
            proc.stdin.write(call(i))
            assert reader.line() == answer(i)
        proc.stdin.write(b"".join(call(i) for i in range(100, 400)))
        got = sorted(reader.line() for _ in range(300))
        assert got == sorted(answer(i) for i in range(100, 400))
    finally:
        proc.stdin.close()
        try:
            proc.wait(10)
        finally:
            if proc.returncode is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
    assert proc.returncode == 0
