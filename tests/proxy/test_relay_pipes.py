"""The pipes of the stdio relay (mcp_trio/proxy/_pipes.py): a reading thread queues at most
``QUEUED`` frames for trio and then stops reading (nothing lost, in order); trio's writes never
wait on the lock a relay thread holds, nor interleave with its frames; a broken pipe fails at
once.  Real pipes (os.pipe)."""

from __future__ import annotations

import os
import threading

import pytest
import trio

from mcp_trio.proxy._pipes import QUEUED, InPipe, OutPipe, PipeChannel
from mcp_trio.transports import Frame
from mcp_trio.transports.stdio import StreamChannel, open_stdio_client

pytestmark = pytest.mark.trio


async def test_a_reading_thread_stops_at_the_bound_and_loses_nothing() -> None:
    read_fd, write_fd = os.pipe()
    offered: list[bytes] = []

    def take(frame: Frame) -> bool:
        offered.append(frame.data)
        return frame.data.startswith(b"taken")

    reading = InPipe(read_fd, 1 << 20, take, lambda: None, "test reader")
    other_end, out_fd = os.pipe()
    out = OutPipe(out_fd)
    channel = PipeChannel(reading, out, trio.lowlevel.checkpoint)
    count = QUEUED * 3
    lines = b"".join(b"frame %d\ntaken %d\n" % (n, n) for n in range(count))
    writer = threading.Thread(target=lambda: (os.write(write_fd, lines), os.close(write_fd)))
    reading.start()
    writer.start()
    with trio.fail_after(5):
        while len(offered) < 2 * QUEUED:
            await trio.sleep(0.01)
    await trio.sleep(0.1)
    assert len(offered) <= 2 * QUEUED + 2  # (it stopped reading: trio took nothing)
    got = []
    with trio.fail_after(10):
        while True:
            try:
                got.append((await channel.receive()).data)
            except trio.EndOfChannel:
                break
    assert got == [b"frame %d" % n for n in range(count)]
    writer.join()
    reading.thread.join(5)
    assert not reading.thread.is_alive()
    await channel.aclose()
    out.close()
    os.close(other_end)


async def test_trios_writes_do_not_wait_on_a_relay_thread_nor_interleave() -> None:
    read_fd, write_fd = os.pipe()
    out = OutPipe(write_fd)
    big = b"x" * 200_000 + b"\n"  # (more than the pipe holds: the thread's write waits for a reader)
    relay = threading.Thread(target=out.write, args=(big,))
    relay.start()
    await trio.sleep(0.1)
    sending_done = trio.Event()

    async def send() -> None:
        await out.send(b"from trio\n")  # (the lock is held: written from a worker thread)
        sending_done.set()

    received = bytearray()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(send)
        await trio.sleep(0.1)
        assert not sending_done.is_set()  # (trio goes on meanwhile: this test runs)
        os.set_blocking(read_fd, False)
        with trio.fail_after(10):
            while not received.endswith(b"from trio\n"):
                try:
                    received += os.read(read_fd, 1 << 16)
                except BlockingIOError:
                    await trio.sleep(0.005)
    relay.join()
    assert bytes(received) == big + b"from trio\n"
    os.close(read_fd)
    with pytest.raises(trio.BrokenResourceError):
        await out.send(b"to no one\n")
    assert out.write(b"to no one\n") is False
    out.close()


async def test_a_subprocess_channel_tells_its_pipes() -> None:
    async with open_stdio_client(["cat"]) as process:
        fds = process.channel.pipes()
        assert fds is not None and all(os.fstat(fd) for fd in fds)
    assert process.channel.pipes() is None  # (closed)
    receive, send = trio.testing.memory_stream_pair()
    assert StreamChannel(receive, send).pipes() is None


async def test_an_out_pipe_puts_the_blocking_mode_back_when_closed() -> None:
    read_fd, write_fd = os.pipe()
    assert os.get_blocking(write_fd)
    kept = os.dup(write_fd)  # (another holder of the same open file)
    out = OutPipe(write_fd)
    assert not os.get_blocking(kept)  # (non-blocking while the pipe is written)
    out.close()
    assert os.get_blocking(kept)
    os.close(kept)
    os.close(read_fd)
