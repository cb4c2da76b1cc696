"""A WebSocket connection over a trio stream, framed by wsproto (client and lean server).

Rules it enforces: one JSON-RPC message per text message (a binary message
closes with 1003, one over ``max_message_size`` with 1009, a framing error
with 1002); the newest ping is answered with a pong, even while the session
is not reading; a keepalive ping without a pong within ``keepalive_timeout``
closes with 1011, unless the local session's own backpressure held it up;
one writer at a time; closing waits at most ``close_timeout`` for each step,
then drops the connection.
"""

from __future__ import annotations

import math
import struct
from typing import Any, cast

import trio
from wsproto import WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import BytesMessage, CloseConnection, Ping, Pong, TextMessage
from wsproto.frame_protocol import CloseReason
from wsproto.utilities import LocalProtocolError

from .._base import BufferedInput, Frame
from ..http.client._http11 import close_stream
from ._channel import _READ_SIZE, WebSocketChannel, _check_code, _check_limits, log


class _WsprotoChannel(WebSocketChannel, BufferedInput):
    """A WebSocket over a trio stream, framed by wsproto (client and lean server).

    A reader task (:meth:`_run`) reads the socket, answers pings, checks
    incoming messages and queues them (at most ``inbound_buffer``: beyond that
    it stops reading, which is the session's backpressure).  Writes are
    serialized by a lock; a pong that cannot be written at once is written by
    whoever holds the lock when its write ends.
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        ws: WSConnection,
        *,
        client: bool,
        subprotocol: str | None,
        max_message_size: int,
        keepalive_interval: float | None,
        keepalive_timeout: float,
        close_timeout: float,
        inbound_buffer: int,
    ) -> None:
        _check_limits(max_message_size, keepalive_interval, keepalive_timeout, close_timeout)
        self._stream = stream
        self._ws = ws
        self._client = client
        self.subprotocol = subprotocol
        self.max_message_size = max_message_size
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.close_timeout = close_timeout
        self._in_send, self._in_recv = trio.open_memory_channel[Frame](inbound_buffer)
        self._lock = trio.Lock()
        self._parts: list[bytes] = []
        self._size = 0
        self._pending_pong: bytes | None = None
        self._keepalive = _Keepalive(self) if keepalive_interval is not None else None
        self._close_sent = False
        self._close_received = False
        self._parse_broken = False  # wsproto cannot parse any more: discard what comes
        self._done_reading = False
        self._linger_until = math.inf  # stop reading at this time (closing)
        self._stalled = False  # the reader waits for the session to take a message
        self._writing = False  # a write is in progress (may be blocked by the peer)
        self._started = False
        self._reader_scope = trio.CancelScope()
        self._finished = trio.Event()  # the reader is done and the stream closed
        self._closed = False  # aclose() was called

    # ---- the session's side

    async def receive(self) -> Frame:
        if self._closed:
            raise trio.ClosedResourceError
        return await self._in_recv.receive()

    def buffered(self) -> int:
        """Messages received and not yet taken by :meth:`receive` (the
        session's reader relay, see docs/engine.md, uses it)."""
        return self._in_recv.statistics().current_buffer_used

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if value.control is not None:
            return  # no stream controls here (``stream_controls`` is not set)
        await self._write(TextMessage(data=value.data.decode("utf-8")))

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self.close()
        finally:
            self._in_recv.close()

    async def close(self, code: int = CloseReason.NORMAL_CLOSURE, reason: str = "") -> None:
        _check_code(code)
        if not (self._close_sent or self._close_received or self._finished.is_set()):
            self._set_close(code, reason)
            self._end_input()
            await self._send_close(code, reason)
        with trio.move_on_after(self.close_timeout):
            await self._finished.wait()
        if not self._finished.is_set():
            self._abort("the peer did not complete the close handshake")
            if not self._started:  # nothing reads this connection: nothing else will end it
                self._finished.set()
            with trio.move_on_after(self.close_timeout):
                await self._finished.wait()

    # ---- writing

    def _broken(self) -> trio.BrokenResourceError:
        if self.close_code is None:
            return trio.BrokenResourceError("the WebSocket is closing")
        why = f": {self.close_reason}" if self.close_reason else ""
        return trio.BrokenResourceError(f"the WebSocket is closed (code {self.close_code}{why})")

    async def _write(self, event: Any) -> None:
        async with self._lock:
            if self._close_sent or self._close_received or self._finished.is_set():
                raise self._broken()
            try:
                data = self._ws.send(event)
            except LocalProtocolError:
                raise self._broken() from None
            await self._send_bytes(data)
            await self._flush_pong()

    async def _send_bytes(self, data: bytes) -> None:
        """Write while holding the lock; a failure is the end of the connection."""
        self._writing = True
        written = False
        try:
            await self._stream.send_all(data)
            written = True
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            self._lost(f"the connection broke while sending: {exc or type(exc).__name__}")
            raise self._broken() from None
        finally:
            self._writing = False
            if not written and not self._finished.is_set():
                # Cancelled: part of a frame may be out, nothing can follow it.
                self._abort("a write was interrupted")

    async def _flush_pong(self) -> None:
        payload = self._pending_pong
        if payload is None or self._close_sent:
            return
        self._pending_pong = None
        try:
            data = self._ws.send(Pong(payload=payload))
        except LocalProtocolError:
            return
        await self._send_bytes(data)

    async def _send_pong(self, payload: bytes) -> None:
        # Only the newest ping needs an answer (RFC 6455, 5.5.3).  If a write
        # is in progress its writer sends the pong; the reader never waits
        # behind a blocked writer.
        self._pending_pong = payload
        if self._lock.locked():
            return
        async with self._lock:
            try:
                await self._flush_pong()
            except trio.BrokenResourceError:
                pass

    async def _send_close(self, code: int, reason: str) -> None:
        """Send our close frame within ``close_timeout``, else drop the connection."""
        with trio.move_on_after(self.close_timeout) as timer:
            async with self._lock:
                if self._close_sent or self._finished.is_set():
                    return
                try:
                    data = self._ws.send(CloseConnection(code=code, reason=reason or None))
                except LocalProtocolError:
                    return
                self._close_sent = True
                try:
                    await self._send_bytes(data)
                except trio.BrokenResourceError:
                    return
        if timer.cancelled_caught:
            self._abort("the close frame could not be sent in time")

    # ---- ending

    def _end_input(self) -> None:
        """No more messages for the session (those queued are still delivered)."""
        self._in_send.close()

    def _lost(self, why: str) -> None:
        self._set_close(CloseReason.ABNORMAL_CLOSURE, why)
        self._done_reading = True
        self._end_input()

    def _abort(self, why: str) -> None:
        """Drop the connection now, without a close handshake."""
        self._lost(why)
        close_stream(self._stream)
        self._reader_scope.cancel()

    async def _fail(self, code: int, reason: str) -> None:
        """Fail the connection (RFC 6455, 7.1.7): send a close frame with ``code``,
        keep reading (and discarding) briefly for the peer's, then close."""
        if self._close_sent or self._close_received:
            return
        log.info("closing the WebSocket: %s (%d)", reason, code)
        self._set_close(code, reason)
        self._end_input()
        self._parts.clear()
        await self._send_close(code, reason)
        if self._parse_broken and isinstance(self._stream, trio.abc.HalfCloseableStream):
            # We cannot read the peer's close frame any more: end our side now
            # (after our close frame), so the peer sees the end at once.
            with trio.move_on_after(self.close_timeout):
                async with self._lock:
                    try:
                        await self._stream.send_eof()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
        self._linger_until = min(self._linger_until, trio.current_time() + self.close_timeout)

    async def _keepalive_failed(self, why: str) -> None:
        """No pong came in time: close with 1011 (briefly) and drop the connection."""
        log.info("closing the WebSocket: %s", why)
        self._set_close(CloseReason.INTERNAL_ERROR, why)
        self._end_input()
        if not self._lock.locked():
            with trio.move_on_after(min(self.close_timeout, 1.0)):
                await self._send_close(CloseReason.INTERNAL_ERROR, why)
        self._abort(why)

    def _handshake_done(self) -> None:
        """Both close frames went: the server closes the TCP connection, the
        client waits (briefly) for the server to close it."""
        if self._client:
            self._linger_until = min(self._linger_until, trio.current_time() + self.close_timeout)
        else:
            self._done_reading = True

    # ---- reading

    async def _run(self) -> None:
        self._started = True
        try:
            async with trio.open_nursery() as nursery:
                if self._keepalive is not None:
                    nursery.start_soon(self._keepalive.run)
                with self._reader_scope:
                    await self._read()
                nursery.cancel_scope.cancel()
        finally:
            self._end_input()
            with trio.move_on_after(self.close_timeout, shield=True):
                try:
                    await self._stream.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
            self._set_close(CloseReason.ABNORMAL_CLOSURE, "the connection closed without a close frame")
            self._finished.set()

    async def _read(self) -> None:
        await self._process()  # frames that came with the handshake
        while not self._done_reading:
            data: bytes | bytearray = b""
            with trio.move_on_at(self._linger_until) as linger:
                try:
                    data = await self._stream.receive_some(_READ_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                    self._lost(f"the connection broke: {exc or type(exc).__name__}")
                    return
            if linger.cancelled_caught:
                return
            if not data:
                self._lost("the connection closed without a close frame")
                return
            if self._parse_broken or self._ws.state is ConnectionState.CLOSED:
                continue  # lingering after a failure or the close handshake: discard
            self._ws.receive_data(cast(bytes, data))
            await self._process()

    async def _process(self) -> None:
        for event in self._ws.events():
            await self._on_event(event)
            if self._done_reading:
                return

    async def _on_event(self, event: Any) -> None:
        closing = self._close_sent or self._close_received
        if isinstance(event, TextMessage):
            if closing:
                return
            chunk = event.data.encode("utf-8")
            self._size += len(chunk)
            if self._size > self.max_message_size:
                await self._fail(
                    CloseReason.MESSAGE_TOO_BIG,
                    f"message larger than {self.max_message_size} bytes",
                )
                return
            self._parts.append(chunk)
            if event.message_finished:
                data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
                self._parts = []
                self._size = 0
                self._stalled = True
                try:
                    await self._in_send.send(Frame(data))
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass  # the session has stopped listening
                finally:
                    self._stalled = False
        elif isinstance(event, BytesMessage):
            if not closing:
                await self._fail(
                    CloseReason.UNSUPPORTED_DATA,
                    "binary messages are not accepted: send each JSON-RPC message as text",
                )
        elif isinstance(event, Ping):
            if not closing:
                await self._send_pong(bytes(event.payload))
        elif isinstance(event, Pong):
            if self._keepalive is not None:
                self._keepalive.pong(bytes(event.payload))
        elif isinstance(event, CloseConnection):
            state = self._ws.state
            if state is ConnectionState.REMOTE_CLOSING:
                # The peer closes first: answer with its code.
                self._close_received = True
                self._set_close(event.code, event.reason or "")
                self._end_input()
                with trio.move_on_after(self.close_timeout):
                    async with self._lock:
                        try:
                            data = self._ws.send(event.response())
                        except LocalProtocolError:
                            data = b""
                        if data:
                            try:
                                await self._send_bytes(data)
                            except trio.BrokenResourceError:
                                return
                self._handshake_done()
            elif state is ConnectionState.CLOSED:
                self._close_received = True  # the answer to our close frame
                self._handshake_done()
            else:
                # wsproto could not parse what came (the event carries why).
                self._parse_broken = True
                await self._fail(event.code, event.reason or "invalid frame")


class _Keepalive:
    """The keepalive pings of a channel: one every ``keepalive_interval``, and the connection
    closed with 1011 when its pong does not come within ``keepalive_timeout`` (unless the
    channel's own session held the pong up by not reading)."""

    __slots__ = ("_channel", "_pings", "_payload", "_pong")

    def __init__(self, channel: _WsprotoChannel) -> None:
        self._channel = channel
        self._pings = 0
        self._payload: bytes | None = None  # (the ping waiting for its pong)
        self._pong = trio.Event()

    def pong(self, payload: bytes) -> None:
        """A pong came: the answer to our ping if it carries its payload."""
        if self._payload is not None and payload == self._payload:
            self._pong.set()

    async def run(self) -> None:
        channel = self._channel
        assert channel.keepalive_interval is not None
        while True:
            await trio.sleep(channel.keepalive_interval)
            if channel._close_sent or channel._close_received:
                return
            self._pings += 1
            payload = self._payload = struct.pack("!I", self._pings & 0xFFFFFFFF)
            self._pong = trio.Event()
            deadline = trio.current_time() + channel.keepalive_timeout
            with trio.move_on_at(deadline):
                try:
                    await channel._write(Ping(payload=payload))
                except trio.BrokenResourceError:
                    return
            while not self._pong.is_set():
                with trio.move_on_at(deadline):
                    await self._pong.wait()
                if self._pong.is_set() or channel._close_sent or channel._close_received:
                    break
                if channel._stalled and not channel._writing:
                    # Our session is not reading (backpressure): the pong may be
                    # waiting behind its messages.  Not the peer's fault.
                    deadline = trio.current_time() + channel.keepalive_timeout
                    continue
                await channel._keepalive_failed(
                    f"keepalive ping timeout: no pong within {channel.keepalive_timeout} s"
                )
                return
