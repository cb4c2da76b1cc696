"""The GET stream and DELETE of the Streamable HTTP endpoint (a mixin of
:class:`~mcp_trio.transports.http.server._endpoint.StreamableHTTP`): opening the
stream for messages unrelated to any request, resuming any stream with
``Last-Event-ID``, and ending a session."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

import trio

from ....store import StoreError
from .._replies import _SSE_HEADERS, _error_reply, _Reply, _unconfirmed_end
from .._request import HttpRequest, Responder, StreamSlots, _Slot
from .._sse import encode_event
from ._planner import DEFAULT_VERSION, refuse_get_accept, stream_key
from ._sharing import take_session
from ._streams import _CLOSE, _HttpSession, _pump, _Stream

if TYPE_CHECKING:
    from ._event_store import EventStore
    from ._sharing import Sharing
    from ._table import SessionTable

log = logging.getLogger("mcp_trio.http")


class _StreamsAndEnd:
    """``GET`` and ``DELETE`` of :class:`StreamableHTTP`."""

    sharing: Sharing | None
    stream_buffer: int
    stream_slots: StreamSlots
    event_store: EventStore | None
    stream_idle_timeout: float | None
    retry_ms: int | None
    table: SessionTable

    if TYPE_CHECKING:  # (StreamableHTTP's)

        def _session_for(self, request: HttpRequest) -> _HttpSession | _Reply: ...

        def _reserve_prime(self, session: _HttpSession, stream: _Stream, version: str) -> None: ...

        async def _prime(
            self, session: _HttpSession, stream: _Stream, responder: Responder, version: str
        ) -> None: ...

    async def _get(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        problem = refuse_get_accept(request.headers)
        if problem is not None:
            return problem
        found = self._session_for(request)
        sharing = self.sharing
        if sharing is not None:
            found = await sharing.find(request, found)
        if isinstance(found, _Reply):
            return found
        session = found
        last_event_id = request.headers.get("last-event-id")
        key = stream_key(last_event_id)
        stream = session.get_stream if key == "0" else session.streams.get(key)
        if stream is not None and stream.attached:
            return _error_reply(409, "Conflict: that stream is already connected")
        if stream is None and key == "0":
            stream = session.get_stream = _Stream("0", set(), self.stream_buffer)
        elif stream is None and sharing is not None:
            stream = sharing.follow(session, key)  # a POST stream of another worker's
        elif stream is not None:
            stream.forward = None  # (no longer followed from another worker)
        slot: _Slot | None = None
        backlog: list[bytes] = []
        if stream is not None:  # a stream to hold open: it needs room
            taken = self.stream_slots.take(request.client, partial(stream.push, _CLOSE))
            if isinstance(taken, _Reply):
                return taken
            slot = taken
            # Attach before reading the store, so nothing sent meanwhile is lost.  A plain
            # GET keeps what the last one left unsent (an idle end races with a message; the
            # client may have no event id to resume from); a resumption replays it from the store.
            kept = [item for item in stream.items if isinstance(item, tuple) and not last_event_id]
            stream.items.clear()
            stream.items.extend(kept)
            stream.attached = True
            if key == "0":
                backlog = list(session.backlog or ())
                session.backlog = None
        if stream is not None and not last_event_id:
            self._reserve_prime(session, stream, session.version or DEFAULT_VERSION)
        replayed: list[tuple[str, bytes]] = []
        try:
            if sharing is not None and stream is not None and key == "0":
                await sharing.hold_stream(session)  # other workers send its messages here
            elif stream is not None and stream.followed is not None and sharing is not None:
                stream.items.extendleft(reversed(await sharing.followed(stream)))
            if last_event_id and self.event_store is not None and session.id is not None:
                try:
                    found_replay = await self.event_store.replay_after(session.id, last_event_id)
                except StoreError as exc:
                    log.warning("session %s: nothing to resume, the event store failed: %s", session.id, exc)
                    found_replay = None
                if found_replay is not None:
                    replayed = found_replay[1]
            session.touch()
            await responder.start(200, _SSE_HEADERS)
            if stream is not None and not last_event_id:
                await self._prime(session, stream, responder, session.version or DEFAULT_VERSION)
            sent = set()
            for event_id, data in replayed:
                sent.add(event_id)
                if data:
                    await responder.send(encode_event(data, id=event_id))
            if stream is None:
                await responder.end()
                return None
            for data in backlog:
                await session.deliver(stream, data)
            idle = self.stream_idle_timeout
            await _pump(stream, responder, None, skip=sent, retry_ms=self.retry_ms, idle_timeout=idle)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("client left stream %s of session %s", key, session.id)
        finally:
            self.stream_slots.release(slot)
            if stream is not None:
                stream.attached = False
                if stream.followed is not None and sharing is not None:
                    sharing.unfollow(session, stream)
                elif stream.complete:
                    session.streams.pop(stream.key, None)
            session.touch()
        return None

    async def _delete(self, request: HttpRequest) -> _Reply | None:
        session, shared = self._session_for(request), self.sharing
        if isinstance(session, _Reply):  # (held by another worker, perhaps)
            return await shared.delete_elsewhere(request, session) if shared else session
        try:  # (first: a store that cannot say the session is gone everywhere ends nothing)
            record = await take_session(shared.store, session.id) if shared and session.id else None
        except StoreError as exc:
            return _unconfirmed_end(exc)
        if session.id is not None:
            self.table.drop(session)
        session.closed = True
        if shared is not None and session.id is not None:
            session.ended_everywhere = True
            await shared.tell_ended(session.id, record)  # every worker's replica ends
        await session.end_input()
        with trio.move_on_after(5):
            await session.wait_done()
        session.scope.cancel()
        return _Reply(200)
