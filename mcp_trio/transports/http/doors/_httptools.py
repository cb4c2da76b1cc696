"""HTTP/1.1 server connections parsed by llhttp (``httptools``), for the lean door.

:class:`LlhttpConnection` is a stand-in for the server side of ``h11.Connection``
with the members the lean door uses, and the same events, states and errors
(h11's own classes), so the door runs one code path over either parser.  llhttp
parses in C: a request costs a few callbacks instead of h11's pure-Python
parsing and state machine.

What h11 checks, this checks too, with the same answers: a request head over
the size limit (431), a malformed request line or header, a missing or repeated
``Host`` on HTTP/1.1, a ``Transfer-Encoding`` other than ``chunked`` (501), a
body cut short by the end of the connection (400).  Requests are taken one at a
time, as h11 takes them: the events of a pipelined request wait (``PAUSED``)
until :meth:`start_next_cycle`.  Responses are framed as h11 frames them (its
``Content-Length``, chunked or close-delimited choice, ``Connection: close``
when the connection cannot be kept alive), byte for byte.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import h11

from ._compat_h11 import parsed_request

try:
    import httptools  # type: ignore[import-untyped, unused-ignore]  # (typed from 0.9)
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError(
        "the httptools front door needs the httptools package: pip install 'mcp-trio[fast]'"
    ) from exc

__all__ = ["LlhttpConnection"]

_IDLE: Any = h11.IDLE
_SEND_RESPONSE: Any = h11.SEND_RESPONSE
_SEND_BODY: Any = h11.SEND_BODY
_DONE: Any = h11.DONE
_MUST_CLOSE: Any = h11.MUST_CLOSE
_CLOSED: Any = h11.CLOSED
_ERROR: Any = h11.ERROR
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"


class _Refused(Exception):
    """Raised from a parser callback to stop it (the error is the connection's ``_error``)."""


class LlhttpConnection:
    """The server side of one HTTP/1.1 connection, as ``h11.Connection(h11.SERVER)``
    (the members the lean door uses), parsed by llhttp."""

    def __init__(self, max_incomplete_event_size: int) -> None:
        self._parser = self._new_parser()
        self._max_head = max_incomplete_event_size
        self._events: deque[Any] = deque()
        self._error: h11.RemoteProtocolError | None = None
        self.our_state: Any = _IDLE
        self.their_state: Any = _IDLE
        self.their_http_version: bytes | None = None
        self._keep_alive = True
        self._request_method = b""
        # The request being parsed (its events are queued once its head is whole).
        self._in_head = False  # a request line or header has begun, the head is not whole
        self._in_message = False
        self._head_size = 0
        self._head_fed = 0  # bytes fed while the head was incomplete from start to end
        self._url = b""
        self._headers: list[tuple[bytes, bytes, bytes]] = []
        self._eof = False
        # The response being written: "length" (bytes left), "chunked" or "close".
        self._framing = "length"
        self._left = 0

    def _new_parser(self) -> Any:
        parser: Any = httptools.HttpRequestParser(self)
        # A request with both Content-Length and Transfer-Encoding reaches the door,
        # which refuses it (400) and closes the connection: h11 lets it through too.
        parser.set_dangerous_leniencies(lenient_chunked_length=True)
        return parser

    # ------------------------------------------------------------- llhttp's callbacks

    def on_message_begin(self) -> None:
        self._in_head = self._in_message = True
        self._head_size = 0
        self._url = b""
        self._headers = []

    def on_url(self, url: bytes) -> None:
        self._url += url
        self._grow(len(url))

    def on_header(self, name: bytes, value: bytes) -> None:
        size = self._head_size = self._head_size + len(name) + len(value) + 4
        # (After the head: a trailer of a chunked body, counted, then dropped, as the door drops h11's.)
        if self._in_head:  # (llhttp keeps a value's trailing whitespace: not part of it, RFC 9110 5.5)
            self._headers.append((name, name.lower(), value.strip(b" \t")))
        if size > self._max_head:
            self._refuse("Receive buffer too long", 431)

    def _grow(self, size: int) -> None:
        self._head_size += size
        if self._head_size > self._max_head:
            self._refuse("Receive buffer too long", 431)

    def _refuse(self, message: str, status: int) -> None:
        """Stop parsing: the request is refused with ``status`` (llhttp reports a
        callback's exception as its own error; the refusal is kept here)."""
        self._error = h11.RemoteProtocolError(message, status)
        raise _Refused

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_fed = 0
        parser = self._parser
        version = parser.get_http_version().encode("ascii")
        method = parser.get_method()
        hosts = 0
        close = version < b"1.1"
        for _, name, value in self._headers:
            if name == b"host":
                hosts += 1
            elif name == b"connection" and b"close" in value.lower():
                close = close or any(token.strip() == b"close" for token in value.lower().split(b","))
            elif name == b"transfer-encoding" and value.strip().lower() != b"chunked":
                self._refuse("Only Transfer-Encoding: chunked is supported", 501)
        if version == b"1.1" and hosts == 0:
            self._refuse("Missing mandatory Host: header", 400)
        if hosts > 1:
            self._refuse("Found multiple Host: headers", 400)
        # h11's event, made as h11's parser makes it but without its checks again (made above).
        request = parsed_request(method, self._headers, self._url, version)
        self._events.append((request, version, method, not close))

    def on_body(self, body: bytes) -> None:
        self._events.append(h11.Data(data=body))

    def on_message_complete(self) -> None:
        self._in_message = False
        self._events.append(h11.EndOfMessage())

    # ------------------------------------------------------------------ receiving

    def receive_data(self, data: bytes) -> None:
        """Take bytes from the client (``b""``: it closed its side)."""
        if self._error is not None or self._eof:
            return
        if not data:
            self._eof = True
            if self._in_message:
                self._error = h11.RemoteProtocolError("peer unexpectedly closed connection", 400)
            else:
                self._events.append(h11.ConnectionClosed())
            return
        whole_head = self._in_head  # (all of data is head, if the head goes on past it)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade as upgrade:
            # A request asking for another protocol is answered as any other (no protocol
            # is switched to), as h11 does; llhttp stops after it, a new parser goes on.
            self._parser = self._new_parser()
            rest = data[upgrade.args[0] :] if upgrade.args else b""
            if rest:
                self.receive_data(rest)
            return
        except (httptools.HttpParserError, _Refused) as exc:
            if self._error is None:  # (else a callback's refusal)
                self._error = h11.RemoteProtocolError(f"malformed request: {exc}", 400)
        else:
            # llhttp keeps a header's pieces until it is whole: the bytes of a head still
            # incomplete are counted here (all but those of the feed it began in).
            if self._in_head and whole_head:
                self._head_fed += len(data)
                if self._head_fed > self._max_head:
                    self._error = h11.RemoteProtocolError("Receive buffer too long", 431)

    def next_event(self) -> Any:
        """The next event of the client's request: as ``h11.Connection.next_event``."""
        state = self.their_state
        if state is _DONE or state is _MUST_CLOSE or state is _CLOSED:
            events = self._events
            if state is _CLOSED or (events and type(events[0]) is h11.ConnectionClosed):
                if events:
                    events.popleft()
                self.their_state = _CLOSED
                return h11.ConnectionClosed()
            if state is _MUST_CLOSE and (events or self._error is not None):
                self.their_state = _ERROR  # (h11: more than the end after a last request)
                raise h11.RemoteProtocolError("Got data when expecting EOF", 400)
            return h11.PAUSED if events else h11.NEED_DATA
        if state is _ERROR:
            raise h11.RemoteProtocolError("Can't receive data when peer state is ERROR", 400)
        if not self._events:
            if self._error is not None:
                self.their_state = _ERROR
                raise self._error
            return h11.NEED_DATA
        event = self._events.popleft()
        if type(event) is tuple:
            request, version, method, keep_alive = event
            self.their_http_version = version
            self._request_method = method
            self._keep_alive = keep_alive
            self.their_state = _SEND_BODY
            self.our_state = _SEND_RESPONSE
            return request
        kind = type(event)
        if kind is h11.EndOfMessage:
            self.their_state = _DONE if self._keep_alive else _MUST_CLOSE
            self._settle()
        elif kind is h11.ConnectionClosed:
            self.their_state = _CLOSED
        return event

    # -------------------------------------------------------------------- sending

    def send(self, event: Any) -> bytes:
        """The bytes of ``event`` (a response, its data or its end): as ``h11.Connection.send``."""
        parts = self.send_with_data_passthrough(event)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def send_with_data_passthrough(self, event: Any) -> list[bytes]:
        kind = type(event)
        try:
            if kind is h11.Data:
                return self._data(event.data)
            if kind is h11.EndOfMessage:
                return [self._end()]
            if kind is h11.Response:
                return [self._head(event)]
            if kind is h11.InformationalResponse:
                if self.our_state is not _SEND_RESPONSE or event.status_code != 100:
                    raise h11.LocalProtocolError("an interim answer only before the response")
                return [_CONTINUE]
            raise h11.LocalProtocolError(f"cannot send {kind.__name__}")
        except h11.LocalProtocolError:
            self.our_state = _ERROR
            raise

    def _head(self, response: h11.Response) -> bytes:
        if self.our_state is not _IDLE and self.our_state is not _SEND_RESPONSE:
            raise h11.LocalProtocolError(f"can't send a response in state {self.our_state}")
        status = response.status_code
        raw = response.headers.raw_items()
        lengths: list[bytes] = []
        chunked = False
        close = not self._keep_alive  # (rewritten in the head: h11 does so only then)
        closes = False  # the response says so itself
        for name, value in raw:
            lower = name.lower()
            if lower == b"content-length":
                lengths.append(value)
            elif lower == b"transfer-encoding":
                chunked = True
            elif lower == b"connection" and b"close" in value.lower():
                closes = any(token.strip() == b"close" for token in value.lower().split(b","))
        method = self._request_method
        bodiless = status in (204, 304) or (method == b"CONNECT" and 200 <= status < 300)
        sized = bodiless or (lengths and not chunked)
        chunks = self.their_http_version is not None and self.their_http_version >= b"1.1"
        headers: Sequence[tuple[bytes, bytes]] = raw
        if not sized:
            # A body of unknown length: chunked to an HTTP/1.1 client, else ended by the close.
            keep = [(n, v) for n, v in raw if n.lower() not in (b"content-length", b"transfer-encoding")]
            if chunks:
                headers = [*keep, (b"Transfer-Encoding", b"chunked")]
            else:
                headers = keep
                close = close or method != b"HEAD"
        if close:
            tokens: set[bytes] = set()
            kept: list[tuple[bytes, bytes]] = []
            for name, value in headers:
                if name.lower() == b"connection":
                    tokens.update(t.strip().lower() for t in value.split(b",") if t.strip())
                else:
                    kept.append((name, value))
            tokens.discard(b"keep-alive")
            tokens.add(b"close")
            headers = [*kept, (b"Connection", b", ".join(sorted(tokens)))]
        if close or closes:
            self._keep_alive = False
            if self.their_state is _DONE:
                self.their_state = _MUST_CLOSE
        if bodiless or method == b"HEAD":
            self._framing, self._left = "length", 0
        elif sized:
            self._framing, self._left = "length", int(lengths[0])
        else:
            self._framing = "chunked" if chunks else "close"
        self.our_state = _SEND_BODY
        lines = [b"HTTP/1.1 %d %s\r\n" % (status, response.reason)]
        lines += [b"%s: %s\r\n" % (name, value) for name, value in headers]
        lines.append(b"\r\n")
        return b"".join(lines)

    def _data(self, data: bytes) -> list[bytes]:
        if self.our_state is not _SEND_BODY:
            raise h11.LocalProtocolError(f"can't send data in state {self.our_state}")
        if self._framing == "length":
            if len(data) > self._left:
                raise h11.LocalProtocolError("Too much data for declared Content-Length")
            self._left -= len(data)
            return [data]
        if self._framing == "chunked":
            return [b"%x\r\n" % len(data), data, b"\r\n"] if data else []
        return [data]

    def _end(self) -> bytes:
        if self.our_state is not _SEND_BODY:
            raise h11.LocalProtocolError(f"can't end a response in state {self.our_state}")
        if self._framing == "length" and self._left:
            raise h11.LocalProtocolError("Too little data for declared Content-Length")
        self.our_state = _DONE if self._keep_alive and self._framing != "close" else _MUST_CLOSE
        if self._framing == "close":
            self._keep_alive = False
        self._settle()
        return b"0\r\n\r\n" if self._framing == "chunked" else b""

    def _settle(self) -> None:
        """Once either side cannot go on, neither keeps the connection (h11's rule)."""
        if self.our_state is _MUST_CLOSE and self.their_state is _DONE:
            self.their_state = _MUST_CLOSE
        elif self.their_state is _MUST_CLOSE and self.our_state is _DONE:
            self.our_state = _MUST_CLOSE

    def start_next_cycle(self) -> None:
        """Ready for the client's next request (both sides done): as h11's."""
        if self.our_state is not _DONE or self.their_state is not _DONE:
            raise h11.LocalProtocolError(f"not in a reusable state ({self.our_state}, {self.their_state})")
        self.our_state = self.their_state = _IDLE
        self._request_method = b""
