"""The front doors' connection limits, attacked over real sockets on both
doors: connections past ``max_connections`` wait in the listen backlog (file
descriptors stay bounded), one client address cannot take the whole table,
request heads must come within ``header_timeout``, and a client that never
reads a large answer is dropped after ``write_timeout`` with what the answer
held freed.  Clients tell "legitimate" (127.0.0.2) from "attacker"
(127.0.0.3) by source address."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import tracemalloc
from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio.transports.http.doors import _gate
from mcp_trio.transports.http.server import (
    HttpRequest,
    Responder,
)
from tests._support.doors import DOORS, LEAN_DOORS, is_lean
from tests._support.http_doors import BIG, REQUEST, Answer, closed_by_server, connect, serving


async def ask(sock: trio.socket.SocketType) -> bytes:
    """Send a plain request on ``sock`` and read until its ``ok`` answer."""
    await sock.send(REQUEST)
    got = b""
    while not got.endswith(b"ok"):
        data = await sock.recv(65536)
        assert data, f"closed before the answer: {got!r}"
        got += data
    return got


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.parametrize("door", DOORS)
async def test_connections_past_the_limit_wait_in_the_backlog(door: str) -> None:
    limits = dict(max_connections=4, max_connections_per_client=4, header_timeout=30.0)
    answer = Answer()
    async with serving(door, answer, **limits) as port:
        first = [await connect(port) for _ in range(4)]
        for sock in first:  # each is answering a request: none is evicted to make room
            await sock.send(b"GET /mcp?hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        await trio.sleep(0.3)
        before = open_fds()
        waiting = [await connect(port) for _ in range(60)]  # left in the backlog: our fds only
        await trio.sleep(0.2)
        assert open_fds() - before <= 60 + 4
        with trio.fail_after(5):
            await waiting[0].send(REQUEST)  # sits in the backlog until a slot frees
            with trio.move_on_after(0.5):
                assert not await waiting[0].recv(100), "answered past max_connections"
            answer.release.set()  # answered, then idle: their slots may be taken
            got = b""
            while not got.endswith(b"ok"):
                got += await waiting[0].recv(65536)
        for sock in first + waiting:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_slowloris_from_one_address_never_blocks_another(door: str) -> None:
    limits = dict(max_connections=8, max_connections_per_client=4, header_timeout=30.0)
    async with serving(door, Answer(), **limits) as port:
        attackers = []
        for _ in range(12):  # each sends a piece of a head, never the end
            sock = await connect(port, "127.0.0.3")
            await sock.send(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ")
            attackers.append(sock)
        await trio.sleep(0.1)
        with trio.fail_after(2):
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
        with trio.fail_after(2):  # past its share, the attacker's connections were closed at once
            for sock in attackers[4:]:
                assert await closed_by_server(sock)
        for sock in [*attackers, legitimate]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_full_table_of_connections_that_sent_no_request_never_blocks_a_client(door: str) -> None:
    limits = dict(max_connections=8, max_connections_per_client=2, header_timeout=30.0)
    answer = Answer()
    async with serving(door, answer, **limits) as port:
        kept = await connect(port, "127.0.0.2")
        await kept.send(b"GET /mcp?hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")  # under way: kept
        attackers = []
        for i in range(40):  # from many addresses, each within its share: the table fills
            sock = await connect(port, f"127.0.0.{3 + i % 20}")
            if i % 2:
                await sock.send(b"GET /mcp HTTP/1.1\r\nX-A: ")
            attackers.append(sock)
        await trio.sleep(0.1)
        with trio.fail_after(2):  # the oldest connection without a request makes room
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
            answer.release.set()
            got = b""
            while not got.endswith(b"ok"):
                data = await kept.recv(65536)
                assert data, f"closed before the answer: {got!r}"
                got += data
            assert got.startswith(b"HTTP/1.1 200")
        for sock in [*attackers, legitimate, kept]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_full_table_of_idle_kept_alive_connections_never_blocks_a_client(door: str) -> None:
    limits = dict(max_connections=8, max_connections_per_client=2, keepalive_timeout=30.0)
    async with serving(door, Answer(), **limits) as port:
        idle = []
        for i in range(8):  # from many addresses, each within its share, each proven
            sock = await connect(port, f"127.0.0.{3 + i}")
            await ask(sock)
            idle.append(sock)
        await trio.sleep(0.3)
        with trio.fail_after(2):  # the longest idle makes room
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
        with trio.fail_after(2):
            assert await closed_by_server(idle[0])
        with trio.fail_after(2):  # the others are kept
            for sock in idle[1:]:
                assert (await ask(sock)).startswith(b"HTTP/1.1 200")
        for sock in [*idle, legitimate]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_full_table_evicts_first_from_the_address_holding_the_most(door: str) -> None:
    limits = dict(max_connections=8, max_connections_per_client=4, keepalive_timeout=30.0)
    async with serving(door, Answer(), **limits) as port:
        others = []
        for i in range(4):  # idle the longest, one per address
            sock = await connect(port, f"127.0.0.{4 + i}")
            await ask(sock)
            others.append(sock)
        crowd = []
        for _ in range(4):  # then four from one address
            sock = await connect(port, "127.0.0.3")
            await ask(sock)
            crowd.append(sock)
        await trio.sleep(0.3)
        with trio.fail_after(2):
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
        with trio.fail_after(2):  # the crowd's longest idle went
            assert await closed_by_server(crowd[0])
        with trio.fail_after(2):
            for sock in [*others, *crowd[1:]]:
                assert (await ask(sock)).startswith(b"HTTP/1.1 200")
        for sock in [*others, *crowd, legitimate]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_full_table_of_trickled_bodies_never_blocks_a_client(door: str) -> None:
    limits = dict(max_connections=8, max_connections_per_client=2, request_timeout=60.0)
    async with serving(door, Answer(), **limits) as port, trio.open_nursery() as nursery:
        trickling = []
        for i in range(8):  # whole heads, then a byte of the body now and then
            sock = await connect(port, f"127.0.0.{3 + i % 4}")
            await sock.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nx")
            trickling.append(sock)

        async def trickle() -> None:
            with contextlib.suppress(OSError):
                while True:
                    await trio.sleep(0.1)
                    for sock in trickling:
                        await sock.send(b"x")

        nursery.start_soon(trickle)
        await trio.sleep(0.3)
        with trio.fail_after(3):  # a body slower than the least rate makes room once past its grace
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
        nursery.cancel_scope.cancel()
        for sock in [*trickling, legitimate]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_trickled_head_is_cut_off_at_the_header_timeout(door: str) -> None:
    async with serving(door, Answer(), header_timeout=0.5, keepalive_timeout=30.0) as port:
        trickler = await connect(port)
        idle = await connect(port)
        kept = await connect(port)
        await ask(kept)  # kept alive, then idle: keepalive_timeout applies, not header_timeout
        start = trio.current_time()
        with trio.fail_after(3):
            async with trio.open_nursery() as nursery:
                if door == "hypercorn":  # (its one idle timer has the smaller of both: kept busy)

                    async def busy() -> None:
                        while True:
                            await trio.sleep(0.2)
                            with trio.CancelScope(shield=True):  # (each answer read whole)
                                await ask(kept)

                    nursery.start_soon(busy)

                async def trickle() -> None:
                    try:
                        for byte in REQUEST[:-2]:
                            await trickler.send(bytes([byte]))
                            await trio.sleep(0.05)
                    except OSError:
                        pass

                nursery.start_soon(trickle)
                assert await closed_by_server(trickler)
                assert await closed_by_server(idle)
                nursery.cancel_scope.cancel()
        assert trio.current_time() - start < 2
        assert (await ask(kept)).startswith(b"HTTP/1.1 200")
        for sock in (trickler, idle, kept):
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_kept_alive_connection_is_closed_once_idle_for_the_keepalive_timeout(door: str) -> None:
    async with serving(door, Answer(), keepalive_timeout=0.5) as port:
        sock = await connect(port)
        for _ in range(4):  # a request every 0.3 s keeps it open past the timeout
            assert (await ask(sock)).startswith(b"HTTP/1.1 200")
            await trio.sleep(0.3)
        await sock.send(REQUEST.replace(b"/mcp", b"/mcp?slow"))  # under way longer than the timeout
        got = b""
        while not got.endswith(b"ok"):
            data = await sock.recv(65536)
            assert data, f"closed during a request: {got!r}"
            got += data
        assert got.startswith(b"HTTP/1.1 200")
        start = trio.current_time()
        with trio.fail_after(3):
            assert await closed_by_server(sock)
        assert trio.current_time() - start > 0.4  # idle from the answer on
        sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_head_sent_in_pieces_within_the_header_timeout_is_served(door: str) -> None:
    # The hypercorn door reads the first head itself before hypercorn sees the connection:
    # what it read (the head's end and a second request in the same write) reaches hypercorn.
    async with serving(door, Answer(), header_timeout=2.0) as port:
        sock = await connect(port)
        with trio.fail_after(5):
            for piece in (REQUEST[:5], REQUEST[5:20], REQUEST[20:-1]):
                await sock.send(piece)
                await trio.sleep(0.05)
            await sock.send(REQUEST[-1:] + REQUEST)  # the end of one head, then a whole request
            got = b""
            while got.count(b"HTTP/1.1 200") < 2 or not got.endswith(b"ok"):
                data = await sock.recv(65536)
                assert data, f"closed before both answers: {got!r}"
                got += data
        sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_client_that_never_reads_a_large_answer_is_dropped_at_the_write_timeout(door: str) -> None:
    handler = Answer()
    async with serving(door, handler, write_timeout=0.5) as port:
        sock = await connect(port, "127.0.0.2", rcvbuf=4096)
        await sock.send(b"GET /mcp?big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        with trio.fail_after(4):  # the answer is abandoned and its handler ends
            await handler.big_ended.wait()
        assert handler.big_outcome == "dropped" if is_lean(door) else handler.big_outcome != "sent"
        with trio.fail_after(4):  # and the connection is closed: the client finds its end
            got = 0
            try:
                while data := await sock.recv(65536):
                    got += len(data)
            except ConnectionResetError:
                pass
        assert got < BIG
        sock.close()
        with trio.fail_after(2):  # the server goes on
            sock = await connect(port, "127.0.0.2")
            assert (await ask(sock)).startswith(b"HTTP/1.1 200")
        sock.close()


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_the_h11_door_writes_a_large_answer_without_copying_it(door: str) -> None:
    handler = Answer()
    tracemalloc.start()
    try:
        async with serving(door, handler, write_timeout=0.5) as port:
            sock = await connect(port, rcvbuf=4096)
            await sock.send(b"GET /mcp?big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            with trio.fail_after(4):
                await handler.big_ended.wait()
            sock.close()
    finally:
        tracemalloc.stop()
    assert handler.big_outcome == "dropped"
    assert 0 <= handler.extra_bytes < BIG // 4, f"the write held {handler.extra_bytes} bytes beyond the body"


@pytest.mark.parametrize("door", DOORS)
async def test_a_large_answer_goes_out_in_pieces_each_a_step_of_its_own(
    door: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No system call writes more than ``WRITE_CHUNK`` of a 4 MiB answer (the kernel's copy of
    all of it at once would hold every other connection up), and the client gets it whole."""
    writes: list[int] = []

    def recorded(call: Any) -> Any:
        def write(fd: int, data: Any) -> int:
            writes.append(len(data) if call is real_write else sum(len(part) for part in data))
            return int(call(fd, data))

        return write

    real_write, real_writev = os.write, os.writev
    monkeypatch.setattr(_gate.os, "write", recorded(real_write))
    monkeypatch.setattr(_gate.os, "writev", recorded(real_writev))
    real_send_all = trio.SocketStream.send_all

    async def send_all(stream: trio.SocketStream, data: Any) -> None:
        writes.append(len(data))
        await real_send_all(stream, data)

    monkeypatch.setattr(trio.SocketStream, "send_all", send_all)
    handler = Answer()
    async with serving(door, handler) as port:
        sock = await connect(port)
        await sock.send(b"GET /mcp?big HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        got = 0
        with trio.fail_after(10):
            while got < BIG:
                data = await sock.recv(1 << 20)
                assert data, "closed before the whole answer"
                got += len(data) if got else len(data) - data.index(b"\r\n\r\n") - 4
            await handler.big_ended.wait()
        sock.close()
    assert handler.big_outcome == "sent" and got == BIG
    assert sum(writes) >= BIG and max(writes) <= _gate.WRITE_CHUNK, sorted(writes)[-3:]


class _StepNames(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


class _Recording(Answer):
    """Answers as :class:`Answer`, noting the task steps taken before it was called."""

    def __init__(self, steps: _StepNames) -> None:
        super().__init__()
        self.steps = steps
        self.before: list[str] = []

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        self.before = list(self.steps.names)
        await super().handle(request, responder)


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_the_h11_door_reads_a_request_that_came_with_its_connection_at_once(door: str) -> None:
    """No trip through the connection's reader task (two scheduler rounds) before a new
    connection's first request is handled, when its bytes came with the connection."""
    steps = _StepNames()
    handler = _Recording(steps)
    async with serving(door, handler) as port:
        with socket.create_connection(("127.0.0.1", port)) as sock:  # (blocking: no yield before
            sock.sendall(REQUEST)  # the request is sent, so it is there when the door accepts)
            trio.lowlevel.add_instrument(steps)
            try:
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
                got = b""
                with trio.fail_after(5):
                    while not got.endswith(b"ok"):
                        got += await stream.receive_some(65536)
            finally:
                trio.lowlevel.remove_instrument(steps)
    assert got.startswith(b"HTTP/1.1 200")
    assert any(name.endswith("ConnectionGate._run") for name in handler.before), handler.before
    assert not [name for name in handler.before if name.endswith("_read_loop")], handler.before


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_the_h11_door_starts_no_reader_for_a_connection_that_never_sent_a_request(door: str) -> None:
    """Until its first answer a connection's own task reads: silent and trickling connections
    (floods, slowloris) cost one task each, not two; the reader that notices a client leaving
    mid-answer starts with the first answer."""

    class Spawned(trio.abc.Instrument):
        def __init__(self) -> None:
            self.names: list[str] = []

        def task_spawned(self, task: trio.lowlevel.Task) -> None:
            self.names.append(task.name)

    spawned = Spawned()
    async with serving(door, Answer(), header_timeout=30.0) as port:
        trio.lowlevel.add_instrument(spawned)
        try:
            socks = [await connect(port, "127.0.0.2") for _ in range(4)]
            for sock in socks[:2]:
                await sock.send(REQUEST[:10])  # a head begun, a byte at a time
                await trio.sleep(0.05)
                await sock.send(REQUEST[10:11])
            await trio.sleep(0.2)
            readers = [name for name in spawned.names if name.endswith("_read_loop")]
            connections = [name for name in spawned.names if name.endswith("ConnectionGate._run")]
            assert len(connections) == 4 and not readers, spawned.names
            with trio.fail_after(5):
                await socks[0].send(REQUEST[11:])  # the rest: answered, and now watched
                got = b""
                while not got.endswith(b"ok"):
                    got += await socks[0].recv(65536)
            assert got.startswith(b"HTTP/1.1 200")
            assert [name for name in spawned.names if name.endswith("_read_loop")]
        finally:
            trio.lowlevel.remove_instrument(spawned)
        for sock in socks:
            sock.close()


async def test_a_head_that_came_with_its_connection_is_read_without_a_checkpoint() -> None:
    """The hypercorn door's first read (``TimedStream.read_head``): no timer, no trip through
    the scheduler when the head is there already; else it waits for the rest as before."""
    left, right = trio.socket.socketpair()
    with left, right:
        timed = _gate.TimedStream(trio.SocketStream(right), write_timeout=1.0)
        await left.send(REQUEST)
        with trio.testing.assert_no_checkpoints():
            assert await timed.read_head(1.0, 65536)
        assert await timed.receive_some(65536) == REQUEST
        await left.send(REQUEST[:10])  # a part only: it waits for the rest, within the timeout
        assert not await timed.read_head(0.2, 65536)


@pytest.mark.parametrize("door", DOORS)
async def test_a_connection_the_client_closed_frees_its_slot_at_once(door: str) -> None:
    limits = dict(max_connections=4, max_connections_per_client=2, header_timeout=30.0)
    async with serving(door, Answer(), **limits) as port:
        with trio.fail_after(5):
            for i in range(12):  # a request, nothing, or a part of a head; then the client closes
                sock = await connect(port, "127.0.0.2")
                try:
                    if i % 3 == 0:
                        assert (await ask(sock)).startswith(b"HTTP/1.1 200")
                    elif i % 3 == 1:
                        await sock.send(REQUEST[:10])
                finally:
                    sock.close()
                await trio.sleep(0.05)
            sock = await connect(port, "127.0.0.2")
            assert (await ask(sock)).startswith(b"HTTP/1.1 200")
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_body_trickled_past_the_request_timeout_gets_408(door: str) -> None:
    async with serving(door, Answer(), request_timeout=0.5) as port:
        sock = await connect(port, "127.0.0.2")
        await sock.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n0123456789")
        got = b""
        with trio.fail_after(3):
            try:
                while data := await sock.recv(65536):
                    got += data
            except ConnectionResetError:
                pass
        assert got.startswith(b"HTTP/1.1 408")
        sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_backlog_of_connections_is_taken_in_a_few_rounds_of_a_busy_loop(door: str) -> None:
    """A flood of connections queued while the process is busy does not hold a client
    queued behind it for one scheduler round per connection: the gate accepts them in
    bursts (those past the address's share closed at once)."""
    rounds = 0

    async def busy() -> None:  # another task always ready to run: one count per round
        nonlocal rounds
        while True:
            rounds += 1
            await trio.lowlevel.checkpoint()

    async with (
        serving(door, Answer(), max_connections_per_client=128) as port,
        trio.open_nursery() as nursery,
    ):
        nursery.start_soon(busy)
        flood = []
        for _ in range(400):  # connected by the kernel, queued for accept(); no checkpoint here
            sock = socket.socket()
            sock.bind(("127.0.0.3", 0))
            sock.connect(("127.0.0.1", port))
            flood.append(sock)
        client = socket.socket()
        client.bind(("127.0.0.2", 0))
        client.connect(("127.0.0.1", port))
        client.setblocking(False)
        client.send(REQUEST)
        start = rounds
        got = b""
        with trio.fail_after(10):
            while not got.endswith(b"ok"):
                await trio.lowlevel.wait_readable(client)
                got += client.recv(65536)
        taken = rounds - start
        nursery.cancel_scope.cancel()
        for sock in [*flood, client]:
            sock.close()
    assert got.startswith(b"HTTP/1.1 200")
    # One accept per round would take more than 400 rounds to reach the client.
    assert taken < 100, f"the client was answered after {taken} rounds of the loop"


class Recorder(Answer):
    """Answers ``ok`` a few scheduler rounds late, noting each request's client address as its
    answer begins."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str | None] = []

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        if request.query != "hold":
            self.order.append(request.client)
            for _ in range(3):
                await trio.lowlevel.checkpoint()
        await super().handle(request, responder)


def queue_requests(port: int, source: str, count: int, request: bytes = REQUEST) -> list[socket.socket]:
    """``count`` connections from ``source``, each with a whole ``request`` sent, made while the
    server cannot run (blocking calls): they wait in its listen backlog, in this order."""
    made = []
    for _ in range(count):
        sock = socket.socket()
        sock.bind((source, 0))
        sock.connect(("127.0.0.1", port))
        sock.sendall(request)
        made.append(sock)
    return made


async def answer_of(sock: socket.socket) -> bytes:
    """What the server sent on ``sock`` until it closed it (b"" when closed unanswered)."""
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
    got = b""
    try:
        while not got.endswith(b"ok") and (data := await stream.receive_some(65536)):
            got += data
    except trio.BrokenResourceError:  # (reset)
        pass
    return got


@pytest.mark.parametrize("door", DOORS)
async def test_a_newcomer_is_answered_before_an_address_s_queued_requests(door: str) -> None:
    # 200 whole requests from one address, then one from another, all queued before the server
    # runs: the newcomer is started and answered after a share of them, not after all of them.
    recorder = Recorder()
    limits = dict(max_connections=512, max_connections_per_client=512)
    async with serving(door, recorder, **limits) as port:
        flood = queue_requests(port, "127.0.0.3", 200)
        (newcomer,) = queue_requests(port, "127.0.0.2", 1)
        with trio.fail_after(20):
            assert (await answer_of(newcomer)).startswith(b"HTTP/1.1 200")
            for sock in flood:
                assert (await answer_of(sock)).startswith(b"HTTP/1.1 200")  # (none lost)
        assert len(recorder.order) == 201
        assert recorder.order.index("127.0.0.2") < 100, recorder.order.index("127.0.0.2")
        for sock in [*flood, newcomer]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_request_on_a_kept_alive_connection_is_answered_before_two_addresses_queued_ones(
    door: str,
) -> None:
    # 60 kept-alive connections from each of two addresses and one from a third, each answered
    # once; then a whole request on each, all sent while the server cannot run (the third
    # address's last).  The two addresses' requests fill the turns and queue for the next, the
    # third's is given one at once: it is answered after about a turn's worth of them
    # (``_TURNS``), not after all of them.
    recorder = Recorder()
    limits = dict(max_connections=512, max_connections_per_client=512)
    async with serving(door, recorder, **limits) as port:
        flood = [*queue_requests(port, "127.0.0.3", 60), *queue_requests(port, "127.0.0.4", 60)]
        (newcomer,) = queue_requests(port, "127.0.0.2", 1)
        try:
            with trio.fail_after(20):
                for sock in [*flood, newcomer]:
                    assert (await answer_of(sock)).startswith(b"HTTP/1.1 200")
            recorder.order.clear()
            for sock in [*flood, newcomer]:
                sock.setblocking(True)
                sock.sendall(REQUEST)  # (blocking: the server cannot run meanwhile)
            with trio.fail_after(20):
                for sock in [newcomer, *flood]:
                    assert (await answer_of(sock)).startswith(b"HTTP/1.1 200")  # (none lost)
        finally:
            for sock in [*flood, newcomer]:
                sock.close()
        assert len(recorder.order) == 121
        assert recorder.order.index("127.0.0.2") <= 2 * _gate._TURNS, recorder.order


@pytest.mark.parametrize("door", DOORS)
async def test_a_table_crowded_by_a_few_addresses_keeps_room_for_another(door: str) -> None:
    # 80 connections held busy from two addresses, queued before the server runs, then a
    # request from a third: its reserve (a sixteenth of the table, 4 here) takes it, the crowd's
    # connections past the rest of the table are closed at once, the others answered.
    answer = Answer()
    limits = dict(max_connections=64, max_connections_per_client=64)
    async with serving(door, answer, **limits) as port:
        hold = REQUEST.replace(b"/mcp", b"/mcp?hold")
        crowd = [*queue_requests(port, "127.0.0.3", 40, hold), *queue_requests(port, "127.0.0.4", 40, hold)]
        (newcomer,) = queue_requests(port, "127.0.0.2", 1)
        with trio.fail_after(3):
            assert (await answer_of(newcomer)).startswith(b"HTTP/1.1 200")
        answer.release.set()
        with trio.fail_after(10):
            answers = [await answer_of(sock) for sock in crowd]
        assert sum(got.startswith(b"HTTP/1.1 200") for got in answers) == 60
        assert answers.count(b"") == 20  # (closed at once, unread: never answered)
        for sock in [*crowd, newcomer]:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_a_client_resetting_its_connection_mid_head_leaves_the_server_serving(door: str) -> None:
    async with serving(door, Answer(), header_timeout=30.0) as port:
        for _ in range(3):
            sock = await connect(port, "127.0.0.3")
            await sock.send(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: ")
            await trio.sleep(0.1)  # (its head is being read)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # a reset
        await trio.sleep(0.1)
        with trio.fail_after(2):
            legitimate = await connect(port, "127.0.0.2")
            assert (await ask(legitimate)).startswith(b"HTTP/1.1 200")
        legitimate.close()
