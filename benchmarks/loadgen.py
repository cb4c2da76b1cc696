"""Raw JSON-RPC load generator for MCP servers over stdio and Streamable HTTP.

No MCP SDK on this side, so every server gets the same bytes and the same
client cost.  It uses only the standard library (``subprocess``, ``socket``,
``selectors``) and msgspec to read answers; no event loop framework.

Every answer is checked: the ``id`` must be the one asked, an error is a
failure, and a ``tools/call`` of ``echo`` must come back with the text sent
(``check="echo"``).  The stdio ceiling (a line echo) sends the request back, so
it is checked by ``id`` only (``check="id"``).

stdio (:class:`StdioServer`):

* :func:`stdio_sequential`: one ``tools/call`` at a time;
* :func:`stdio_pipelined`: ``depth`` requests in flight at every moment;
* :func:`cold_start`: spawn to ``initialize`` answered.

Streamable HTTP (:func:`http_calls`, :func:`open_idle_sessions`): each
client owns one keep-alive connection and its own MCP session (``initialize``
then ``notifications/initialized``, then ``Mcp-Session-Id`` and
``MCP-Protocol-Version`` on every request).  Answers may be JSON bodies or SSE
streams; bodies may be sized by ``Content-Length``, chunked, or end with the
connection.  Latency is measured from the first byte sent to the last byte of
the HTTP response.
"""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

import msgspec

__all__ = [
    "PROTOCOL_VERSION",
    "HttpTarget",
    "Measurement",
    "StdioServer",
    "cold_start",
    "http_calls",
    "open_idle_sessions",
    "rss_bytes",
    "stdio_pipelined",
    "stdio_sequential",
]

#: The revision every client asks for: the newest one with the ``initialize``
#: handshake, which every server measured here speaks.
PROTOCOL_VERSION = "2025-11-25"
_TIMEOUT = 60.0  # no answer for this long: the server is stuck


class LoadError(Exception):
    """A server answered wrongly, not at all, or went away."""


# ------------------------------------------------------------------ results


@dataclass
class Measurement:
    """What one run measured: completed calls, wall time, per-call latencies (seconds)."""

    calls: int
    elapsed: float
    latencies: list[float] = field(repr=False, default_factory=list)

    @property
    def rate(self) -> float:
        """Calls per second."""
        return self.calls / self.elapsed if self.elapsed > 0 else 0.0

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the latencies, in milliseconds (nearest rank)."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
        return ordered[index] * 1000

    @property
    def p50(self) -> float:
        return self.percentile(0.50)

    @property
    def p99(self) -> float:
        return self.percentile(0.99)

    def summary(self) -> dict[str, float]:
        return {"rate": self.rate, "p50_ms": self.p50, "p99_ms": self.p99, "calls": self.calls}


# ----------------------------------------------------------------- messages


def initialize_request(id: int = 0, version: str = PROTOCOL_VERSION) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "mcp-trio-loadgen", "version": "1.0"},
            },
        }
    )


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'


class EchoCall:
    """Builds ``tools/call`` requests of ``echo`` for one text, cheaply (no encoder per call)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._head = b'{"jsonrpc":"2.0","id":'
        self._tail = (
            b',"method":"tools/call","params":{"name":"echo","arguments":{"text":'
            + msgspec.json.encode(text)
            + b"}}}"
        )

    def request(self, id: int) -> bytes:
        return b"%s%d%s" % (self._head, id, self._tail)


class _Text(msgspec.Struct):
    type: str
    text: str = ""


class _CallResult(msgspec.Struct):
    content: list[_Text]
    isError: bool = False


class _Message(msgspec.Struct):
    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    result: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    error: Any = msgspec.UNSET

    @property
    def is_notification(self) -> bool:
        return self.method is not msgspec.UNSET and self.id is msgspec.UNSET


_message = msgspec.json.Decoder(_Message)
_messages = msgspec.json.Decoder(_Message | list[_Message])
_call_result = msgspec.json.Decoder(_CallResult)
_any = msgspec.json.Decoder()


def _check_answer(
    message: _Message, id: Any, expect_text: str | None, id_only: bool = False
) -> None:
    if message.id != id:
        raise LoadError(f"answer for id {message.id!r}, expected {id!r}")
    if id_only:
        return
    if message.error is not msgspec.UNSET:
        raise LoadError(f"request {id!r} failed: {message.error!r}")
    if message.result is msgspec.UNSET:
        raise LoadError(f"answer {id!r} has no result")
    if expect_text is not None:
        result = _call_result.decode(message.result)
        if result.isError or not result.content or result.content[0].text != expect_text:
            shown = result.content[0].text[:80] if result.content else None
            raise LoadError(f"tools/call {id!r} answered {shown!r} (isError={result.isError})")


# -------------------------------------------------------------------- stdio


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
    for phase_duration, keep in ((warmup, False), (duration, True)):
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
    return Measurement(len(latencies), clock() - start, latencies)


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
                        raise LoadError(
                            f"answer for an id never sent or answered twice: {message.id!r}"
                        )
                    _check_answer(message, message.id, expect, check == "id")
                    latencies.append(now - sent)
                    last = now
                del inbox[:begin]
    finally:
        selector.close()
        os.set_blocking(out_fd, True)
        os.set_blocking(in_fd, True)
    return Measurement(len(latencies), last - start, latencies)


def cold_start(
    argv: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None
) -> float:
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


# --------------------------------------------------------------------- HTTP


@dataclass(frozen=True)
class HttpTarget:
    """An MCP endpoint ``http://host:port/path``."""

    host: str
    port: int
    path: str = "/mcp"

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"


@dataclass
class HttpRequest:
    method: str
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()


@dataclass
class HttpResponse:
    status: int
    headers: dict[str, str]
    body: bytes
    close: bool

    def messages(self) -> list[_Message]:
        """The JSON-RPC messages of the body (a JSON body, or every SSE event's data)."""
        kind = self.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if kind == "text/event-stream":
            found: list[_Message] = []
            for event in self.body.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n\n"):
                data = [
                    line[5:].removeprefix(b" ")
                    for line in event.split(b"\n")
                    if line.startswith(b"data:")
                ]
                payload = b"\n".join(data)
                if payload.strip():
                    decoded = _messages.decode(payload)
                    found.extend(decoded if isinstance(decoded, list) else [decoded])
            return found
        if not self.body.strip():
            return []
        decoded = _messages.decode(self.body)
        return decoded if isinstance(decoded, list) else [decoded]

    def answer(self, id: Any) -> _Message:
        if self.status != 200:
            raise LoadError(f"HTTP {self.status} for request {id!r}: {self.body[:200]!r}")
        for message in self.messages():
            if message.id == id and message.method is msgspec.UNSET:
                return message
        raise LoadError(f"no answer for request {id!r} in the HTTP response")


class ResponseParser:
    """Sans-IO HTTP/1.1 response reader: feed bytes, take whole responses."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._head: tuple[int, dict[str, str]] | None = None
        self._body = bytearray()
        self._mode = ""  # "length", "chunked", "eof"
        self._remaining = 0
        self.eof = False

    def feed(self, data: bytes) -> None:
        if data:
            self._buffer += data
        else:
            self.eof = True

    def next(self) -> HttpResponse | None:
        buffer = self._buffer
        if self._head is None:
            end = buffer.find(b"\r\n\r\n")
            if end < 0:
                if self.eof:
                    raise LoadError("the server closed the connection before answering")
                return None
            lines = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            del buffer[: end + 4]
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
                raise LoadError(f"not an HTTP/1.x status line: {lines[0]!r}")
            status = int(parts[1])
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                value = value.strip()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            if 100 <= status < 200:
                return self.next()
            self._head = (status, headers)
            self._body = bytearray()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._mode, self._remaining = "chunked", -1
            elif "content-length" in headers:
                self._mode, self._remaining = "length", int(headers["content-length"])
            elif status in (204, 304):
                self._mode, self._remaining = "length", 0
            else:
                self._mode = "eof"
        if self._mode == "length":
            take = min(self._remaining, len(buffer))
            self._body += buffer[:take]
            del buffer[:take]
            self._remaining -= take
            if self._remaining:
                if self.eof:
                    raise LoadError("the server closed the connection mid-body")
                return None
            return self._finish(close=False)
        if self._mode == "eof":
            self._body += buffer
            buffer.clear()
            return self._finish(close=True) if self.eof else None
        while True:  # chunked: -1 = at a size line, -2 = in the trailer, n = n bytes of data
            if self._remaining == -1:
                end = buffer.find(b"\r\n")
                if end < 0:
                    break
                size = int(bytes(buffer[:end]).split(b";", 1)[0].strip() or b"0", 16)
                del buffer[: end + 2]
                if size == 0:
                    self._remaining = -2  # trailer section
                else:
                    self._remaining = size
            if self._remaining == -2:
                end = buffer.find(b"\r\n")
                if end < 0:
                    break
                trailer_empty = end == 0
                del buffer[: end + 2]
                if trailer_empty:
                    return self._finish(close=False)
                continue
            if len(buffer) < self._remaining + 2:
                break
            self._body += buffer[: self._remaining]
            del buffer[: self._remaining + 2]
            self._remaining = -1
        if self.eof:
            raise LoadError("the server closed the connection mid-body")
        return None

    def _finish(self, close: bool) -> HttpResponse:
        assert self._head is not None
        status, headers = self._head
        self._head = None
        close = close or headers.get("connection", "").lower() == "close"
        return HttpResponse(status, headers, bytes(self._body), close)


# A client flow is a generator: it yields the next request and is sent its
# response; it returns when it has nothing more to ask.
Flow = Generator[HttpRequest, HttpResponse, None]


class _Connection:
    """One keep-alive connection running one flow at a time (reconnects when the server closes)."""

    def __init__(self, target: HttpTarget, selector: selectors.BaseSelector) -> None:
        self.target = target
        self.selector = selector
        self.flow: Flow | None = None
        self.sock: socket.socket | None = None
        self.parser = ResponseParser()
        self.outbox = bytearray()
        self.writing = False
        self.host_header = f"{target.host}:{target.port}"

    def _connect(self) -> None:
        sock = socket.create_connection((self.target.host, self.target.port), timeout=_TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        self.sock = sock
        self.parser = ResponseParser()
        self.writing = False
        self.selector.register(sock, selectors.EVENT_READ, self)

    def close(self) -> None:
        if self.sock is not None:
            self.selector.unregister(self.sock)
            self.sock.close()
            self.sock = None

    def start(self, request: HttpRequest) -> None:
        if self.sock is None:
            self._connect()
        head = [
            f"{request.method} {self.target.path} HTTP/1.1",
            f"Host: {self.host_header}",
            "Accept: application/json, text/event-stream",
        ]
        if request.body:
            head.append("Content-Type: application/json")
        head.append(f"Content-Length: {len(request.body)}")
        head.extend(f"{name}: {value}" for name, value in request.headers)
        self.outbox += ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + request.body
        self.flush()

    def flush(self) -> None:
        assert self.sock is not None
        try:
            while self.outbox:
                sent = self.sock.send(self.outbox)
                del self.outbox[:sent]
        except BlockingIOError:
            pass
        want = bool(self.outbox)
        if want != self.writing:
            events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
            self.selector.modify(self.sock, events, self)
            self.writing = want

    def readable(self) -> None:
        assert self.sock is not None
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        except ConnectionError as exc:
            raise LoadError(f"connection to {self.target.url} failed: {exc}") from None
        if self.flow is None:
            if not data:
                self.close()  # an idle keep-alive connection the server closed
                return
            raise LoadError(f"{self.target.url} sent bytes nobody asked for: {data[:100]!r}")
        self.parser.feed(data)
        response = self.parser.next()
        if response is None:
            if not data:
                raise LoadError(f"{self.target.url} closed the connection mid-request")
            return
        if response.close:
            self.close()
        self.advance(response)

    def advance(self, response: HttpResponse | None) -> None:
        """Give the flow its response (or start it) and send what it asks next."""
        assert self.flow is not None
        try:
            request = next(self.flow) if response is None else self.flow.send(response)
        except StopIteration:
            self.flow = None
            return
        self.start(request)


class HttpClients:
    """``count`` keep-alive connections to ``target``, driven together by :meth:`run`."""

    def __init__(self, target: HttpTarget, count: int) -> None:
        self.target = target
        self.selector = selectors.DefaultSelector()
        self.connections = [_Connection(target, self.selector) for _ in range(count)]

    def run(self, flows: Sequence[Flow], *, timeout: float = _TIMEOUT) -> None:
        """Run flow ``i`` on connection ``i``; return when every flow has returned."""
        for connection, flow in zip(self.connections, flows, strict=False):
            connection.flow = flow
        try:
            for connection in self.connections[: len(flows)]:
                connection.advance(None)
            while any(c.flow is not None for c in self.connections):
                events = self.selector.select(timeout)
                if not events:
                    raise LoadError(f"{self.target.url}: no progress within {timeout} s")
                for key, mask in events:
                    connection = key.data
                    if mask & selectors.EVENT_WRITE and connection.sock is not None:
                        connection.flush()
                    if mask & selectors.EVENT_READ and connection.sock is not None:
                        connection.readable()
        finally:
            for connection in self.connections:
                if connection.flow is not None:
                    connection.flow.close()
                    connection.flow = None
                    connection.close()  # a half-answered request leaves it unusable

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.selector.close()

    def __enter__(self) -> HttpClients:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
        raise LoadError(
            f"notifications/initialized got HTTP {response.status}: {response.body[:200]!r}"
        )


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
) -> Measurement:
    """``clients`` sessions, each calling ``echo`` back to back, measured for ``duration`` s.

    Sessions are opened first and deleted at the end, outside the measured
    time.  Then every client calls in a loop; the first ``warmup`` seconds
    are not counted.  The rate is the calls that both started and ended inside
    the measured window, divided by its length.
    """
    call = EchoCall(text)
    expect = text if check == "echo" else None
    clock = time.perf_counter
    latencies: list[float] = []
    sessions = [_Session() for _ in range(clients)]
    window: list[float] = []

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
            if t0 >= start and t1 <= end:
                latencies.append(t1 - t0)

    with HttpClients(target, clients) as pool:
        pool.run([_open_session(s) for s in sessions])
        begin = clock() + warmup
        window[:] = [begin, begin + duration]
        pool.run([calls(s) for s in sessions])
        pool.run([_close_session(s) for s in sessions])
    return Measurement(len(latencies), duration, latencies)


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


def wait_for_port(
    host: str, port: int, timeout: float, alive: Callable[[], bool] | None = None
) -> None:
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
