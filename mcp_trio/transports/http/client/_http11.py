"""HTTP/1.1 plumbing of the Streamable HTTP client: a keep-alive connection pool
on h11 over trio streams (TLS through ``trio.SSLStream``), responses read with
size limits, and the failure type every exchange reports.

It knows HTTP, not MCP; :mod:`mcp_trio.transports.http.client` builds the
transport on it.
"""

from __future__ import annotations

import http
import select
import ssl
import urllib.parse
from typing import Any, cast

import h11
import trio

from .... import _jsonrpc as rpc
from ..._base import Frame, RequestId
from ._proxy import Proxy, open_tunnel

__all__ = [
    "TRANSPORT_ERROR",
    "Connection",
    "Failure",
    "Headers",
    "Pool",
    "Response",
    "Target",
    "excerpt",
]

#: The JSON-RPC error code of the errors the transport makes up for a request
#: it could not complete (the implementation-defined range; ``data["reason"]``
#: says what happened).
TRANSPORT_ERROR = -32000
EXCERPT = 300  # characters of a body quoted in an error message
MAX_HEADER_SIZE = 64 * 1024  # the response head (status line and headers)
READ_SIZE = 65536
Headers = list[tuple[str, str | bytes]]


# ------------------------------------------------------------------ errors


class Failure(Exception):
    """Why an exchange failed; becomes the error response of its request(s)."""

    def __init__(self, reason: str, message: str, *, retryable: bool = False, **data: Any) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retryable = retryable
        self.data = data

    def frame(self, id: RequestId) -> Frame:
        data = {"transport": "http", "reason": self.reason, **self.data}
        return Frame(rpc.encode_error(id, TRANSPORT_ERROR, self.message, data))


def excerpt(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", "replace").split())
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "..."


# ------------------------------------------------------------- HTTP plumbing


class Target:
    """Where the endpoint lives."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {url!r}")
        if not parts.hostname:
            raise ValueError(f"the URL names no host: {url!r}")
        self.url = url
        self.scheme = parts.scheme
        self.host = parts.hostname
        default = 443 if parts.scheme == "https" else 80
        self.port = parts.port or default
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if self.port == default else f"{host}:{self.port}"
        self.path = self._path(parts)

    @staticmethod
    def _path(parts: urllib.parse.SplitResult) -> str:
        path = parts.path or "/"
        return f"{path}?{parts.query}" if parts.query else path

    def same_origin(self, url: str) -> str | None:
        """The request target of ``url`` when it is on this origin, else ``None``."""
        parts = urllib.parse.urlsplit(url)
        default = 443 if parts.scheme == "https" else 80
        try:
            port = parts.port or default
        except ValueError:
            return None
        if parts.scheme != self.scheme or parts.hostname != self.host or port != self.port:
            return None
        return self._path(parts)


def raw_socket(stream: trio.abc.Stream) -> trio.socket.SocketType | None:
    while isinstance(stream, trio.SSLStream):  # TLS in TLS through an https:// proxy
        stream = stream.transport_stream
    return stream.socket if isinstance(stream, trio.SocketStream) else None


def close_stream(stream: trio.abc.Stream | None) -> None:
    sock = raw_socket(stream) if stream is not None else None
    if sock is not None:
        sock.close()


class Connection:
    """One HTTP/1.1 connection: an h11 state machine over a trio stream."""

    def __init__(self, stream: trio.abc.Stream, read_timeout: float | None) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=MAX_HEADER_SIZE)
        self.read_timeout = read_timeout
        self.reused = False
        self.received = 0
        self.closed = False
        self.exchange = ""  # "POST http://host:port/mcp": named in failures
        self._eof = False

    def close(self) -> None:
        """Close at once (sync, so it also works in ``finally`` under cancellation)."""
        if self.closed:
            return
        self.closed = True
        close_stream(self.stream)

    def dropped(self) -> bool:
        """An idle connection with something to read was closed (or spoiled) by the server.

        Not checked for TLS, where an idle connection may legitimately hold
        records (session tickets); a closed one is replaced on first use.
        """
        if isinstance(self.stream, trio.SSLStream):
            return self.closed
        sock = raw_socket(self.stream)
        if sock is None or self.closed:
            return True
        try:
            readable, _, _ = select.select([sock.fileno()], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def _broken(self, message: str) -> Failure:
        """The connection failed; a kept-alive one that failed before any answer may be retried."""
        where = f" ({self.exchange})" if self.exchange else ""
        return Failure("connection", message + where, retryable=self.reused and self.received == 0)

    def _closed(self, state: Any) -> Failure:
        """The server closed the connection (in h11 ``state``) where HTTP/1.1 does not allow it."""
        if state in (h11.IDLE, h11.SEND_RESPONSE):
            return self._broken("the server closed the connection before answering")
        return self._broken("the server closed the connection in the middle of the response")

    async def next_event(self) -> Any:
        while True:
            state = self.h11.their_state
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                if self._eof:  # h11 cannot end a message here: the server hung up
                    raise self._closed(state) from None
                raise Failure("connection", f"the server broke HTTP/1.1: {exc}") from None
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.ConnectionClosed):
                    raise self._broken("the server closed the connection")
                return event
            data: bytes | bytearray = b""
            try:
                if self.read_timeout is None:
                    data = await self.stream.receive_some(READ_SIZE)
                else:
                    with trio.move_on_after(self.read_timeout) as scope:
                        data = await self.stream.receive_some(READ_SIZE)
                    if scope.cancelled_caught:
                        raise Failure("connection", f"the server sent nothing for {self.read_timeout} s")
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise self._broken(f"the connection broke: {exc or type(exc).__name__}") from None
            self.received += len(data)
            self._eof = self._eof or not data
            self.h11.receive_data(cast(bytes, data))

    async def start(self, method: str, target: str, headers: Headers, body: bytes | None) -> Any:
        """Send a whole request and wait for the response head."""
        try:
            # One write for head and body: two small segments in a row would
            # meet the peer's delayed ACK (tens of ms per request).
            data = self.h11.send(h11.Request(method=method, target=target, headers=cast(Any, headers))) or b""
            if body:
                data += self.h11.send(h11.Data(data=body)) or b""
            data += self.h11.send(h11.EndOfMessage()) or b""
            await self.stream.send_all(data)
        except (h11.LocalProtocolError, UnicodeError) as exc:
            raise Failure("bad_request", f"cannot send this HTTP request: {exc}") from None
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise self._broken(f"the connection broke while sending: {exc or type(exc).__name__}") from None
        while True:
            event = await self.next_event()
            if isinstance(event, h11.Response):
                return event
            # InformationalResponse (1xx): keep waiting for the real one.

    def reusable(self) -> bool:
        if self.closed or self.h11.our_state is not h11.DONE or self.h11.their_state is not h11.DONE:
            return False
        try:
            self.h11.start_next_cycle()
        except h11.LocalProtocolError:
            return False
        self.reused = True
        self.received = 0
        return True


class Response:
    """A response head and the connection its body still comes on."""

    def __init__(self, pool: Pool, conn: Connection, event: Any) -> None:
        self._pool = pool
        self._conn = conn
        self.status: int = event.status_code
        self.reason: str = event.reason.decode("latin-1", "replace")
        self.headers: dict[str, str] = {}
        for name, value in event.headers:
            key, text = name.decode("latin-1"), value.decode("latin-1")
            if key == "www-authenticate" and key in self.headers:
                # several challenges (Bearer, DPoP ...) may come as separate headers
                self.headers[key] += ", " + text
            else:
                self.headers.setdefault(key, text)
        self._done = False
        self._finished = False

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").partition(";")[0].strip().lower()

    def describe(self) -> str:
        reason = self.reason
        if not reason:
            try:
                reason = http.HTTPStatus(self.status).phrase
            except ValueError:
                pass
        return f"HTTP {self.status}{' ' + reason if reason else ''}"

    async def next_chunk(self) -> bytes | None:
        """The next piece of the body (``None`` at its end)."""
        if self._done:
            return None
        while True:
            event = await self._conn.next_event()
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._done = True
                return None

    @property
    def done(self) -> bool:
        """The whole body has been read."""
        return self._done

    def buffered_chunk(self) -> bytes | None:
        """The next piece of the body if it is already here (no waiting), else ``None``."""
        if self._done or self._finished:
            return None
        while True:
            try:
                event = self._conn.h11.next_event()
            except h11.RemoteProtocolError:
                return None  # next_chunk reports it
            if isinstance(event, h11.Data):
                if event.data:
                    return bytes(event.data)
                continue
            if isinstance(event, h11.EndOfMessage):
                self._done = True
            return None

    async def read(self, limit: int) -> bytes:
        """The whole body, or ``Failure("too_large")`` beyond ``limit`` bytes."""
        length = self.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            raise Failure(
                "too_large",
                f"the response body ({length} bytes) is larger than max_message_size ({limit} bytes)",
                limit=limit,
            )
        body = bytearray()
        while (chunk := await self.next_chunk()) is not None:
            body += chunk
            if len(body) > limit:
                raise Failure(
                    "too_large",
                    f"the response body is larger than max_message_size ({limit} bytes)",
                    limit=limit,
                )
        return bytes(body)

    async def read_prefix(self, limit: int) -> bytes:
        """Up to ``limit`` bytes of the body; the rest is dropped with the connection."""
        body = bytearray()
        try:
            while len(body) <= limit and (chunk := await self.next_chunk()) is not None:
                body += chunk
        except Failure:
            pass
        return bytes(body[:limit])

    def finish(self) -> None:
        """Give the connection back (if the body was read to its end) or close it."""
        if self._finished:
            return
        self._finished = True
        if self._done and self._conn.reusable():
            self._pool.release(self._conn)
        else:
            self._conn.close()


class Pool:
    """Keep-alive connections to one origin, directly or through an HTTP ``proxy``.

    Through a proxy, ``https`` connections (and every one with ``tunnel``, as
    WebSockets need) are tunnelled with ``CONNECT``; plain ``http`` requests
    go to the proxy in absolute form (see :mod:`._proxy`).
    """

    def __init__(
        self,
        target: Target,
        *,
        ssl_context: ssl.SSLContext | None,
        connect_timeout: float,
        read_timeout: float | None,
        max_idle: int,
        proxy: Proxy | None = None,
        tunnel: bool = False,
    ) -> None:
        self.target = target
        self.proxy = proxy
        self.tunnel = proxy is not None and (tunnel or target.scheme == "https")
        self._proxy_ssl_context: ssl.SSLContext | None = None
        self.ssl_context = ssl_context
        if target.scheme == "https" and ssl_context is None:
            self.ssl_context = ssl.create_default_context()
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self.max_idle = max_idle
        self._idle: list[Connection] = []
        self.closed = False
        self.opened = 0  # connections made (for tests and statistics)

    async def _connect(self) -> Connection:
        target, proxy = self.target, self.proxy
        where = f"{target.host}:{target.port}" + (f" through the proxy {proxy.url}" if proxy else "")
        stream: trio.abc.Stream | None = None
        try:
            with trio.move_on_after(self.connect_timeout) as scope:
                if proxy is None:
                    stream = await trio.open_tcp_stream(target.host, target.port)
                else:
                    stream = await trio.open_tcp_stream(proxy.host, proxy.port)
                    if proxy.tls:
                        stream = trio.SSLStream(
                            stream, self._proxy_tls(), server_hostname=proxy.host, https_compatible=True
                        )
                        await stream.do_handshake()
                    if self.tunnel:
                        await open_tunnel(stream, proxy, target.host, target.port)
                if self.ssl_context is not None:
                    stream = trio.SSLStream(
                        stream, self.ssl_context, server_hostname=target.host, https_compatible=True
                    )
                    await stream.do_handshake()
        except (OSError, trio.BrokenResourceError) as exc:
            close_stream(stream)
            cause = exc.__cause__ if isinstance(exc, trio.BrokenResourceError) and exc.__cause__ else exc
            raise Failure("connect", f"cannot connect to {where}: {cause}") from None
        except BaseException:
            close_stream(stream)
            raise
        if scope.cancelled_caught or stream is None:
            close_stream(stream)
            raise Failure("connect", f"cannot connect to {where}: no answer within {self.connect_timeout} s")
        self.opened += 1
        return Connection(stream, self.read_timeout)

    def _proxy_tls(self) -> ssl.SSLContext:
        """The TLS settings for an ``https://`` proxy: the system's (made once)."""
        if self._proxy_ssl_context is None:
            self._proxy_ssl_context = ssl.create_default_context()
        return self._proxy_ssl_context

    def _take_idle(self) -> Connection | None:
        while self._idle:
            conn = self._idle.pop()
            if not conn.dropped():
                return conn
            conn.close()
        return None

    def release(self, conn: Connection) -> None:
        if self.closed or len(self._idle) >= self.max_idle:
            conn.close()
        else:
            self._idle.append(conn)

    async def request(
        self, method: str, target: str, headers: Headers, body: bytes | None = None
    ) -> Response:
        """Send a request; returns once the response head is in.

        A kept-alive connection that turns out to be closed before the
        server answered anything is replaced by a new one, once.
        """
        url = f"{self.target.scheme}://{self.target.host_header}{target}"
        if self.proxy is not None and not self.tunnel:  # absolute form, to the proxy
            target, headers = url, [*headers, *self.proxy.headers()]
        for attempt in range(2):
            conn = self._take_idle() if attempt == 0 else None
            if conn is None:
                conn = await self._connect()
            conn.exchange = f"{method} {url}"
            try:
                event = await conn.start(method, target, headers, body)
            except Failure as exc:
                conn.close()
                if exc.retryable and attempt == 0:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            return Response(self, conn, event)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.closed = True
        while self._idle:
            self._idle.pop().close()


# ----------------------------------------------------------------- the channel
