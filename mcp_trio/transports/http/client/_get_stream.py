"""The GET stream of the Streamable HTTP client, up to 2025-11-25: server-initiated messages.

It opens once the session is initialized (not at 2026-07-28), ends for good on
405, and is reopened with ``Last-Event-ID`` after drops, until
``reconnect_attempts`` attempts in a row failed.  A 404 for the session renews
it (a new session: a new stream) or expires it.  It runs in the lifecycle's
scope, so it stops when the session is gone.
"""

from __future__ import annotations

import trio

from .._sse import SSEDecoder, SSEError
from ._channel import _ERROR_BODY_LIMIT, _Sender, _Settings, _Tasks, log
from ._http11 import Failure, Headers, excerpt
from ._inbox import _Inbox
from ._lifecycle import _Lifecycle
from ._peek import _is_modern
from ._session_state import _SessionState


class _GetStream:
    """The GET stream for server-initiated messages: whether it was started, and its loop."""

    __slots__ = ("_settings", "_sender", "_state", "_inbox", "_lifecycle", "_tasks", "_started")

    def __init__(
        self,
        settings: _Settings,
        sender: _Sender,
        state: _SessionState,
        inbox: _Inbox,
        lifecycle: _Lifecycle,
        tasks: _Tasks,
    ) -> None:
        self._settings = settings
        self._sender = sender
        self._state = state
        self._inbox = inbox
        self._lifecycle = lifecycle
        self._tasks = tasks
        self._started = False

    def start(self) -> None:
        """The session is initialized: open the stream (once, if ``listen`` and the revision has one)."""
        if not self._settings.listen or self._started or self._tasks.closed or self._inbox.ended is not None:
            return
        version = self._state.protocol_version
        if version is None or _is_modern(version):
            return
        self._started = True
        self._tasks.nursery.start_soon(self._listen)

    async def _listen(self) -> None:
        """The GET stream for server-initiated messages, reopened after drops."""
        state, sender = self._state, self._sender
        last_event_id: str | None = None
        retry: int | None = None
        failures = 0
        with self._lifecycle.scope:
            while True:
                extra: Headers | None = None
                if last_event_id is not None:
                    extra = [("Last-Event-ID", last_event_id.encode())]
                headers = state.headers(
                    accept="text/event-stream", version=state.protocol_version, extra=extra
                )
                sent_session = state.session_id
                try:
                    resp = await sender.send("GET", sender.target.path, headers)
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
                            if await self._lifecycle.renew(sent_session):
                                last_event_id = None  # a new session: a new stream
                                continue
                            await self._lifecycle.expire()
                            return
                        if resp.status == 200 and resp.content_type == "text/event-stream":
                            failures = 0
                            decoder = SSEDecoder(self._settings.max_message_size)
                            try:
                                while (chunk := await resp.next_chunk()) is not None:
                                    for event in decoder.feed(chunk):
                                        if event.event == "message":
                                            await self._inbox.deliver(event.data)
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
                if failures >= self._settings.reconnect_attempts:
                    log.info("giving up the GET stream after %d failed attempts", failures)
                    return
                await trio.sleep(self._settings.delay(retry))
