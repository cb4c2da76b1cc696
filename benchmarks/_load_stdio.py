"""Load generator over stdio: a server process spoken to over its pipes, one JSON message per line.

* :func:`stdio_sequential`: one ``tools/call`` at a time;
* :func:`stdio_pipelined`: ``depth`` requests in flight at every moment (one selector, no event
  loop framework);
* :func:`stdio_warm_up`: a number of calls, not measured (a JIT-compiled server's warm-up);

Each load also measures the server's CPU time per call (its process's ``/proc/<pid>/stat``, every
thread, over the measured phase) and the load generator's own (``time.process_time``).
* :func:`cold_start`: spawn to ``initialize`` answered;
* :func:`rss_bytes`: a process's resident set size.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from typing import IO, Any

from benchmarks._load_messages import (
    _TIMEOUT,
    INITIALIZED,
    EchoCall,
    LoadError,
    _any,
    _check_answer,
    _Message,
    _message,
    initialize_request,
)
from benchmarks._load_stats import Measurement


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _costs(measured: Measurement, pid: int, server_before: float, client_before: float, calls: int) -> None:
    """Fill in ``measured``'s server and client CPU per call since the two readings."""
    if calls:
        measured.cpu_per_call = (_cpu_seconds(pid) - server_before) / calls
        measured.client_cpu_per_call = (time.process_time() - client_before) / calls


class StdioServer:
    """A server process spoken to over its stdin/stdout, one JSON message per line.

    Args:
        argv: The command.
        env: Its environment (default: ours).
        cwd: Its working directory.
        stderr: Where its stderr goes (default: discarded).
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: IO[Any] | int | None = subprocess.DEVNULL,
    ) -> None:
        self.argv = list(argv)
        self.started_at = time.perf_counter()
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=env,
            cwd=cwd,
            bufsize=0,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self._in = self.process.stdin.fileno()
        self._out = self.process.stdout.fileno()
        self._buffer = bytearray()
        self._next_id = 1
        self.version: str | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._in, view)
            view = view[written:]

    def read_line(self) -> bytes:
        """The next non-empty line (blocking)."""
        buffer = self._buffer
        while True:
            end = buffer.find(b"\n")
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                if line.strip():
                    return line
                continue
            data = os.read(self._out, 1 << 20)
            if not data:
                raise LoadError(f"{self.argv[0]} closed stdout (exit code {self.process.poll()})")
            buffer += data

    def read_answer(self, id: Any) -> _Message:
        """The answer to request ``id``, skipping notifications."""
        while True:
            message = _message.decode(self.read_line())
            if message.is_notification:
                continue  # a notification
            return message

    def initialize(self) -> float:
        """The handshake; returns seconds from spawn to the answer of ``initialize``."""
        self.write(initialize_request(0) + b"\n")
        answer = self.read_answer(0)
        elapsed = time.perf_counter() - self.started_at
        _check_answer(answer, 0, None)
        self.version = _any.decode(answer.result).get("protocolVersion")
        self.write(INITIALIZED + b"\n")
        return elapsed

    def close(self, grace: float = 3.0) -> None:
        """Close stdin, wait for the exit, then terminate / kill."""
        process = self.process
        for stream in (process.stdin, process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self) -> StdioServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stdio_sequential(
    server: StdioServer,
    duration: float,
    *,
    text: str = "hello",
    check: str = "echo",
    warmup: float = 0.2,
) -> Measurement:
    """``tools/call`` echo, one at a time, for ``duration`` seconds (after ``warmup``)."""
    call = EchoCall(text)
    expect = text if check == "echo" else None
    write, read_answer, next_id = server.write, server.read_answer, server.next_id
    clock = time.perf_counter
    latencies: list[float] = []
    server_before = client_before = 0.0
    for phase_duration, keep in ((warmup, False), (duration, True)):
        if keep:
            server_before, client_before = _cpu_seconds(server.pid), time.process_time()
        start = clock()
        end = start + phase_duration
        while True:
            id = next_id()
            t0 = clock()
            write(call.request(id) + b"\n")
            message = read_answer(id)
            t1 = clock()
            _check_answer(message, id, expect, check == "id")
            if keep:
                latencies.append(t1 - t0)
            if t1 >= end:
                break
    measured = Measurement(len(latencies), clock() - start, latencies)
    _costs(measured, server.pid, server_before, client_before, len(latencies))
    return measured


def stdio_warm_up(server: StdioServer, calls: int, *, check: str = "echo") -> None:
    """``calls`` ``tools/call`` echo requests one at a time, answers checked, nothing measured:
    every peer's warm-up, counted in calls (a JIT such as Node's compiles a function after
    it has run some thousands of times)."""
    call = EchoCall("hello")
    for _ in range(calls):
        id = server.next_id()
        server.write(call.request(id) + b"\n")
        _check_answer(server.read_answer(id), id, "hello" if check == "echo" else None, check == "id")


def stdio_pipelined(
    server: StdioServer,
    duration: float,
    *,
    depth: int = 256,
    text: str = "hello",
    check: str = "echo",
) -> Measurement:
    """Keep ``depth`` ``tools/call`` echo requests in flight for ``duration`` seconds.

    New requests go out as answers come back; after ``duration`` no more are
    sent and the rest are awaited.  The rate is answers / time to the last one.
    """
    call = EchoCall(text)
    expect = text if check == "echo" else None
    clock = time.perf_counter
    out_fd, in_fd = server._in, server._out
    os.set_blocking(out_fd, False)
    os.set_blocking(in_fd, False)
    selector = selectors.DefaultSelector()
    selector.register(in_fd, selectors.EVENT_READ)
    writing = False
    outbox = bytearray()
    inbox = server._buffer
    sent_at: dict[int, float] = {}
    latencies: list[float] = []
    server_before, client_before = _cpu_seconds(server.pid), time.process_time()
    start = clock()
    stop_at = start + duration
    last = start
    stopping = False
    try:
        while True:
            now = clock()
            if not stopping and now >= stop_at:
                stopping = True
            if not stopping and len(sent_at) < depth:
                for _ in range(depth - len(sent_at)):
                    id = server.next_id()
                    outbox += call.request(id) + b"\n"
                    sent_at[id] = now
            if stopping and not sent_at:
                break
            if outbox:
                try:
                    written = os.write(out_fd, outbox)
                    del outbox[:written]
                except BlockingIOError:
                    pass
            if outbox and not writing:
                selector.register(out_fd, selectors.EVENT_WRITE)
                writing = True
            elif not outbox and writing:
                selector.unregister(out_fd)
                writing = False
            events = selector.select(_TIMEOUT)
            if not events:
                raise LoadError(f"no answer within {_TIMEOUT} s ({len(sent_at)} in flight)")
            for key, _mask in events:
                if key.fd != in_fd:
                    continue
                try:
                    data = os.read(in_fd, 1 << 20)
                except BlockingIOError:
                    continue
                if not data:
                    raise LoadError(f"{server.argv[0]} closed stdout mid-run")
                inbox += data
                begin = 0
                now = clock()
                while True:
                    end = inbox.find(b"\n", begin)
                    if end < 0:
                        break
                    line = bytes(inbox[begin:end])
                    begin = end + 1
                    if not line.strip():
                        continue
                    message = _message.decode(line)
                    if message.is_notification:
                        continue
                    sent = sent_at.pop(message.id, None)
                    if sent is None:
                        raise LoadError(f"answer for an id never sent or answered twice: {message.id!r}")
                    _check_answer(message, message.id, expect, check == "id")
                    latencies.append(now - sent)
                    last = now
                del inbox[:begin]
    finally:
        selector.close()
        os.set_blocking(out_fd, True)
        os.set_blocking(in_fd, True)
    measured = Measurement(len(latencies), last - start, latencies)
    _costs(measured, server.pid, server_before, client_before, len(latencies))
    return measured


def cold_start(argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None) -> float:
    """Seconds from spawning ``argv`` to its answer to ``initialize``."""
    with StdioServer(argv, env=env, cwd=cwd) as server:
        return server.initialize()


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` (``VmRSS`` in ``/proc/<pid>/status``)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise LoadError(f"no VmRSS for process {pid}")
