"""Load generator over Streamable HTTP: MCP sessions and echo calls on the raw-socket clients.

Each client owns one keep-alive connection and its own MCP session (``initialize`` then
``notifications/initialized``, then ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` on every
request): :func:`http_calls` measures calls back to back, :func:`open_idle_sessions` opens
sessions and leaves them idle, :func:`http_warm_up` makes a number of calls without measuring
them (every peer's warm-up, counted in calls).  Also the port helpers (:func:`wait_for_port`,
:func:`free_port`).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks._load_http_client import Flow, HttpClients, HttpRequest, HttpTarget
from benchmarks._load_messages import (
    INITIALIZED,
    PROTOCOL_VERSION,
    EchoCall,
    LoadError,
    _any,
    _check_answer,
    initialize_request,
)
from benchmarks._load_stats import Measurement


class _Session:
    """The headers of one MCP session (filled in by :func:`_open_session`)."""

    def __init__(self) -> None:
        self.headers: tuple[tuple[str, str], ...] = ()
        self.next_id = 0


def _open_session(session: _Session) -> Flow:
    response = yield HttpRequest("POST", initialize_request(0))
    answer = response.answer(0)
    _check_answer(answer, 0, None)
    version = _any.decode(answer.result).get("protocolVersion", PROTOCOL_VERSION)
    headers = [("MCP-Protocol-Version", version)]
    session_id = response.headers.get("mcp-session-id")
    if session_id:
        headers.append(("Mcp-Session-Id", session_id))
    session.headers = tuple(headers)
    session.next_id = 0
    response = yield HttpRequest("POST", INITIALIZED, session.headers)
    if response.status not in (200, 202, 204):
        raise LoadError(f"notifications/initialized got HTTP {response.status}: {response.body[:200]!r}")


def _close_session(session: _Session) -> Flow:
    if any(name == "Mcp-Session-Id" for name, _ in session.headers):
        yield HttpRequest("DELETE", b"", session.headers)


def http_calls(
    target: HttpTarget,
    duration: float,
    *,
    clients: int = 1,
    text: str = "hello",
    check: str = "echo",
    warmup: float = 0.2,
    server_pid: int | Sequence[int] | None = None,
    store_pid: int | None = None,
    connections_per_session: int = 1,
) -> Measurement:
    """``clients`` sessions, each calling ``echo`` back to back, measured for ``duration`` s.

    Sessions are opened first and deleted at the end, outside the measured
    time.  Then every client calls in a loop; the first ``warmup`` seconds
    are not counted.  The rate is the calls that both started and ended inside
    the measured window, divided by its length.  With ``server_pid``, the server process's CPU
    time (user + system, every thread) over the calling phase (warm-up included) divided by
    the calls answered in it is the measurement's ``cpu_per_call`` (a server of several
    processes: a sequence of their ids, summed); with ``store_pid`` (a process
    the server relies on, such as the redis-server of its session store), that process's is
    ``store_cpu_per_call``; the load generator's own CPU time over the same phase, per call, is
    ``client_cpu_per_call``.  With ``connections_per_session`` K above 1, the ``clients``
    connections carry ``clients / K`` sessions (rounded up), each called over K connections
    at once: behind several workers sharing the port, a session's requests land on several.
    """
    call = EchoCall(text)
    expect = text if check == "echo" else None
    clock = time.perf_counter
    latencies: list[float] = []
    sessions = [_Session() for _ in range(-(-clients // max(1, connections_per_session)))]
    window: list[float] = []
    answered = [0]

    def calls(session: _Session) -> Flow:
        start, end = window
        while True:
            session.next_id += 1
            id = session.next_id
            t0 = clock()
            if t0 >= end:
                return
            response = yield HttpRequest("POST", call.request(id), session.headers)
            t1 = clock()
            _check_answer(response.answer(id), id, expect, check == "id")
            answered[0] += 1
            if t0 >= start and t1 <= end:
                latencies.append(t1 - t0)

    with HttpClients(target, clients) as pool:
        pool.run([_open_session(s) for s in sessions])
        begin = clock() + warmup
        window[:] = [begin, begin + duration]
        pids = {"server": server_pid, "store": store_pid}
        before = {name: cpu_seconds(pid) for name, pid in pids.items() if pid is not None}
        client_before = time.process_time()
        pool.run([calls(sessions[i % len(sessions)]) for i in range(clients)])
        client_used = time.process_time() - client_before
        used = {name: cpu_seconds(pids[name]) - seconds for name, seconds in before.items()}
        pool.run([_close_session(s) for s in sessions])
    measured = Measurement(len(latencies), duration, latencies)
    if answered[0]:
        measured.client_cpu_per_call = client_used / answered[0]
        measured.cpu_per_call = used["server"] / answered[0] if "server" in used else None
        measured.store_cpu_per_call = used["store"] / answered[0] if "store" in used else None
    return measured


def http_warm_up(target: HttpTarget, calls: int, *, clients: int = 1) -> None:
    """``calls`` ``tools/call`` echo requests in all, over ``clients`` sessions each on its own
    connection (opened first, deleted at the end), answers checked, nothing measured."""
    call = EchoCall("hello")
    sessions = [_Session() for _ in range(clients)]
    left = [calls]

    def calling(session: _Session) -> Flow:
        while left[0] > 0:
            left[0] -= 1
            session.next_id += 1
            response = yield HttpRequest("POST", call.request(session.next_id), session.headers)
            _check_answer(response.answer(session.next_id), session.next_id, "hello")

    with HttpClients(target, clients) as pool:
        pool.run([_open_session(s) for s in sessions])
        pool.run([calling(s) for s in sessions])
        pool.run([_close_session(s) for s in sessions])


def cpu_seconds(pid: int | Sequence[int]) -> float:
    """CPU time (user + system) process ``pid`` (or these processes together) has used so far
    (``/proc/<pid>/stat``)."""
    if not isinstance(pid, int):
        return sum(cpu_seconds(one) for one in pid)
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree(pid: int) -> list[int]:
    """``pid`` and its children, theirs, and so on (``/proc/<pid>/task/*/children``), as now."""
    found = [pid]
    try:
        children = [
            c for task in Path(f"/proc/{pid}/task").iterdir() for c in (task / "children").read_text().split()
        ]
    except OSError:  # (it, or a thread of it, has just ended)
        return found
    for child in children:
        found += process_tree(int(child))
    return found


def open_idle_sessions(target: HttpTarget, count: int, *, connections: int = 16) -> int:
    """Open ``count`` MCP sessions and leave them open (idle); returns how many opened."""
    opened = [0]

    def flow() -> Flow:
        while opened[0] < count:
            opened[0] += 1
            yield from _open_session(_Session())

    with HttpClients(target, min(connections, count)) as pool:
        pool.run([flow() for _ in range(min(connections, count))])
    return opened[0]


def wait_for_port(host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None) -> None:
    """Wait until ``host:port`` accepts connections (and ``alive()`` stays true)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return
        except OSError:
            if alive is not None and not alive():
                raise LoadError(f"the server for port {port} exited before listening") from None
            if time.monotonic() > deadline:
                raise LoadError(f"nothing listens on {host}:{port} after {timeout} s") from None
            time.sleep(0.02)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free now on ``host``."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
