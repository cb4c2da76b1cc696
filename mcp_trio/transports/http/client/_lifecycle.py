"""The session's lifecycle on the client, up to 2025-11-25: renewal after the
server answered 404 for it, and expiry when it cannot be renewed.

Renewal sends the session's ``initialize`` again (and
``notifications/initialized``), at most ``max_renewals`` times per channel,
one renewal at a time; a new session that speaks another protocol version is
refused.  Expiry fails every pending request (reason ``session_expired``),
stops their exchanges and what lives as long as the session (the GET stream,
run in :attr:`_Lifecycle.scope`), and ends the channel.
"""

from __future__ import annotations

from typing import Any

import msgspec
import trio

from .._sse import SSEDecoder
from ._channel import _ACCEPT_BOTH, _SESSION_ID, _Sender, _Settings, log
from ._http11 import Failure
from ._inbox import _Inbox
from ._peek import _BAD_JSON, _peek
from ._session_state import _SessionState


class _Lifecycle:
    """Session renewal (how many so far, one at a time) and expiry."""

    __slots__ = ("_settings", "_sender", "_state", "_inbox", "_renewing", "renewals", "expired", "scope")

    def __init__(self, settings: _Settings, sender: _Sender, state: _SessionState, inbox: _Inbox) -> None:
        self._settings = settings
        self._sender = sender
        self._state = state
        self._inbox = inbox
        self._renewing = trio.Lock()
        self.renewals = 0
        self.expired = False
        #: Cancelled when the session is gone for good (or the channel closes): the GET stream runs in it.
        self.scope = trio.CancelScope()

    async def renew(self, refused: str) -> bool:
        """The server answered 404 for session ``refused``: start a new session
        (``initialize`` again, then ``notifications/initialized``).  True when
        there is a new session to use (made here or by a concurrent caller)."""
        state, settings = self._state, self._settings
        async with self._renewing:
            if state.session_id != refused:
                return state.session_id is not None and not self.expired
            if (
                not settings.renew_sessions
                or state.init_data is None
                or self.renewals >= settings.max_renewals
                or self.expired
            ):
                return False
            self.renewals += 1
            version = state.protocol_version
            state.session_id = None
            try:
                with trio.fail_after(settings.timeout):
                    session_id, result = await self._initialize_again(state.init_data)
                answered = result.get("protocolVersion") if isinstance(result, dict) else None
                if answered != version:
                    raise Failure("bad_response", f"the new session speaks {answered!r}, not {version!r}")
                state.session_id = session_id
                initialized = state.initialized_data
                if initialized is not None:
                    headers = state.headers(accept=_ACCEPT_BOTH, body=initialized, version=version)
                    with trio.fail_after(settings.timeout):
                        resp = await self._sender.send("POST", self._sender.target.path, headers, initialized)
                        resp.finish()
                    if not 200 <= resp.status < 300:
                        raise Failure("http_status", f"notifications/initialized: {resp.describe()}")
            except (Failure, trio.TooSlowError) as exc:
                log.warning("could not start a new session after HTTP 404: %s", exc)
                state.session_id = refused
                return False
            log.info("session %s expired on the server; continuing in new session %s", refused, session_id)
            return True

    async def _initialize_again(self, data: bytes) -> tuple[str | None, Any]:
        """POST ``initialize`` without a session; the new session id and the result."""
        sender = self._sender
        resp = await sender.send(
            "POST", sender.target.path, self._state.headers(accept=_ACCEPT_BOTH, body=data), data
        )
        try:
            if not 200 <= resp.status < 300:
                raise Failure("http_status", f"initialize: {resp.describe()}")
            session_id = resp.headers.get("mcp-session-id")
            if session_id is not None and not _SESSION_ID.fullmatch(session_id):
                raise Failure("bad_response", f"the server sent an invalid Mcp-Session-Id: {session_id!r}")
            bodies: list[bytes] = []
            if resp.content_type == "text/event-stream":
                decoder = SSEDecoder(self._settings.max_message_size)
                while not bodies and (chunk := await resp.next_chunk()) is not None:
                    bodies = [
                        e.data
                        for e in decoder.feed(chunk)
                        if e.event == "message" and _peek(e.data).kind == "response"
                    ]
            else:
                bodies = [await resp.read(self._settings.max_message_size)]
        finally:
            resp.finish()
        try:
            answer = msgspec.json.decode(bodies[0]) if bodies else None
        except _BAD_JSON:
            answer = None
        if not isinstance(answer, dict) or "result" not in answer:
            raise Failure("bad_response", f"initialize was not answered with a result: {answer!r}")
        return session_id, answer["result"]

    async def expire(self) -> None:
        """The server forgot the session: fail everything and end the channel."""
        if self.expired:
            return
        self.expired = True
        session_id = self._state.session_id
        message = (
            f"session {session_id} expired: the server answered HTTP 404 Not Found for it; "
            "start a new session (open a new connection and client)"
        )
        failure = Failure("session_expired", message, status=404, session_id=session_id)
        exchanges = await self._inbox.end(message, failure, abandon=True)
        for ex in exchanges:
            ex.scope.cancel()
        self.scope.cancel()
