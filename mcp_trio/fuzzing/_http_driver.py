"""The raw Streamable HTTP driver: post bodies to an endpoint over plain HTTP/1.1.

:class:`HttpConnection` speaks h11 on a blocking socket, one connection per exchange,
carrying ``Mcp-Session-Id`` and ``MCP-Protocol-Version`` once a session exists, and reads
JSON or SSE answers (:class:`_SSE`, just enough of it).  Synchronous, with a deadline on
every wait.
"""

from __future__ import annotations

import socket
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

import h11

from ._connection import STREAM_GRACE, Connection, Headers, HttpExchange, _flatten, _key, loads

__all__ = ["HttpConnection", "HttpTarget", "replace_headers"]

MAX_RESPONSE = 64 * 1024 * 1024
ACCEPT_BOTH = "application/json, text/event-stream"


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

    def _send(
        self, payloads: Sequence[bytes], want: set[Any], deadline: float, headers: Headers, startup: float
    ) -> None:
        # (an HTTP target is listening before the fuzzer connects: no start-up allowance)
        for i, body in enumerate(payloads):
            extra = headers[i] if i < len(headers) else None
            hdrs = self.base_headers()
            if extra:
                replace_headers(hdrs, extra)
            ids = _request_ids(body)
            self.request("POST", body, hdrs, ids, max(0.05, deadline - time.monotonic()), payload=i)

    def wait(self, want: set[Any], timeout: float) -> None:
        return  # every exchange is read to its end in request()

    def drain(self, settle: float) -> None:
        return

    def request(
        self,
        method: str,
        body: bytes,
        headers: dict[str, str],
        want: set[Any],
        timeout: float,
        payload: int | None = None,
        raw: bytes | None = None,
        disconnect_at_event_id: bool = False,
    ) -> HttpExchange:
        """One exchange on a new connection: read the answer until every id in ``want``
        came back, the body ends, or ``timeout``.  With ``disconnect_at_event_id`` an SSE
        answer is read only up to its first event that has an ``id`` (kept in
        :attr:`HttpExchange.event_id`), and the connection is dropped there, mid-stream."""
        hlist = [(k, v) for k, v in headers.items()]
        ex = HttpExchange(method, hlist, body, payload=payload, expects_response=bool(want), t=self.now())
        index = len(self.http)
        ex.index = index
        self.http.append(ex)
        self.events.append(
            {"t": self.now(), "dir": "http", "method": method, "headers": hlist, "index": index}
        )
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
        self.events.append(
            {
                "t": self.now(),
                "dir": "http-status",
                "index": index,
                "status": ex.status,
                "headers": ex.response_headers,
                **({"error": ex.error} if ex.error else {}),
            }
        )
        return ex

    def _exchange(
        self,
        sock: socket.socket,
        ex: HttpExchange,
        hlist: list[tuple[str, str]],
        body: bytes,
        raw: bytes | None,
        want: set[Any],
        deadline: float,
        index: int,
        disconnect_at_event_id: bool = False,
    ) -> None:
        conn = h11.Connection(h11.CLIENT)
        if raw is not None:
            # h11 only reads a response to a request it saw: tell it one went out
            conn.send(
                h11.Request(
                    method=ex.method,
                    target=self.target.path,
                    headers=[("Host", self.target.host_header), ("Content-Length", "0")],
                )
            )
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
        answered = False
        collected = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                left, data = deadline - time.monotonic(), b""
                if left > 0:
                    sock.settimeout(left)
                    try:
                        data = sock.recv(65536)
                    except TimeoutError:
                        left = 0
                if left <= 0:
                    ex.stream_open = answered
                    ex.error = None if answered else ex.error or "timeout"
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
                            self.events.append(
                                {
                                    "t": self.now(),
                                    "dir": "note",
                                    "http": index,
                                    "text": f"disconnected after SSE event id {event_id!r}",
                                }
                            )
                            return
                    if want and want <= self.answered() and not answered:
                        # answered: the stream should end now; wait a moment to see it does
                        answered = True
                        deadline = min(deadline, time.monotonic() + STREAM_GRACE)
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

    def _send_reply(self, reply: bytes) -> None:
        self.request("POST", reply, self.base_headers(), set(), 2.0)

    def alive(self) -> bool:
        return self.reachable

    def close(self) -> None:
        if self.session_id is not None:
            self.request(
                "DELETE",
                b"",
                {k: v for k, v in self.base_headers().items() if k != "Content-Type"},
                set(),
                2.0,
            )


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
        self.host_header = (
            f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        )

    def describe(self) -> dict[str, Any]:
        return {"kind": "http", "url": self.url}

    def open(self) -> HttpConnection:
        return HttpConnection(self)


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
        value = loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return set()
    return {
        _key(m["id"])
        for m in _flatten(value)
        if isinstance(m, dict) and isinstance(m.get("method"), str) and "id" in m
    }


def replace_headers(headers: dict[str, str], changes: Mapping[str, str | None]) -> None:
    """Set each header of ``changes`` in ``headers``, in place of one of that name in any case
    (a value None removes it)."""
    for k, v in changes.items():
        for existing in [h for h in headers if h.lower() == k.lower()]:
            del headers[existing]
        if v is not None:
            headers[k] = v
