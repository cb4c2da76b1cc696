"""How the lean front door writes a response (:class:`_H11Responder`), on h11's
or llhttp's connection (both take h11's events and give the bytes to send)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import h11
import trio

from .._request import _HEADER_SESSION, _declared_length
from . import _gate

#: Header sets already validated by h11 (see :func:`_h11_headers`).
_H11_HEADERS: dict[tuple[tuple[str, str], ...], Any] = {}
_H11_HEADERS_MAX = 256


def _h11_headers(headers: Sequence[tuple[str, str]]) -> Any:
    """``headers`` as h11's validated header list, checked once per distinct set.

    h11 matches every header name and value against its grammar each time a
    response is built from plain tuples, but takes a list it validated before
    as it is.  The answers of a busy endpoint repeat a few header sets (content
    type and length), so those are checked once and kept (a bounded cache);
    a set naming a session is unique to it and is never kept.
    """
    key = tuple(headers)
    found = _H11_HEADERS.get(key)
    if found is None:
        found = h11.Response(status_code=200, headers=list(headers)).headers
        if not any(name == _HEADER_SESSION for name, _ in key):
            if len(_H11_HEADERS) >= _H11_HEADERS_MAX:
                _H11_HEADERS.clear()
            _H11_HEADERS[key] = found
    return found


class _H11Responder:
    """Writes one response on an h11 connection.

    A response that declares its ``content-length`` goes out whole: its head
    waits for the body and leaves with it and the end of the message in one
    write (one system call and one wake-up of the client instead of two or
    three).  A streamed response (SSE) writes its head at once, so the client
    sees the stream open before its first event.  The answer to a ``HEAD``
    request is its head alone.
    """

    def __init__(
        self, stream: trio.abc.Stream, conn: h11.Connection, write_timeout: float, head_only: bool = False
    ) -> None:
        self._stream = stream
        self._conn = conn
        self._write_timeout = write_timeout
        self._head_only = head_only
        self._socket = stream.socket if isinstance(stream, trio.SocketStream) else None
        self.gone = False
        self._held = b""  # a fixed-length response's head, waiting for its body
        self._left = -1  # body bytes still to come (-1: a streamed response)
        self._ended = False

    def _write_now(self, parts: Sequence[bytes | memoryview]) -> int:
        """:func:`write_now` on this connection's socket (nothing on a TLS stream)."""
        try:
            return _gate.write_now(-1 if self._socket is None else self._socket.fileno(), parts)
        except trio.BrokenResourceError:
            self.gone = True
            raise

    async def _write(self, *parts: bytes | memoryview) -> None:
        """Write ``parts`` in order, within the write timeout.

        The body of a large answer is written from the caller's buffer (views
        of it, never a copy), so a client that reads slowly holds the answer
        once, for ``write_timeout`` at most.
        """
        if self.gone:
            raise trio.BrokenResourceError("the client disconnected")
        parts = tuple(part for part in parts if len(part))
        if not parts:
            return
        written = self._write_now(parts)
        if written == sum(map(len, parts)):
            return  # (most answers: no timer)
        with trio.move_on_after(self._write_timeout) as scope:
            try:
                for part in parts:
                    if written >= len(part):
                        written -= len(part)
                        continue
                    await _gate.send_in_chunks(self._stream, memoryview(part)[written:] if written else part)
                    written = 0
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.gone = True
                raise trio.BrokenResourceError("the client disconnected") from None
        if scope.cancelled_caught:  # a client that does not read must not hold us
            self.gone = True
            raise trio.BrokenResourceError("the client stopped reading")

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        head = self._conn.send(h11.Response(status_code=status, headers=_h11_headers(headers)))
        length = _declared_length(headers)
        if length is None:
            await self._write(head)
        else:
            self._held, self._left = head, length

    async def send(self, data: bytes) -> None:
        if not data:
            return
        # Passed through, not joined: the body stays the caller's buffer.
        body: list[bytes] = (
            [] if self._head_only else list(self._conn.send_with_data_passthrough(h11.Data(data=data)) or ())
        )
        head, self._held = self._held, b""
        end = b""
        if self._left >= 0:
            self._left -= len(data)
            if self._left <= 0:  # the whole body: the message ends with it
                end = self._conn.send(h11.EndOfMessage())
                self._ended = True
        await self._write(head, *body, end)

    async def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        head, self._held = self._held, b""
        await self._write(head, self._conn.send(h11.EndOfMessage()))

    @property
    def streaming(self) -> bool:
        """Whether this is a streamed response (its head goes out at once)."""
        return self._left < 0

    def probe(self) -> bool:
        """Write an interim ``100 Continue`` (before the response); whether it went out whole."""
        data = self._conn.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
        try:
            return self._write_now((data,)) == len(data)
        except trio.BrokenResourceError:
            return False
