"""The lean front door: :func:`serve_h11` serves any :class:`Handler` over
HTTP/1.1 with h11 on trio sockets, with no ASGI layer.

One task per connection parses and answers its requests one at a time; a
second reads the socket, so a client that leaves mid-answer is noticed at
once.  Limits (431, 413, 408, keep-alive and write timeouts, connections at
once) are those of :func:`serve_h11`.
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import h11
import trio

from .... import _jsonrpc as rpc
from .._replies import _BOTH_LENGTHS, _Reply
from .._request import _LINGER_BYTES, _LINGER_SECONDS, Handler, HttpRequest, Wakeup, _routes, _send_reply
from . import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    _gate,
)
from ._forwarded import TrustedProxies
from ._gate import ConnectionGate, listener_url, open_listeners, server_ssl_context
from ._proxy_protocol import ProxyProtocolError, parse_proxy_header
from ._responder import _H11Responder

__all__ = ["serve_h11", "server_ssl_context"]

log = logging.getLogger("mcp_trio.http")


_READ_SIZE = 65536
#: Header names as the handlers see them (lower-case text), by their bytes: the few a
#: client sends again and again are decoded once (a bounded table: made-up names pass by).
_NAMES: dict[bytes, str] = {}
_NAMES_MAX = 512
#: How long a client's reset to the ``100 Continue`` probe is waited for
#: (see :meth:`_H11Connection._left`): past any round trip.
_PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class _H11Limits:
    max_header_size: int
    keepalive_timeout: float
    request_timeout: float
    write_timeout: float
    header_timeout: float
    parser: str = "h11"  # or "httptools" (llhttp, see _llhttp)
    proxies: TrustedProxies | None = None  # (whose Forwarded / X-Forwarded-For are believed)
    proxy_protocol: TrustedProxies | None = None  # (balancers that send a PROXY protocol header)


class _H11Connection:
    """One client connection of :func:`serve_h11`: requests answered one at a time.

    The connection's own task parses requests and answers them; from its
    first answer on, a second task is the only one that reads the socket and
    feeds h11, so a client that leaves mid-answer is noticed at once (its EOF
    cancels the answer; the request itself goes on in its session).  Until
    then the connection's task reads itself: a connection that never sends a
    whole request (a flood, slowloris) costs one task, and each of its bytes
    one step.  It stays at most
    ``_READ_SIZE`` bytes ahead of the parser (a pipelining client waits for
    the answers), so memory stays bounded.  That costs one task per
    connection instead of a task and a nursery per request, and no extra read
    or cancellation when an answer is quick.
    """

    def __init__(
        self,
        stream: trio.SocketStream | trio.SSLStream[trio.SocketStream],
        limits: _H11Limits,
        table: dict[str, Handler],
        default: Handler,
        clock: _gate.ReadClock,
        gate: ConnectionGate | None = None,
    ) -> None:
        self.stream = stream
        #: The TCP connection (under TLS, the stream the TLS one runs over).
        self.socket_stream = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
        self.gate = gate  # told when the connection is busy, reads a body, or is idle
        self.limits = limits
        self.table = table
        self.default = default
        self.conn: Any
        if limits.parser == "h11":
            self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_size)
        else:
            from ._httptools import LlhttpConnection

            self.conn = LlhttpConnection(limits.max_header_size)
        self.want = False  # the parser waits for bytes
        self.answering: _H11Responder | None = None
        self.ahead = 0  # bytes read since the parser last asked for more
        self.received = 0  # bytes read in all
        self.served = 0  # requests answered
        self.receiver = _gate.Receiver(stream)
        self.reader_lot = Wakeup()  # the reader waits here while far enough ahead
        self.data_lot = Wakeup()  # the connection's task waits here for the reader's bytes
        self.cancel_scope = trio.CancelScope()
        self.rejected = False  # an error answer ends the connection (then a lingering close)
        self.read_scope = trio.CancelScope()
        self.read_deadline = math.inf  # (see serve)
        self.clock = clock
        self.in_request = False  # the request being read has its head whole
        self.body_waited = False  # its body did not all come with its head
        self.mark = 0  # bytes received when the request being read began
        #: Where the reader task starts at the first answer (None once started).
        self.nursery: trio.Nursery | None = None
        self.client = _gate.peer_address(self.socket_stream)  # for per-client limits

    async def serve(self) -> None:
        self.clock.connections.add(self)
        async with trio.open_nursery() as nursery:
            self.cancel_scope = nursery.cancel_scope
            self.nursery = nursery
            try:
                # One scope for the connection times each request's reading: its
                # read_deadline is set while a read waits (see _next_head), lifted once
                # the request is whole, and kept by the server's ReadClock (cheaper than
                # moving a trio deadline twice per request); a timeout ends the connection.
                with trio.CancelScope() as self.read_scope:
                    if self.limits.proxy_protocol is None or await self._proxy_header():
                        while await self._exchange():
                            pass
                timed_out = self.read_scope.cancelled_caught and not self.rejected  # (no 408 after an answer)
                if timed_out and (self.in_request or self.received != self.mark):
                    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError, ValueError):
                        await self._reject(408, "Request Timeout")  # (a request or its head: too slow)
            finally:
                self.clock.connections.discard(self)
                nursery.cancel_scope.cancel()
        if self.rejected:
            await self._linger()

    async def _proxy_header(self) -> bool:
        """From a trusted load balancer, read its PROXY protocol header (see
        :mod:`._proxy_protocol`) within ``header_timeout``: the client is the one it names.
        False (the connection ends unanswered): none came whole, or it was not one."""
        proxies = self.limits.proxy_protocol
        if proxies is None or self.client is None or not proxies.trusts(self.client):
            return True  # (a peer that is no trusted balancer speaks plain HTTP)
        self._time_read(trio.current_time() + self.limits.header_timeout)
        data = b""
        try:
            while (header := parse_proxy_header(data)) is None:
                chunk = await self.receiver.receive(_READ_SIZE, checkpoint=bool(data))
                if not chunk:
                    return False
                data += chunk
                self.received += len(chunk)
        except ProxyProtocolError as exc:
            log.info("connection from %s refused: %s", self.client, exc)
            return False
        if header.client is not None:
            self.client = header.client
        if len(data) > header.length:
            self.conn.receive_data(data[header.length :])  # (the first request, begun)
        return True

    async def _read_loop(self) -> None:
        while True:
            while not self.want and self.ahead >= _READ_SIZE:
                await self.reader_lot.wait()
            data = await self.receiver.receive(_READ_SIZE)  # (None: a reset)
            if not data:
                await self._closed(reset=data is None)
                return
            self.ahead = 0 if self.want else self.ahead + len(data)
            self.received += len(data)
            self.want = False
            self.conn.receive_data(data)
            self.data_lot.wake()

    async def _closed(self, reset: bool) -> None:
        """The client closed its side (EOF) or reset the connection.

        Between requests, or before its request is answered, the parser sees
        the end once it has taken what came before.  While an answer is under
        way, a client that left ends it at once (the request goes on in its
        session); a client that only closed its side for writing (a half-close
        after a whole request) still gets its answer: see :meth:`_departed`.
        """
        self.conn.receive_data(b"")
        self.data_lot.wake()
        responder = self.answering
        if responder is not None and (reset or await self._departed(responder)):
            responder.gone = True
            self.cancel_scope.cancel()

    async def _departed(self, responder: _H11Responder) -> bool:
        """Whether a client whose EOF came while ``responder`` answers it has
        left, rather than half-closed its socket (it then still reads).

        TCP tells the two apart only by what the client's host does with data
        sent after the EOF: a closed socket answers it with a reset.  Before
        the answer starts, an interim ``100 Continue`` (HTTP/1.1 clients skip
        it) is sent to find out, and the socket is watched for the reset for
        ``_PROBE_SECONDS``.  A fixed-length answer under way is such data
        itself (its write fails if the client left).  A stream under way may
        send nothing for long, and an HTTP/1.0 client takes no interim answer:
        for them the EOF is a departure.
        """
        conn = self.conn
        if conn.our_state is h11.SEND_BODY:
            return responder.streaming
        if conn.our_state is not h11.SEND_RESPONSE:
            return False  # the answer is out
        if conn.their_http_version != b"1.1" or not responder.probe():
            return True
        sock = self.socket_stream.socket
        delay = 0.001
        while delay < _PROBE_SECONDS:
            await trio.sleep(delay)
            if self.answering is not responder:
                return False  # answered
            if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                return True
            delay *= 2
        return False

    async def _linger(self) -> None:
        """Close after an error answer without losing it to a reset.

        Closing a socket with unread input makes the host send a reset, and a
        client still sending its request (a body over the limit) would get
        that instead of the answer.  So the write side is shut first, and
        what comes in is read and dropped until the client closes, for at
        most ``_LINGER_SECONDS`` and ``_LINGER_BYTES``.
        """
        stream = self.stream
        left = _LINGER_BYTES
        with trio.move_on_after(_LINGER_SECONDS):
            try:
                if isinstance(stream, trio.SocketStream):  # (TLS cannot half-close: read only)
                    await stream.send_eof()
                while left > 0 and (data := await stream.receive_some(_READ_SIZE)):
                    left -= len(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    def _time_read(self, deadline: float) -> None:
        """Time the read under way to ``deadline`` (``inf``: lift it).  A kept-alive
        connection's reads are timed by the server's clock alone (see serve); a new
        connection's first request also by its scope's own deadline, exactly: the
        timeouts of silent and trickling clients do not come in waves, one per tick."""
        self.read_deadline = deadline
        if not self.served:
            self.read_scope.deadline = deadline

    async def _next_event(self, deadline: float) -> Any:
        """The next part of a request's body, within ``deadline`` (set only when there is
        a wait: most bodies came with their head)."""
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self._time_read(deadline)
            if not self.body_waited:
                self.body_waited = True
                if self.gate is not None:  # (its rate is watched while the table is full)
                    self.gate.reading(self.socket_stream, self)
            await self._more()

    async def _more(self) -> None:
        """Feed the parser more bytes (or the end): read here until the first answer
        (no reader task yet, no answer to watch), else wait for the reader.

        A new connection's first request has most often come with it: it is read at
        once, without a scheduler round (under load, most of a new client's wait)."""
        if self.nursery is not None:
            # (None: a reset, the end as for the reader)
            data = await self.receiver.receive(_READ_SIZE, checkpoint=self.received > 0) or b""
            self.received += len(data)
            self.conn.receive_data(data)
            return
        self.want = True
        self.ahead = 0
        self.reader_lot.wake()
        await self.data_lot.wait()

    async def _next_head(self) -> Any:
        """The next request's head (or the end), within the header timeout.

        The head of a connection's first request must be whole within
        ``header_timeout`` of the accept.  A kept-alive connection may then
        wait idle for up to ``keepalive_timeout``; once the next request's
        first bytes come, its head must be whole within ``header_timeout``.
        So a client trickling its head (slowloris) holds a connection for
        ``header_timeout`` at most.
        """
        limits = self.limits
        idle = self.served > 0
        deadline = trio.current_time() + (limits.keepalive_timeout if idle else limits.header_timeout)
        mark = self.received
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            if idle and self.received != mark:  # the head has begun
                idle = False
                deadline = trio.current_time() + limits.header_timeout
            self._time_read(deadline)  # (only once there is a wait: none for a head already here)
            await self._more()

    async def _exchange(self) -> bool:
        """Read one request and answer it; False once the connection must end."""
        read = await self._read_request()
        if read is None:
            return False
        handler, request = read
        gate = self.gate
        if gate is not None and not gate.take_turn(self.socket_stream):
            await gate.turn(self.socket_stream)  # (other addresses' requests first: see ConnectionGate)
        head_only = request.method == "HEAD"
        responder = _H11Responder(self.stream, self.conn, self.limits.write_timeout, head_only)
        self.answering = responder
        if self.nursery is not None:  # (the first answer: from now on the reader watches)
            self.nursery.start_soon(self._read_loop)
            self.nursery = None
        try:
            if handler is None:
                await _send_reply(responder, _Reply(404, b"Not Found", [("content-type", "text/plain")]))
            else:
                await handler.handle(request, responder)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
            return False
        finally:
            self.answering = None
        conn = self.conn
        if responder.gone or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return False
        self.served += 1
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            return False
        if self.gate is not None:
            self.gate.idle(self.socket_stream)
        return True

    async def _read_request(self) -> tuple[Handler | None, HttpRequest] | None:
        """The next request, whole; None (after an error answer if one is due)
        when the connection must end: closed, idle too long, or a bad request."""
        self.in_request = False
        self.body_waited = False
        self.mark = self.received
        try:
            # One deadline: the head's (see _next_head), then the time allowed for the rest.
            event = await self._next_head()
            if not isinstance(event, h11.Request):
                return None
            self.in_request = True
            gate = self.gate
            if gate is not None:
                gate.busy(self.socket_stream)
            read = await self._read_body(event, trio.current_time() + self.limits.request_timeout)
            self._time_read(math.inf)  # (whole: no timeout while it is answered)
            if self.body_waited and gate is not None:
                gate.busy(self.socket_stream)  # (the body is whole)
            return read
        except h11.RemoteProtocolError as exc:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                await self._reject(exc.error_status_hint, f"Bad HTTP request: {exc}")
            return None
        except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError):
            return None

    async def _read_body(
        self, event: h11.Request, deadline: float
    ) -> tuple[Handler | None, HttpRequest] | None:
        """Check the head of ``event``, then read its body (by ``deadline``, the request
        timeout's)."""
        headers: dict[str, str] = {}
        head_size = len(event.target)
        names = _NAMES
        for raw_name, raw_value in event.headers.raw_items():  # (iterating Headers costs 2x)
            head_size += len(raw_name) + len(raw_value) + 4
            name = names.get(raw_name)
            if name is None:
                name = raw_name.decode("latin-1").lower()
                if len(names) < _NAMES_MAX:
                    names[raw_name] = name
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if head_size > self.limits.max_header_size:
            await self._reject(431, "Request Header Fields Too Large")
            return None
        target, _, query = event.target.decode("latin-1").partition("?")
        handler = self.table.get(target.rstrip("/") or "/")
        max_body = (handler or self.default).max_body_size
        length = headers.get("content-length")
        if length is not None:
            if "transfer-encoding" in headers:  # ambiguous framing (smuggling): refused, closed
                await self._reject(400, _BOTH_LENGTHS)
                return None
            if int(length) > max_body:
                await self._reject(413, f"Request body larger than {max_body} bytes")
                return None
        chunks: list[bytes] = []
        size = 0
        while True:
            part = await self._next_event(deadline)
            if isinstance(part, h11.Data):
                chunks.append(part.data)
                size += len(part.data)
                if size > max_body:
                    await self._reject(413, f"Request body larger than {max_body} bytes")
                    return None
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                return None
        body = bytes(chunks[0]) if len(chunks) == 1 else b"".join(chunks)
        proxies = self.limits.proxies
        client = self.client if proxies is None else proxies.client_of(self.client, headers)
        return handler, HttpRequest(event.method.decode("ascii"), headers, body, target, query, client=client)

    async def _reject(self, status: int, message: str) -> None:
        """Answer with an error and ``connection: close`` (the caller then ends
        the connection, with a lingering close)."""
        self.rejected = True
        body = rpc.encode_error(None, rpc.INVALID_REQUEST, message)
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        conn = self.conn
        try:
            with trio.move_on_after(self.limits.write_timeout):
                out = conn.send(h11.Response(status_code=status, headers=[*headers, ("connection", "close")]))
                out += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
                await self.stream.send_all(out)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
            pass


async def serve_h11(
    endpoint: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str = "/mcp",
    routes: Mapping[str, Handler] | None = None,
    max_header_size: int = 64 * 1024,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    max_connections_per_client: int | None = None,
    ssl_context: ssl.SSLContext | None = None,
    shutdown_trigger: Callable[[], Awaitable[Any]] | None = None,
    reuse_port: bool = False,
    parser: str = "h11",
    forwarded_allow_ips: str | Sequence[str] | None = None,
    proxy_protocol_allow_ips: str | Sequence[str] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``endpoint`` over HTTP/1.1 with h11 on trio sockets (no ASGI layer).

    Limits: request heads up to ``max_header_size`` bytes (431 beyond),
    whole within ``header_timeout`` seconds of the accept (or, on a
    kept-alive connection, of their first byte; 408 or a plain close),
    bodies up to the endpoint's ``max_body_size`` (413), a whole request
    within ``request_timeout`` seconds of its head (408), idle
    keep-alive connections closed after ``keepalive_timeout``, writes to a
    client that stops reading abandoned (and the connection closed) after
    ``write_timeout``, at most ``max_connections`` at once (further ones
    wait in the listen backlog, not accepted) and at most
    ``max_connections_per_client`` from one IP address (default: a quarter
    of ``max_connections``; further ones are closed at once).
    A request with both ``Content-Length`` and ``Transfer-Encoding`` gets 400;
    every error answer closes its connection after a lingering close
    (``_LINGER_SECONDS``, ``_LINGER_BYTES``).

    ``routes`` (path -> :class:`Handler`) serves more endpoints next to
    ``endpoint`` at ``path``.  With ``ssl_context`` (a server-side
    :class:`ssl.SSLContext` holding the certificate), every connection speaks
    TLS (HTTPS); the TLS handshake counts against ``header_timeout``.
    ``task_status.started`` gets the bound URLs (``https://`` with TLS).

    When ``shutdown_trigger`` (an async callable) returns, the listening
    sockets are closed (new clients are refused) and the connections open
    go on until they end or the call is cancelled.  With ``reuse_port``, the
    listening sockets have ``SO_REUSEPORT`` (see :func:`open_listeners`).
    With ``parser="httptools"``, requests are parsed by llhttp (the ``httptools``
    package, the ``fast`` extra) instead of h11, with the same checks and answers.
    With ``forwarded_allow_ips`` (addresses or networks of trusted reverse proxies,
    or ``"*"``), a request's ``client`` is read from their ``Forwarded`` or
    ``X-Forwarded-For`` (see :mod:`._forwarded`).  With ``proxy_protocol_allow_ips``
    (the same forms), a connection from one of those load balancers must start with a
    PROXY protocol header (version 1 or 2), and the client is the one it names (see
    :mod:`._proxy_protocol`); other peers speak plain HTTP.
    """
    if parser not in ("h11", "httptools"):
        raise ValueError("parser must be 'h11' or 'httptools'")
    if parser == "httptools":
        from . import _httptools as _llhttp  # noqa: F401  (a missing package fails here, named)
    gate = ConnectionGate(max_connections, max_connections_per_client)
    table = _routes(endpoint, path, routes)
    proxies = None if forwarded_allow_ips is None else TrustedProxies(forwarded_allow_ips)
    balancers = None if proxy_protocol_allow_ips is None else TrustedProxies(proxy_protocol_allow_ips)
    limits = _H11Limits(
        max_header_size,
        keepalive_timeout,
        request_timeout,
        write_timeout,
        header_timeout,
        parser,
        proxies,
        balancers,
    )

    async def connection(stream: trio.SocketStream) -> None:
        # One connection's failure must never take the listener down.
        outer = (
            stream
            if ssl_context is None
            else trio.SSLStream(stream, ssl_context, server_side=True, https_compatible=True)
        )
        try:
            async with outer:
                await _H11Connection(outer, limits, table, endpoint, clock, gate).serve()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection ended abruptly: %s", exc)  # a reset by the client (or a bad TLS hello)
        except Exception:
            log.exception("HTTP connection failed")

    clock = _gate.ReadClock(min(header_timeout, keepalive_timeout, request_timeout))
    listeners = await open_listeners(host, port, reuse_port=reuse_port)
    urls = [listener_url(listener, "http" if ssl_context is None else "https") for listener in listeners]
    try:
        async with trio.open_nursery() as timing:
            timing.start_soon(clock.run)
            async with trio.open_nursery() as connections:
                async with trio.open_nursery() as accepting:
                    accepting.start_soon(gate.serve, listeners, connection, connections)
                    task_status.started(urls)
                    await (shutdown_trigger or trio.sleep_forever)()
                    accepting.cancel_scope.cancel()  # no more connections
                for listener in listeners:
                    listener.socket.close()
            timing.cancel_scope.cancel()  # (the connections have ended)
    finally:
        for listener in listeners:
            listener.socket.close()
