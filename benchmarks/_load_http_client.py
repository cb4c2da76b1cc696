"""Load generator: raw-socket HTTP/1.1 clients, many keep-alive connections on one selector.

:class:`ResponseParser` reads responses sans-IO (bodies sized by ``Content-Length``, chunked, or
ending with the connection; JSON bodies or SSE streams).  A client flow is a generator that
yields its next request and is sent the response; :class:`HttpClients` runs one flow per
connection until every flow has returned.  No event loop framework.
"""

from __future__ import annotations

import selectors
import socket
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from benchmarks._load_messages import _TIMEOUT, LoadError, _Message, _messages


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
                    line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
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
