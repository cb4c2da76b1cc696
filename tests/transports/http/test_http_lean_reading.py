"""How the lean front door reads: its socket reader (``_gate.Receiver``: what
``receive_some`` returns, without the read that would fail after the socket was
emptied) and the clock that times its connections' reads (``_gate.ReadClock``)."""

from __future__ import annotations

import gc
import math
import os
import socket
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.testing

from mcp_trio.transports.http.doors import _gate


async def _pair() -> tuple[trio.SocketStream, socket.socket]:
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    return trio.SocketStream(trio.socket.from_stdlib_socket(ours)), theirs


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the outcome of every ``os.read`` the reader makes (-1: it failed, would block)."""
    calls: list[int] = []
    real = os.read

    def counting(fd: int, size: int) -> bytes:
        try:
            data = real(fd, size)
        except BlockingIOError:
            calls.append(-1)
            raise
        calls.append(len(data))
        return data

    monkeypatch.setattr(_gate.os, "read", counting)
    return calls


@asynccontextmanager
async def _receiving(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[_gate.Receiver, socket.socket, list[int]]]:
    """A Receiver on one end of a socket pair, the other end, and its reads' outcomes."""
    stream, theirs = await _pair()
    calls = _count_reads(monkeypatch)
    try:
        yield _gate.Receiver(stream), theirs, calls
    finally:
        theirs.close()
        await stream.aclose()


async def test_after_a_short_read_the_next_one_waits_for_data_first(monkeypatch: pytest.MonkeyPatch) -> None:
    async with _receiving(monkeypatch) as (receiver, theirs, calls):
        theirs.send(b"first")
        assert await receiver.receive(1024) == b"first"
        assert receiver.drained
        got: list[bytes | None] = []

        async def read() -> None:
            got.append(await receiver.receive(1024))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(read)
            await trio.sleep(0.05)
            assert got == [] and calls == [5]  # waiting, and no read tried on the empty socket
            theirs.send(b"second")
        assert got == [b"second"]
        assert calls == [5, 6]  # one read per arrival, none that failed


async def test_a_full_read_is_followed_by_a_read_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    async with _receiving(monkeypatch) as (receiver, theirs, calls):
        theirs.sendall(b"x" * 12)
        assert await receiver.receive(8) == b"x" * 8
        assert not receiver.drained  # more may be there: tried at once
        assert await receiver.receive(8) == b"x" * 4
        assert calls == [8, 4]


async def test_the_first_read_tries_then_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    async with _receiving(monkeypatch) as (receiver, theirs, calls):

        async def later() -> None:
            await trio.sleep(0.05)
            theirs.send(b"hello")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(later)
            assert await receiver.receive(1024, checkpoint=False) == b"hello"
        assert calls == [-1, 5]  # nothing known about a new socket: tried, then waited


async def test_end_of_file_reset_and_close() -> None:
    stream, theirs = await _pair()
    receiver = _gate.Receiver(stream)
    theirs.shutdown(socket.SHUT_WR)
    assert await receiver.receive(1024) == b""  # the client's end of file
    theirs.close()
    await stream.aclose()

    # A reset: the peer closes with unread data, so the kernel resets the connection.
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    accepted, _ = await listener.accept()
    server = trio.SocketStream(accepted)
    await server.send_all(b"unread by the client")
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    client.close()
    await trio.sleep(0.05)
    assert await _gate.Receiver(server).receive(1024) is None
    await server.aclose()
    listener.close()

    stream, theirs = await _pair()
    receiver = _gate.Receiver(stream)
    await stream.aclose()
    assert await receiver.receive(1024) is None  # closed: no read of a number another socket may reuse
    theirs.close()


async def test_a_waiting_read_is_cancellable() -> None:
    stream, theirs = await _pair()
    receiver = _gate.Receiver(stream)
    receiver.drained = True
    with trio.move_on_after(0.05) as scope:
        await receiver.receive(1024)
    assert scope.cancelled_caught
    theirs.send(b"after")
    assert await receiver.receive(1024) == b"after"
    theirs.close()
    await stream.aclose()


async def test_a_stream_without_a_socket_is_read_with_its_own_receive_some() -> None:
    # (as a TLS stream is: no descriptor of its own to watch)
    ours, theirs = trio.testing.memory_stream_pair()
    receiver = _gate.Receiver(ours)  # type: ignore[arg-type]
    assert receiver.socket is None
    await theirs.send_all(b"abc")
    assert await receiver.receive(1024) == b"abc"
    await theirs.send_eof()
    assert await receiver.receive(1024) == b""
    await ours.aclose()
    assert await receiver.receive(1024) is None


class _Connection:
    def __init__(self) -> None:
        self.read_deadline = math.inf
        self.read_scope = trio.CancelScope()


async def test_the_read_clock_cancels_a_read_past_its_deadline_within_a_tick(
    autojump_clock: trio.testing.MockClock,
) -> None:
    clock = _gate.ReadClock(0.2)
    assert clock.tick == pytest.approx(0.02)
    late, lifted, idle = _Connection(), _Connection(), _Connection()
    clock.connections.update((late, lifted, idle))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(clock.run)
        start = trio.current_time()
        late.read_deadline = lifted.read_deadline = start + 0.1
        waited = {}

        async def wait(connection: _Connection, name: str) -> None:
            with connection.read_scope:
                await trio.sleep(1)
            waited[name] = trio.current_time() - start

        nursery.start_soon(wait, late, "late")
        nursery.start_soon(wait, lifted, "lifted")
        nursery.start_soon(wait, idle, "idle")
        await trio.sleep(0.05)
        lifted.read_deadline = math.inf  # (its read was done in time)
        await trio.sleep(0.3)
        assert late.read_scope.cancelled_caught and 0.1 <= waited["late"] < 0.1 + 2 * clock.tick + 0.05
        assert late.read_deadline == math.inf
        assert not lifted.read_scope.cancel_called and not idle.read_scope.cancel_called
        nursery.cancel_scope.cancel()


def test_the_read_clocks_tick_is_a_tenth_of_the_shortest_timeout_at_most_half_a_second() -> None:
    assert _gate.ReadClock(10).tick == 0.5
    assert _gate.ReadClock(3).tick == pytest.approx(0.3)


async def test_a_wakeup_wakes_every_task_waiting_then_and_a_cancelled_one_leaves() -> None:
    from mcp_trio.transports.http._request import Wakeup

    wakeup = Wakeup()
    wakeup.wake()  # nobody waits: nothing happens, and nothing is remembered
    woken: list[str] = []

    async def waiter(name: str) -> None:
        await wakeup.wait()
        woken.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter, "a")
        nursery.start_soon(waiter, "b")
        nursery.start_soon(waiter, "c")
        await trio.testing.wait_all_tasks_blocked()
        assert woken == []
        with trio.move_on_after(0.01) as scope:
            await wakeup.wait()  # a waiter cancelled leaves the list
        assert scope.cancelled_caught
        wakeup.wake()
    assert sorted(woken) == ["a", "b", "c"]
    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter, "d")
        await trio.testing.wait_all_tasks_blocked()
        wakeup.wake()
    assert woken[-1] == "d"


async def test_a_connections_first_request_is_timed_exactly_and_later_ones_by_the_clock() -> None:
    from mcp_trio.transports.http.doors import h11 as h11_server

    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    theirs = socket.create_connection(listener.getsockname())
    accepted, _ = await listener.accept()
    listener.close()
    stream = trio.SocketStream(accepted)
    limits = h11_server._H11Limits(8192, 60.0, 30.0, 30.0, 10.0)
    clock = _gate.ReadClock(10.0)
    connection = h11_server._H11Connection(stream, limits, {}, None, clock)  # type: ignore[arg-type]
    connection._time_read(5.0)  # the first request's head is awaited
    assert connection.read_deadline == 5.0 and connection.read_scope.deadline == 5.0
    connection._time_read(math.inf)  # whole
    assert connection.read_deadline == math.inf and connection.read_scope.deadline == math.inf
    connection.served = 1
    connection._time_read(7.0)  # a kept-alive connection waits: the clock alone times it
    assert connection.read_deadline == 7.0 and connection.read_scope.deadline == math.inf
    theirs.close()
    await stream.aclose()


async def test_the_clock_keeps_no_connection_alive_between_ticks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # A connection gone between two ticks is freed at once, not a tick later.
    clock = _gate.ReadClock(10.0)  # (a tick every 0.5 s)
    connection = _Connection()
    clock.connections.add(connection)
    gone = weakref.ref(connection)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(clock.run)
        await trio.sleep(0.75)  # (one tick looked at it; the next is due at 1 s)
        clock.connections.discard(connection)
        del connection
        gc.collect()
        assert gone() is None
        nursery.cancel_scope.cancel()
