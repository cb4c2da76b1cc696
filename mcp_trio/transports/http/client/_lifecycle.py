"""The session's lifecycle on the client, up to 2025-11-25: renewal after the
server answered 404 for it, expiry when it cannot be renewed, and the GET
stream for server-initiated messages.

Renewal sends the session's ``initialize`` again (and
``notifications/initialized``), at most ``max_renewals`` times per channel,
one renewal at a time; a new session that speaks another protocol version is
refused.  Expiry fails every pending request (reason ``session_expired``) and
ends the channel.  The GET stream opens once the session is initialized (not
at 2026-07-28), ends for good on 405, and is reopened with ``Last-Event-ID``
after drops, until ``reconnect_attempts`` attempts in a row failed.
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from .._sse import SSEDecoder, SSEError
from ._channel import _ACCEPT_BOTH, _ERROR_BODY_LIMIT, _SESSION_ID, _ChannelBase, log
from ._http11 import Failure, Headers, excerpt
from ._peek import _BAD_JSON, _is_modern, _peek


class _SessionMixin(_ChannelBase):
    """Session renewal and expiry, and the GET stream."""

    async def _renew(self, refused: str) -> bool:
        """The server answered 404 for session ``refused``: start a new session
        (``initialize`` again, then ``notifications/initialized``).  True when
        there is a new session to use (made here or by a concurrent caller)."""
        async with self._renewing:
            if self.session_id != refused:
                return self.session_id is not None and not self.session_expired
            if (
                not self.renew_sessions
                or self._init_data is None
                or self.renewals >= self.max_renewals
                or self.session_expired
            ):
                return False
            self.renewals += 1
            version = self.protocol_version
            self.session_id = None
            try:
                with trio.fail_after(self.timeout):
                    session_id, result = await self._initialize_again(self._init_data)
                answered = result.get("protocolVersion") if isinstance(result, dict) else None
                if answered != version:
                    raise Failure("bad_response", f"the new session speaks {answered!r}, not {version!r}")
                self.session_id = session_id
                if self._initialized_data is not None:
                    headers = self._headers(accept=_ACCEPT_BOTH, body=self._initialized_data, version=version)
                    with trio.fail_after(self.timeout):
                        resp = await self._send("POST", self._target.path, headers, self._initialized_data)
                        resp.finish()
                    if not 200 <= resp.status < 300:
                        raise Failure("http_status", f"notifications/initialized: {resp.describe()}")
            except (Failure, trio.TooSlowError) as exc:
                log.warning("could not start a new session after HTTP 404: %s", exc)
                self.session_id = refused
                return False
            log.info("session %s expired on the server; continuing in new session %s", refused, session_id)
            return True

    async def _initialize_again(self, data: bytes) -> tuple[str | None, Any]:
        """POST ``initialize`` without a session; the new session id and the result."""
        resp = await self._send(
            "POST", self._target.path, self._headers(accept=_ACCEPT_BOTH, body=data), data
        )
        try:
            if not 200 <= resp.status < 300:
                raise Failure("http_status", f"initialize: {resp.describe()}")
            session_id = resp.headers.get("mcp-session-id")
            if session_id is not None and not _SESSION_ID.fullmatch(session_id):
                raise Failure("bad_response", f"the server sent an invalid Mcp-Session-Id: {session_id!r}")
            bodies: list[bytes] = []
            if resp.content_type == "text/event-stream":
                decoder = SSEDecoder(self.max_message_size)
                while not bodies and (chunk := await resp.next_chunk()) is not None:
                    bodies = [
                        e.data
                        for e in decoder.feed(chunk)
                        if e.event == "message" and _peek(e.data).kind == "response"
                    ]
            else:
                bodies = [await resp.read(self.max_message_size)]
        finally:
            resp.finish()
        try:
            answer = msgspec.json.decode(bodies[0]) if bodies else None
        except _BAD_JSON:
            answer = None
        if not isinstance(answer, dict) or "result" not in answer:
            raise Failure("bad_response", f"initialize was not answered with a result: {answer!r}")
        return session_id, answer["result"]

    async def _expire(self) -> None:
        """The server forgot the session: fail everything and end the channel."""
        if self.session_expired:
            return
        self.session_expired = True
        message = (
            f"session {self.session_id} expired: the server answered HTTP 404 Not Found for it; "
            "start a new session (open a new connection and client)"
        )
        self._ended = message
        failure = Failure("session_expired", message, status=404, session_id=self.session_id)
        victims = list(self._pending.items())
        self._pending.clear()
        exchanges = {id(ex): ex for _, ex in victims}
        for ex in exchanges.values():
            ex.abandoned = True
            ex.remaining.clear()
        for request_id, _ in victims:
            await self._put(failure.frame(request_id))
        self._end()
        for ex in exchanges.values():
            ex.scope.cancel()
        self._listen_scope.cancel()

    # ------------------------------------------------------------ GET stream

    def _start_listening(self) -> None:
        if not self.listen or self._listening or self._closed or self._ended is not None:
            return
        if self.protocol_version is None or _is_modern(self.protocol_version):
            return
        self._listening = True
        assert self._tasks is not None
        self._tasks.start_soon(self._listen)

    async def _listen(self) -> None:
        """The GET stream for server-initiated messages, reopened after drops."""
        last_event_id: str | None = None
        retry: int | None = None
        failures = 0
        with self._listen_scope:
            while True:
                extra: Headers | None = None
                if last_event_id is not None:
                    extra = [("Last-Event-ID", last_event_id.encode())]
                headers = self._headers(
                    accept="text/event-stream", version=self.protocol_version, extra=extra
                )
                sent_session = self.session_id
                try:
                    resp = await self._send("GET", self._target.path, headers)
                except Failure as exc:
                    failures += 1
                    log.debug("GET stream: %s", exc)
                else:
                    try:
                        if resp.status == 405:
                            log.debug("the server offers no GET stream (405)")
                            return
                        if resp.status == 404 and sent_session is not None:
                            resp.finish()
                            if await self._renew(sent_session):
                                last_event_id = None  # a new session: a new stream
                                continue
                            await self._expire()
                            return
                        if resp.status == 200 and resp.content_type == "text/event-stream":
                            failures = 0
                            decoder = SSEDecoder(self.max_message_size)
                            try:
                                while (chunk := await resp.next_chunk()) is not None:
                                    for event in decoder.feed(chunk):
                                        if event.event == "message":
                                            await self._deliver(event.data)
                                    if decoder.last_event_id is not None:
                                        last_event_id = decoder.last_event_id
                                    if decoder.retry is not None:
                                        retry = decoder.retry
                            except (Failure, SSEError) as exc:
                                failures += isinstance(exc, SSEError)
                                log.debug("GET stream dropped: %s", exc)
                            if decoder.last_event_id is not None:
                                last_event_id = decoder.last_event_id
                        else:
                            failures += 1
                            body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                            log.debug("GET stream refused: %s: %s", resp.describe(), excerpt(body))
                    finally:
                        resp.finish()
                if failures >= self.reconnect_attempts:
                    log.info("giving up the GET stream after %d failed attempts", failures)
                    return
                await trio.sleep(self._delay(retry))
