"""How a Streamable HTTP endpoint's answers go out as streams: a POST's answer
(one JSON body, or an SSE stream: ``response_mode``), the priming event that
starts a resumable stream, and the GET stream: the one for messages unrelated
to any request (bounded by :class:`StreamSlots`, ended when idle) or any stream
resumed with ``Last-Event-ID``.  :class:`Streaming` is a collaborator of
:class:`~mcp_trio.transports.http.server._endpoint.StreamableHTTP`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

import trio

from ....store import StoreError
from .._replies import _SSE_HEADERS, _error_reply, _is_response, _Reply
from .._request import HttpRequest, Responder, StreamSlots, _Slot
from .._sse import encode_event
from ._planner import DEFAULT_VERSION, refuse_get_accept, stream_key
from ._streams import _CLOSE, _END, _HttpSession, _pump, _send_empty_stream, _send_json, _status, _Stream

if TYPE_CHECKING:
    from ._event_store import EventStore
    from ._sharing import Sharing

log = logging.getLogger("mcp_trio.http")

_FIRST_PRIMING = "2025-11-25"  # the first revision whose SSE streams start with a priming event


class Streaming:
    """The streams of a :class:`StreamableHTTP` endpoint (its settings, as given to it)."""

    def __init__(
        self,
        *,
        response_mode: str,
        retry_ms: int | None,
        event_store: EventStore | None,
        slots: StreamSlots,
        buffer: int,
        idle_timeout: float | None,
        sharing: Sharing | None,
        session_for: Callable[[HttpRequest], _HttpSession | _Reply],
    ) -> None:
        self.response_mode = response_mode
        self.retry_ms = retry_ms
        self.event_store = event_store
        self.stream_slots = slots
        self.stream_buffer = buffer
        self.stream_idle_timeout = idle_timeout
        self.sharing = sharing
        self._session_for = session_for

    async def answer_post(
        self,
        session: _HttpSession,
        stream: _Stream,
        responder: Responder,
        headers: list[tuple[str, str]],
        version: str,
    ) -> None:
        """Send what ``stream`` (a POST's) carries: one JSON body when the answer
        comes first and alone (or always, ``response_mode="json"``), else an SSE stream."""
        first = await stream.next()
        if session.init_params is not None and self.sharing is not None:
            await self.sharing.records.save(session)  # before the client can use the session elsewhere
        if first is not _END and first is not _CLOSE and first[0] is None:
            # The answer came first and alone (see _Outbound.plain_answer).
            await _send_json(responder, [first[1]], headers, _status(session, [first[1]]))
            return
        if self.response_mode == "json":
            bodies = []
            item = first
            while item is not _END:
                if item is not _CLOSE and _is_response(item[1]):
                    bodies.append(item[1])  # other messages have no place in a JSON reply
                item = await stream.next()
            if bodies:
                await _send_json(responder, bodies, headers, _status(session, bodies))
            else:
                await _send_empty_stream(responder, headers)
            return
        if first is _END:
            await _send_empty_stream(responder, headers)
            return
        if (
            self.response_mode == "auto"
            and first is not _CLOSE
            and stream.complete
            and list(stream.items) == [_END]
            and _is_response(first[1])
        ):
            await _send_json(
                responder, [first[1]], headers, _status(session, [first[1]])
            )  # nothing but the answer
            return
        await responder.start(200, [*headers, *_SSE_HEADERS])
        await self.prime(session, stream, responder)
        await _pump(stream, responder, first, retry_ms=self.retry_ms)

    def reserve_prime(self, session: _HttpSession, stream: _Stream, version: str) -> None:
        """Give ``stream`` its priming event id before anything else is sent on
        it (stored later, see :meth:`_Outbound.store_prime`)."""
        if version < _FIRST_PRIMING or session.id is None or self.event_store is None:
            return
        stream.prime_id = session.out.next_event_id(stream)

    async def prime(self, session: _HttpSession, stream: _Stream, responder: Responder) -> None:
        if stream.prime_id is not None:
            await session.out.store_prime(stream)
            await responder.send(encode_event(b"", id=stream.prime_id, retry=self.retry_ms))

    async def get(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        """Answer a ``GET``: attach to the session's stream, or resume one (``Last-Event-ID``)."""
        problem = refuse_get_accept(request.headers)
        if problem is not None:
            return problem
        found = self._session_for(request)
        sharing = self.sharing
        if sharing is not None:
            found = await sharing.records.find(request, found)
        if isinstance(found, _Reply):
            return found
        session = found
        last_event_id = request.headers.get("last-event-id")
        key = stream_key(last_event_id)
        stream = session.out.get_stream if key == "0" else session.out.streams.get(key)
        if stream is not None and stream.attached:
            return _error_reply(409, "Conflict: that stream is already connected")
        if stream is None and key == "0":
            stream = session.out.get_stream = _Stream("0", set(), self.stream_buffer)
        elif stream is None and sharing is not None:
            stream = sharing.following.follow(session, key)  # a POST stream of another worker's
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
                backlog = list(session.out.backlog or ())
                session.out.backlog = None
        if stream is not None and not last_event_id:
            self.reserve_prime(session, stream, session.version or DEFAULT_VERSION)
        replayed: list[tuple[str, bytes]] = []
        try:
            if sharing is not None and stream is not None and key == "0":
                await sharing.hold_stream(session)  # other workers send its messages here
            elif stream is not None and stream.followed is not None and sharing is not None:
                stream.items.extendleft(reversed(await sharing.following.followed(stream)))
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
                await self.prime(session, stream, responder)
            sent = set()
            for event_id, data in replayed:
                sent.add(event_id)
                if data:
                    await responder.send(encode_event(data, id=event_id))
            if stream is None:
                await responder.end()
                return None
            for data in backlog:
                await session.out.deliver(stream, data)
            idle = self.stream_idle_timeout
            await _pump(stream, responder, None, skip=sent, retry_ms=self.retry_ms, idle_timeout=idle)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("client left stream %s of session %s", key, session.id)
        finally:
            self.stream_slots.release(slot)
            if stream is not None:
                stream.attached = False
                if stream.followed is not None and sharing is not None:
                    sharing.following.unfollow(session, stream)
                elif stream.complete:
                    session.out.streams.pop(stream.key, None)
            session.touch()
        return None
