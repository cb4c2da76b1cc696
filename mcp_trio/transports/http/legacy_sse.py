"""The HTTP+SSE transport of protocol revision 2024-11-05, server side.

Later revisions replaced it with Streamable HTTP; it is kept for clients that
only speak the old transport.  How it works:

* ``GET`` on the SSE path opens a session: the response is an SSE stream whose
  first event, ``endpoint``, names the URL the client posts its messages to
  (the messages path with ``?session_id=...``).  Every message of the server
  (responses included) is then an SSE ``message`` event on that stream.
* ``POST`` to that URL delivers one JSON-RPC message (or batch) and is
  answered ``202 Accepted`` at once; the answer comes on the stream.
* The session lives as long as the stream: when the client disconnects, the
  session ends and its handlers are cancelled.  There is no resumption.

Serve it next to the Streamable HTTP endpoint with the ``routes`` of
:class:`~mcp_trio.transports.http.doors.asgi.ASGIApp` or
:func:`~mcp_trio.transports.http.doors.h11.serve_h11` (``Server.serve_http(...,
legacy_sse=True)`` does that), at ``/sse`` and ``/messages``.

Errors: a POST without ``session_id`` gets 400, an unknown or ended session
404, a body that is not JSON 400 (and nothing reaches the session), a body
over ``max_body_size`` 413, a non-JSON ``Content-Type`` 415.  ``Host`` and
``Origin`` are checked as for Streamable HTTP.  Comments (``: ping``) keep an
idle stream alive through proxies every ``ping_interval`` seconds.  Streams
are bounded as Streamable HTTP's GET streams (:class:`StreamSlots`, shared
with that endpoint when served next to it: 429 / 503 with ``Retry-After``), and
a session whose stream sent no message and got no POST for
``stream_idle_timeout`` seconds ends (its stream closes: without resumption
in this transport, the client opens a new session).

Behind an authorization layer (``HttpRequest.auth``), each POSTed request
keeps the authorization of its POST until it is answered: its handler reads
it as ``ctx.auth``, as over Streamable HTTP.  A session belongs to the
principal (``HttpRequest.principal``) whose ``GET`` opened it: a POST of any
other principal naming it gets the 404 of an unknown session.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Hashable, Iterable
from typing import Any
from urllib.parse import parse_qs

import trio

from .._base import Authorizing, ChannelTraits, Frame, RequestId
from ._replies import _SSE_HEADERS, _BatchMember, _error_reply, _Message, _peek_body, _Reply
from ._request import (
    DEFAULT_ALLOWED_HOSTS,
    HttpRequest,
    Responder,
    ServeSession,
    StreamSlots,
    _Endpoint,
    _send_reply,
)
from ._sse import encode_comment, encode_event

__all__ = ["LegacySSE"]

log = logging.getLogger("mcp_trio.http.legacy")


class _LegacySession(trio.abc.Channel[Frame], ChannelTraits, Authorizing):
    """The MessageChannel the engine sees for one HTTP+SSE session."""

    def __init__(self, session_id: str, inbound: int, outbound: int, principal: Hashable | None) -> None:
        self.id = session_id
        #: The session's id (the ``session_id`` of its messages path).
        self.session_id = session_id
        #: The ``HttpRequest.principal`` of the ``GET`` that opened it: only its POSTs find it.
        self.principal = principal
        self._in_send, self._in_recv = trio.open_memory_channel[Frame](inbound)
        self.out_send, self.out_recv = trio.open_memory_channel[bytes](outbound)
        self.scope = trio.CancelScope()
        #: request id -> the ``HttpRequest.auth`` of the POST that carried it, until answered.
        self.auth: dict[RequestId, Any] = {}
        #: When its stream closes for idleness (a message sent or a POST received puts it off).
        self.idle_at = float("inf")

    def auth_for(self, request_id: RequestId) -> Any:
        """The authorization the request ``request_id`` came with (``HttpRequest.auth``)."""
        return self.auth.get(request_id)

    def remember_auth(self, messages: _Message | list[_BatchMember], auth: Any) -> None:
        """Keep ``auth`` for the requests among the POSTed ``messages``."""
        for message in messages if isinstance(messages, list) else [messages]:
            if message.kind == "request":
                self.auth[message.id] = auth

    def _answered(self, frame: Frame) -> None:
        """Forget the authorization of the requests ``frame`` finally answers."""
        if not self.auth or not frame.final:
            return
        if frame.related is not None:
            self.auth.pop(frame.related, None)
        elif frame.data[:1] == b"[":  # a batch reply answers several
            replies = _peek_body(frame.data)
            if isinstance(replies, list):
                for reply in replies:
                    self.auth.pop(reply.id, None)

    async def receive(self) -> Frame:
        return await self._in_recv.receive()

    async def send(self, value: Frame) -> None:
        self._answered(value)
        if value.data:
            await self.out_send.send(value.data)

    async def aclose(self) -> None:
        await self._in_recv.aclose()
        await self.out_send.aclose()

    async def put(self, frame: Frame) -> None:
        await self._in_send.send(frame)

    async def end_input(self) -> None:
        await self._in_send.aclose()


class LegacySSE(_Endpoint):
    """The 2024-11-05 HTTP+SSE endpoint pair (a :class:`Handler` for both paths).

    Args:
        serve_session: ``async (channel, *, task_status)`` serving one MCP
            session until the channel ends (``Server.serve_session``).
        messages_path: Where clients post (named in the ``endpoint`` event).
        max_sessions: Streams open at once (503 beyond).
        max_body_size: Bytes in a POST body.
        allowed_hosts, allowed_origins: As for Streamable HTTP.
        ping_interval: Seconds of silence after which the stream gets a
            comment (``None``: never).
        inbound_buffer: Messages posted but not yet read by the session
            (a POST waits beyond that).
        outbound_buffer: Messages queued for a slow stream before the
            session's writer waits.
        stream_slots: The bounds on open streams, shared with other endpoints
            (default: bounds of this endpoint's own, with the default limits).
        stream_idle_timeout: Seconds without a message or a POST after which
            a session's stream closes, ending it (``None``: never).
    """

    def __init__(
        self,
        serve_session: ServeSession,
        *,
        messages_path: str = "/messages",
        max_sessions: int = 1000,
        max_body_size: int = 4 * 1024 * 1024,
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
        ping_interval: float | None = 15.0,
        inbound_buffer: int = 16,
        outbound_buffer: int = 256,
        stream_slots: StreamSlots | None = None,
        stream_idle_timeout: float | None = 300.0,
    ) -> None:
        super().__init__(serve_session, max_sessions, max_body_size, allowed_hosts, allowed_origins)
        self.messages_path = messages_path
        self.ping_interval = ping_interval
        self.inbound_buffer = inbound_buffer
        self.outbound_buffer = outbound_buffer
        self.stream_slots = stream_slots if stream_slots is not None else StreamSlots()
        self.stream_idle_timeout = stream_idle_timeout
        self.sessions: dict[str, _LegacySession] = {}

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        """Answer one HTTP request on the SSE path (GET) or the messages path (POST)."""
        problem = self.guard.check(request)
        posting = (request.path.rstrip("/") or "/") == (self.messages_path.rstrip("/") or "/")
        try:
            if problem is None:
                if posting and request.method == "POST":
                    problem = await self._message(request)
                elif not posting and request.method == "GET":
                    problem = await self._stream(request, responder)
                else:
                    problem = _Reply(405, headers=[("allow", "POST" if posting else "GET")])
            if problem is not None:
                await _send_reply(responder, problem)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("the client left before its answer was complete")

    async def _stream(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        accept = request.headers.get("accept", "*/*")
        if "text/event-stream" not in accept and "*/*" not in accept:
            return _error_reply(406, "Not Acceptable: Accept must list text/event-stream")
        if self._nursery is None:
            raise RuntimeError("LegacySSE.run() is not running")
        if len(self.sessions) >= self.max_sessions:
            return _error_reply(503, "Too many sessions")
        evicted = trio.CancelScope()  # cancelled when the stream must make room for another
        slot = self.stream_slots.take(request.client, evicted.cancel)
        if isinstance(slot, _Reply):
            return slot
        session = _LegacySession(
            secrets.token_hex(16), self.inbound_buffer, self.outbound_buffer, request.principal
        )
        self.sessions[session.id] = session
        self._nursery.start_soon(self._run_session, session)
        try:
            await responder.start(200, _SSE_HEADERS)
            await responder.send(
                encode_event(f"{self.messages_path}?session_id={session.id}", event="endpoint")
            )
            with evicted:
                await self._write_out(session, responder)
            await responder.end()  # the session ended, was evicted, or was idle too long
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("client left legacy SSE session %s", session.id)
        finally:
            self.stream_slots.release(slot)
            # The stream is the session: without it nothing can reach the client.
            self.sessions.pop(session.id, None)
            with trio.CancelScope(shield=True):
                await session.end_input()
            session.scope.cancel()
        return None

    async def _write_out(self, session: _LegacySession, responder: Responder) -> None:
        """Send the session's messages, with a ping after ``ping_interval`` seconds
        of silence, until it ends or is idle for ``stream_idle_timeout``."""
        ping = self.ping_interval if self.ping_interval is not None else float("inf")
        idle = self.stream_idle_timeout if self.stream_idle_timeout is not None else float("inf")
        session.idle_at = trio.current_time() + idle
        while True:
            data = b""
            with trio.move_on_at(min(trio.current_time() + ping, session.idle_at)) as waiting:
                try:
                    data = await session.out_recv.receive()
                except trio.EndOfChannel:  # the session ended
                    return
            if not waiting.cancelled_caught:
                session.idle_at = trio.current_time() + idle
                await responder.send(encode_event(data, event="message"))
            elif trio.current_time() >= session.idle_at:
                log.info("legacy SSE session %s idle: closing its stream", session.id)
                return
            else:
                await responder.send(encode_comment("ping"))

    async def _run_session(self, session: _LegacySession) -> None:
        try:
            with session.scope:
                await self.serve_session(session)
        except Exception:
            log.exception("legacy SSE session %s failed", session.id)
        finally:
            self.sessions.pop(session.id, None)
            await session.out_send.aclose()

    async def _message(self, request: HttpRequest) -> _Reply | None:
        ids = parse_qs(request.query).get("session_id")
        if not ids:
            return _error_reply(400, "Bad Request: session_id is missing")
        session = self.sessions.get(ids[0])
        if session is None or session.principal != request.principal:  # another's: unknown here
            return _error_reply(404, "Not Found: no such session")
        peeked = self._json_body(request)
        if isinstance(peeked, _Reply):
            return peeked
        session.idle_at = trio.current_time() + (self.stream_idle_timeout or float("inf"))
        if request.auth is not None:
            session.remember_auth(peeked, request.auth)
        try:
            await session.put(Frame(request.body))
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return _error_reply(404, "Not Found: the session has ended")
        return _Reply(202, b"Accepted", [("content-type", "text/plain")])
