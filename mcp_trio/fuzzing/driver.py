"""Raw drivers: talk to a target below any MCP engine, so anything can be sent.

* :class:`StdioTarget` launches a command and writes bytes to its stdin; it
  reads stdout line by line (each line should be one JSON-RPC message) and
  keeps a tail of stderr.
* :class:`HttpTarget` posts bodies to a Streamable HTTP endpoint over plain
  HTTP/1.1 (h11 on a blocking socket, one connection per exchange), carrying
  ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` once a session exists, and
  reads JSON or SSE answers.

Both are synchronous with a deadline on every wait, so the hypothesis
runner can call them from a test function; nothing blocks longer than the
timeout it was given.  Every byte sent and received is logged, with the time
since the connection opened, in :attr:`Connection.events`.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import select
import shlex
import socket
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import h11

__all__ = ["Connection", "HttpExchange", "HttpTarget", "Received", "StdioTarget", "Target", "encode_bytes"]

STDERR_TAIL = 16 * 1024
MAX_RESPONSE = 64 * 1024 * 1024
ACCEPT_BOTH = "application/json, text/event-stream"


def encode_bytes(data: bytes) -> dict[str, str]:
    """Bytes for a JSON transcript: text when they are UTF-8, else Base64."""
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(entry: dict[str, str]) -> bytes:
    if "base64" in entry:
        return base64.b64decode(entry["base64"])
    return entry["text"].encode("utf-8", "surrogatepass")


@dataclass
class Received:
    """One message (or line, or body) that came back."""

    t: float
    data: bytes
    message: Any = None  # the parsed JSON, when it parsed
    parsed: bool = False
    http: int | None = None  # index of the HTTP exchange it came in


@dataclass
class HttpExchange:
    """One HTTP request and what came back (status and headers; messages go to ``received``)."""

    method: str
    headers: list[tuple[str, str]]
    body: bytes
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    content_type: str = ""
    body_excerpt: bytes = b""
    error: str | None = None
    event_id: str | None = None  # the SSE event id the stream was dropped at (see request())
    payload: int | None = None  # index of the payload in the case
    expects_response: bool = False
    t: float = 0.0
    index: int = -1  # position in Connection.http


class Connection:
    """A live connection to the target; subclasses move the bytes."""

    kind = "?"

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.events: list[dict[str, Any]] = []
        self.received: list[Received] = []
        self.http: list[HttpExchange] = []
        self.junk: list[bytes] = []  # stdout lines that are not JSON-RPC

    def now(self) -> float:
        return round(time.monotonic() - self.started, 6)

    def log(self, direction: str, data: bytes, **extra: Any) -> None:
        self.events.append({"t": self.now(), "dir": direction, **encode_bytes(data[:65536]),
                            **({"size": len(data)} if len(data) > 65536 else {}), **extra})

    def _got(self, data: bytes, http: int | None = None) -> None:
        rec = Received(self.now(), data, http=http)
        try:
            rec.message = json.loads(data.decode("utf-8"))
            rec.parsed = True
        except (UnicodeDecodeError, ValueError, RecursionError):
            pass
        if not _is_jsonrpc(rec.message) or not rec.parsed:
            self.junk.append(data)
        self.received.append(rec)
        self.log("recv", data, **({"http": http} if http is not None else {}))

    # interface
    def send(self, payloads: Sequence[bytes], *, want: set[Any], timeout: float,
             headers: Sequence[dict[str, str] | None] | None = None) -> None:
        raise NotImplementedError

    def wait(self, want: set[Any], timeout: float) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        return True

    def exit_code(self) -> int | None:
        return None

    def stderr_tail(self) -> str:
        return ""

    def close(self) -> None:
        pass

    def answered(self) -> set[Any]:
        out = set()
        for rec in self.received:
            for msg in _flatten(rec.message):
                if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
                    out.add(_key(msg.get("id")))
        return out


def _key(value: Any) -> Any:
    """Ids compared as JSON: ``1`` and ``"1"`` differ, ``1`` and ``True`` too."""
    return json.dumps(value, sort_keys=True)


def _flatten(message: Any) -> list[Any]:
    return message if isinstance(message, list) else [message]


def _is_jsonrpc(message: Any) -> bool:
    items = _flatten(message)
    return bool(items) and all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in items)


# ------------------------------------------------------------------- stdio


class CommandTarget:
    """A peer we launch: ``command`` (a string split like a shell would, or an argv list),
    run in ``cwd`` with ``env``."""

    kind = "command"

    def __init__(self, command: str | Sequence[str], *, cwd: str | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("empty command")
        self.cwd = cwd
        self.env = env

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "command": self.argv, **({"cwd": self.cwd} if self.cwd else {})}


class StdioTarget(CommandTarget):
    """A server launched as a command; MCP over its stdin/stdout."""

    kind = "stdio"

    def open(self) -> StdioConnection:
        return StdioConnection(self)


class StdioConnection(Connection):
    kind = "stdio"

    def __init__(self, target: StdioTarget) -> None:
        super().__init__()
        self.proc = subprocess.Popen(
            target.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=target.cwd, env=target.env, start_new_session=True,
        )
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr
        os.set_blocking(self.proc.stdin.fileno(), False)
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr = bytearray()
        self._threads = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()
        self._eof = False

    def _read_stdout(self) -> None:
        fd = self.proc.stdout.fileno()  # type: ignore[union-attr]
        buf = bytearray()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                if buf.strip():
                    self._lines.put(bytes(buf))
                self._lines.put(None)
                return
            buf += chunk
            while (nl := buf.find(b"\n")) >= 0:
                line = bytes(buf[:nl]).rstrip(b"\r")
                del buf[: nl + 1]
                if line.strip():
                    self._lines.put(line)

    def _read_stderr(self) -> None:
        fd = self.proc.stderr.fileno()  # type: ignore[union-attr]
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            self._stderr += chunk
            if len(self._stderr) > 2 * STDERR_TAIL:
                del self._stderr[:-STDERR_TAIL]

    def _write(self, data: bytes, deadline: float) -> bool:
        fd = self.proc.stdin.fileno()  # type: ignore[union-attr]
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                _, writable, _ = select.select([], [fd], [], left)
                if writable:
                    view = view[os.write(fd, view):]
            except (BrokenPipeError, OSError):
                return False
        return True

    def send(self, payloads: Sequence[bytes], *, want: set[Any], timeout: float,
             headers: Sequence[dict[str, str] | None] | None = None) -> None:
        deadline = time.monotonic() + timeout
        for data in payloads:
            self.log("send", data)
        blob = b"".join(p + b"\n" for p in payloads)
        if not self._write(blob, deadline):
            self.events.append({"t": self.now(), "dir": "note", "text": "writing to stdin failed or timed out"})
        self.wait(want, max(0.0, deadline - time.monotonic()))

    def wait(self, want: set[Any], timeout: float) -> None:
        """Read until every id in ``want`` is answered, the output ends, or ``timeout``."""
        if not want:
            self.drain(0.0)
            return
        deadline = time.monotonic() + timeout
        while not self._eof:
            if want <= self.answered():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                line = self._lines.get(timeout=min(left, 0.05))
            except queue.Empty:
                continue
            if line is None:
                self._eof = True
                return
            self._got(line)
            self._answer_server_requests()

    def drain(self, settle: float) -> None:
        """Take what is already there, waiting at most ``settle`` seconds for more."""
        deadline = time.monotonic() + settle
        while not self._eof:
            left = deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(left, 0.0)) if left > 0 else self._lines.get_nowait()
            except queue.Empty:
                return
            if line is None:
                self._eof = True
                return
            self._got(line)
            self._answer_server_requests()

    def _answer_server_requests(self) -> None:
        """A request from the server gets -32601 at once, so it never waits on us."""
        rec = self.received[-1]
        for msg in _flatten(rec.message):
            if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                    "error": {"code": -32601, "message": "the fuzzer answers no requests"}})
                self.log("send", reply.encode(), auto=True)
                self._write(reply.encode() + b"\n", time.monotonic() + 1.0)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def settle_exit(self, grace: float) -> None:
        try:
            self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def stderr_tail(self) -> str:
        return bytes(self._stderr[-STDERR_TAIL:]).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        for sig in ("wait", "terminate", "kill"):
            if sig != "wait":
                try:
                    getattr(self.proc, sig)()
                except ProcessLookupError:
                    pass
            try:
                self.proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                continue
        for t in self._threads:
            t.join(timeout=1.0)
        for stream in (self.proc.stdout, self.proc.stderr):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


# -------------------------------------------------------------------- HTTP


class HttpTarget:
    """A running Streamable HTTP endpoint (``http://host:port/path``)."""

    kind = "http"

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"want an http:// URL, got {url!r}")
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 80
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.host_header = f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"

    def describe(self) -> dict[str, Any]:
        return {"kind": "http", "url": self.url}

    def open(self) -> HttpConnection:
        return HttpConnection(self)


class HttpConnection(Connection):
    kind = "http"

    def __init__(self, target: HttpTarget) -> None:
        super().__init__()
        self.target = target
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.reachable = True

    def base_headers(self) -> dict[str, str]:
        headers = {"Host": self.target.host_header, "Accept": ACCEPT_BOTH, "Content-Type": "application/json"}
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        return headers

    def send(self, payloads: Sequence[bytes], *, want: set[Any], timeout: float,
             headers: Sequence[dict[str, str] | None] | None = None) -> None:
        deadline = time.monotonic() + timeout
        for i, body in enumerate(payloads):
            extra = headers[i] if headers is not None and i < len(headers) else None
            hdrs = self.base_headers()
            if extra:
                for k, v in extra.items():
                    for existing in [h for h in hdrs if h.lower() == k.lower()]:
                        del hdrs[existing]
                    if v is not None:
                        hdrs[k] = v
            ids = _request_ids(body)
            self.request("POST", body, hdrs, ids, max(0.05, deadline - time.monotonic()), payload=i)

    def wait(self, want: set[Any], timeout: float) -> None:
        return  # every exchange is read to its end in request()

    def drain(self, settle: float) -> None:
        return

    def request(self, method: str, body: bytes, headers: dict[str, str], want: set[Any], timeout: float,
                payload: int | None = None, raw: bytes | None = None,
                disconnect_at_event_id: bool = False) -> HttpExchange:
        """One exchange on a new connection: read the answer until every id in ``want``
        came back, the body ends, or ``timeout``.  With ``disconnect_at_event_id`` an SSE
        answer is read only up to its first event that has an ``id`` (kept in
        :attr:`HttpExchange.event_id`), and the connection is dropped there, mid-stream."""
        hlist = [(k, v) for k, v in headers.items()]
        ex = HttpExchange(method, hlist, body, payload=payload, expects_response=bool(want), t=self.now())
        index = len(self.http)
        ex.index = index
        self.http.append(ex)
        self.events.append({"t": self.now(), "dir": "http", "method": method, "headers": hlist, "index": index})
        self.log("send", body if raw is None else raw, http=index)
        deadline = time.monotonic() + timeout
        try:
            sock = socket.create_connection((self.target.host, self.target.port), timeout=max(0.05, timeout))
        except OSError as exc:
            ex.error = f"connect: {exc}"
            self.reachable = False
            return ex
        try:
            self._exchange(sock, ex, hlist, body, raw, want, deadline, index, disconnect_at_event_id)
        except (OSError, h11.ProtocolError) as exc:
            ex.error = f"{type(exc).__name__}: {exc}"
        finally:
            sock.close()
        self.events.append({"t": self.now(), "dir": "http-status", "index": index, "status": ex.status,
                            "headers": ex.response_headers, **({"error": ex.error} if ex.error else {})})
        return ex

    def _exchange(self, sock: socket.socket, ex: HttpExchange, hlist: list[tuple[str, str]], body: bytes,
                  raw: bytes | None, want: set[Any], deadline: float, index: int,
                  disconnect_at_event_id: bool = False) -> None:
        conn = h11.Connection(h11.CLIENT)
        if raw is not None:
            # h11 only reads a response to a request it saw: tell it one went out
            conn.send(h11.Request(method=ex.method, target=self.target.path,
                                  headers=[("Host", self.target.host_header), ("Content-Length", "0")]))
            conn.send(h11.EndOfMessage())
            sock.sendall(raw)
            if b"Connection: close" in raw.split(b"\r\n\r\n", 1)[0]:
                try:
                    sock.shutdown(socket.SHUT_WR)  # a truncated body: the rest never comes
                except OSError:
                    pass
        else:
            if not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in hlist):
                hlist = [*hlist, ("Content-Length", str(len(body)))]
            out = conn.send(h11.Request(method=ex.method, target=self.target.path, headers=hlist))
            out += conn.send(h11.Data(data=body)) if body else b""
            out += conn.send(h11.EndOfMessage())
            sock.sendall(out)
        sse = None
        collected = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                left = deadline - time.monotonic()
                if left <= 0:
                    ex.error = ex.error or "timeout"
                    break
                sock.settimeout(left)
                try:
                    data = sock.recv(65536)
                except TimeoutError:
                    ex.error = "timeout"
                    break
                conn.receive_data(data)
                continue
            if isinstance(event, h11.Response | h11.InformationalResponse):
                if isinstance(event, h11.InformationalResponse):
                    continue
                ex.status = event.status_code
                ex.response_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in event.headers]
                for k, v in ex.response_headers:
                    if k.lower() == "content-type":
                        ex.content_type = v.split(";")[0].strip().lower()
                    if k.lower() == "mcp-session-id" and self.session_id is None:
                        self.session_id = v
                if ex.content_type == "text/event-stream":
                    sse = _SSE()
            elif isinstance(event, h11.Data):
                if sse is not None:
                    for event_id, data in sse.feed(bytes(event.data)):
                        if data.strip():
                            self._got(data, http=index)
                            self._answer_server_requests()
                        if disconnect_at_event_id and event_id is not None:
                            ex.event_id = event_id
                            self.events.append({"t": self.now(), "dir": "note", "http": index,
                                                "text": f"disconnected after SSE event id {event_id!r}"})
                            return
                    if want and want <= self.answered():
                        break
                else:
                    collected += event.data
                    if len(collected) > MAX_RESPONSE:
                        ex.error = "response too large"
                        break
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                break
        if sse is None:
            ex.body_excerpt = bytes(collected[:4096])
            if collected and ex.content_type == "application/json":
                self._got(bytes(collected), http=index)
            elif collected:
                self.log("recv-body", bytes(collected[:65536]), http=index)

    def _answer_server_requests(self) -> None:
        rec = self.received[-1]
        for msg in _flatten(rec.message):
            if isinstance(msg, dict) and isinstance(msg.get("method"), str) and "id" in msg:
                reply = json.dumps({"jsonrpc": "2.0", "id": msg["id"],
                                    "error": {"code": -32601, "message": "the fuzzer answers no requests"}})
                self.request("POST", reply.encode(), self.base_headers(), set(), 2.0)

    def alive(self) -> bool:
        return self.reachable

    def close(self) -> None:
        if self.session_id is not None:
            self.request("DELETE", b"", {k: v for k, v in self.base_headers().items() if k != "Content-Type"},
                         set(), 2.0)


class _SSE:
    """Just enough SSE: the data of each event, and the id it set (if any)."""

    def __init__(self) -> None:
        self.buf = bytearray()
        self.data: list[bytes] = []
        self.event_id: str | None = None

    def feed(self, chunk: bytes) -> list[tuple[str | None, bytes]]:
        self.buf += chunk.replace(b"\r\n", b"\n")
        out = []
        while (nl := self.buf.find(b"\n")) >= 0:
            line = bytes(self.buf[:nl])
            del self.buf[: nl + 1]
            if not line:
                if self.data or self.event_id is not None:
                    out.append((self.event_id, b"\n".join(self.data)))
                self.data = []
                self.event_id = None
            elif line.startswith(b"data:"):
                value = line[5:]
                self.data.append(value[1:] if value.startswith(b" ") else value)
            elif line.startswith(b"id:"):
                value = line[3:]
                self.event_id = (value[1:] if value.startswith(b" ") else value).decode("utf-8", "replace")
        return out


def _request_ids(body: bytes) -> set[Any]:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return set()
    return {
        _key(m["id"]) for m in _flatten(value)
        if isinstance(m, dict) and isinstance(m.get("method"), str) and "id" in m
    }


Target = StdioTarget | HttpTarget
