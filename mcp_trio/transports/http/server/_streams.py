"""A Streamable HTTP session's streams and how its answers go out.

:class:`_HttpSession` is the MessageChannel the engine sees for one session:
each frame it sends goes to the SSE stream (:class:`_Stream`) of the POST
that carried its request, or to the GET stream (kept in a bounded backlog
while none is connected); a lone answer that is its POST's whole reply goes
out as a JSON body, with no event id and no event store work.  Events get
ids ``<stream>.<n>`` and are stored (priming event first) for resumption.
The session's streams and all of this bookkeeping are its :class:`_Outbound`
(``session.out``); the session keeps its input, its version and its lifetime.
:func:`_pump` writes a stream out; :func:`_send_json` and
:func:`_send_empty_stream` answer a POST without SSE.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ....store import StoreError
from ..._base import (
    CLOSE_STREAM,
    Authorizing,
    ChannelTraits,
    DirectOutput,
    Frame,
    HostedSession,
    PushInput,
    RequestId,
    SharedRecord,
    SharedSession,
)
from .._replies import _ERROR_STATUS, _SSE_HEADERS, _peek, _Reply
from .._request import HttpRequest, Responder, Wakeup, _send_reply
from .._sse import encode_event, encode_retry

if TYPE_CHECKING:
    from .._bus import Restored
    from ._endpoint import StreamableHTTP

log = logging.getLogger("mcp_trio.http")

_END = object()
_CLOSE = object()  # end the response now; the stream goes on for a resuming client
#: Seconds a half-open session must be old before a new ``initialize`` of its own address
#: may replace it: a handshake takes a round trip, so one younger may be a client's in
#: progress, and an address refused (429) until then cannot churn sessions at will.
_REPLACE_AFTER = 10.0


class _Stream:
    """One logical SSE stream: a POST's (its request ids) or the GET stream."""

    def __init__(self, key: str, pending: set[RequestId], buffer: int) -> None:
        self.key = key
        self.pending = pending
        self.items: deque[Any] = deque()  # (event id, data) or _END, for the attached listener
        self.buffer = buffer
        self.wakeup = Wakeup()
        self.attached = False
        self.complete = False  # every request answered (POST) / session over
        self.prime_id: str | None = None
        self.prime_stored = False  # the priming event is in the event store
        self.delivered = 0  # events pushed so far
        #: Shared sessions: where what is pushed also goes (a client follows the
        #: stream on another worker), and the worker a followed stream is on.
        self.forward: Callable[[Any], None] | None = None
        self.followed: str | None = None

    def push(self, item: Any) -> None:
        if self.forward is not None:
            self.forward(item)
        if self.attached:
            if len(self.items) >= self.buffer and item is not _END and item is not _CLOSE:
                # The reader is too slow: detach it (it may resume from the store).
                self.items.clear()
                self.items.append(_END)
                self.attached = False
            else:
                self.items.append(item)
        self.wakeup.wake()

    async def next(self) -> Any:
        while not self.items:
            await self.wakeup.wait()
        return self.items.popleft()


class _Outbound:
    """What goes out of one session over HTTP (a collaborator of :class:`_HttpSession`): its
    streams, a POST's for the requests it carried and the GET stream, which request is
    answered on which, the event ids and their storing for resumption, and what waits for a
    GET stream while none is connected."""

    __slots__ = (
        "_seq",
        "_stream_seq",
        "_suffix",
        "auth",
        "backlog",
        "by_request",
        "get_stream",
        "id",
        "owner",
        "streams",
    )

    def __init__(self, owner: StreamableHTTP, session_id: str | None, suffix: str) -> None:
        self.owner = owner
        self.id = session_id
        self._suffix = suffix  # (ends this worker's event ids; shared sessions)
        self.streams: dict[str, _Stream] = {}
        self.by_request: dict[RequestId, _Stream] = {}
        #: request id -> the ``HttpRequest.auth`` of the POST that carried it, until answered.
        self.auth: dict[RequestId, Any] = {}
        self.get_stream: _Stream | None = None
        #: Messages for the GET stream while none is connected (made on the first one).
        self.backlog: deque[bytes] | None = None
        self._seq = 0
        self._stream_seq = 0

    def push_answer(self, stream: _Stream, frame: Frame) -> None:
        stream.delivered += 1
        stream.push((None, frame.data))  # no event id: it goes out as a JSON body
        assert frame.related is not None
        self.finish(frame.related)

    def plain_answer(self, stream: _Stream, request_id: RequestId | None) -> bool:
        """True when the answer to ``request_id`` will be its POST's whole reply,
        a JSON body: it answers the stream's only request and nothing came
        before it.  Such an answer gets no event id and is not stored (nothing
        could resume it), so a quick call costs no event store work."""
        return (
            stream.delivered == 0
            and not stream.prime_stored  # an SSE response began (or was closed early for polling)
            and stream is not self.get_stream
            and self.owner.response_mode != "sse"
            and len(stream.pending) == 1
            and request_id in stream.pending
        )

    def plain_batch_reply(self, stream: _Stream) -> bool:
        """True when a batch's reply will be its POST's whole reply, a JSON
        body (as :meth:`plain_answer` for a lone answer): nothing came before
        it on the stream, which no SSE response began.  It is not stored."""
        return (
            stream.delivered == 0
            and not stream.prime_stored
            and stream is not self.get_stream
            and self.owner.response_mode != "sse"
        )

    def stream_of(self, batch_reply: bytes) -> _Stream | None:
        try:
            replies = _peek.decode(batch_reply)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        for reply in replies if isinstance(replies, list) else [replies]:
            stream = self.by_request.get(reply.id)
            if stream is not None:
                return stream
        return None

    def close_stream(self, request_id: RequestId | None) -> None:
        """End the response carrying ``request_id`` early, if the client can
        resume it: the stream began with a priming event (so it has an event id
        to resume from) and is an SSE response now."""
        stream = self.by_request.get(request_id) if request_id is not None else None
        if stream is None or not stream.attached or stream.prime_id is None:
            return
        if self.owner.response_mode == "json":
            return
        stream.push(_CLOSE)

    def new_stream(self, pending: set[RequestId]) -> _Stream:
        self._stream_seq += 1
        stream = _Stream(f"{self._stream_seq}{self._suffix}", pending, self.owner.stream_buffer)
        self.streams[stream.key] = stream
        for rid in pending:
            self.by_request[rid] = stream
        return stream

    def finish(self, request_id: RequestId) -> None:
        self.auth.pop(request_id, None)
        stream = self.by_request.pop(request_id, None)
        if stream is None:
            return
        stream.pending.discard(request_id)
        if not stream.pending:
            stream.complete = True
            stream.push(_END)
            if not stream.attached:
                self.streams.pop(stream.key, None)

    def next_event_id(self, stream: _Stream) -> str:
        self._seq += 1
        return f"{stream.key}.{self._seq}{self._suffix}"

    def holds_stream(self) -> bool:
        """Whether a client is connected to one of the session's streams here."""
        get = self.get_stream
        return (get is not None and get.attached) or any(s.attached for s in self.streams.values())

    async def to_get_stream(self, data: bytes) -> None:
        """Send ``data`` on the GET stream (kept for it while none is connected)."""
        stream = self.get_stream
        if stream is not None and stream.attached:
            await self.deliver(stream, data)
            return
        self.keep(data)

    def keep(self, data: bytes) -> None:
        """Keep ``data`` for the GET stream, none being connected (the oldest dropped beyond ``backlog``)."""
        if self.backlog is None:
            self.backlog = deque(maxlen=self.owner.backlog)
        self.backlog.append(data)

    async def deliver(self, stream: _Stream, data: bytes) -> None:
        event_id = self.next_event_id(stream)
        store = self.owner.event_store
        # A POST's reply in "json" mode is a JSON body: nothing in it can be resumed.
        resumable = stream is self.get_stream or self.owner.response_mode != "json"
        if store is not None and self.id is not None and resumable:
            try:
                await self.store_prime(stream)
                await store.store(self.id, stream.key, event_id, data)
            except StoreError as exc:  # sent all the same; a client cannot resume it
                log.warning("an event of session %s was not stored: %s", self.id, exc)
        stream.delivered += 1
        stream.push((event_id, data))

    def end(self) -> None:
        """The session is over: every stream ends, no request is in progress."""
        for stream in list(self.streams.values()):
            stream.complete = True
            stream.push(_END)
        if self.get_stream is not None:
            self.get_stream.push(_END)
        self.streams.clear()
        self.by_request.clear()
        self.auth.clear()

    async def store_prime(self, stream: _Stream) -> None:
        """Put ``stream``'s priming event in the event store, once, before any
        other event of the stream: when the first one is stored or the priming
        event is sent, whichever comes first (a POST answered with plain JSON
        never stores it)."""
        store = self.owner.event_store
        if stream.prime_id is None or stream.prime_stored or store is None or self.id is None:
            return
        stream.prime_stored = True
        try:
            await store.store(self.id, stream.key, stream.prime_id, b"")
        except StoreError as exc:  # sent all the same; a client cannot resume it
            log.warning("an event of session %s was not stored: %s", self.id, exc)


class _HttpSession(
    trio.abc.Channel[Frame], ChannelTraits, DirectOutput, PushInput, Authorizing, HostedSession, SharedSession
):
    """The MessageChannel the engine sees for one MCP session over HTTP."""

    # Slots: a server holds up to ``max_sessions`` of these; past 30 attributes CPython gives
    # each instance a dictionary of its own (keys too), about 1.5 KiB more per session.
    __slots__ = tuple(
        (
            "_arrived _early _feed _input_ended _on_end _room _sharing "
            "assumed_version client closed done due ended_everywhere "
            "expect_modern finished holder id init_params initialize_id "
            "max_queued max_queued_total negotiated on_shared_update opened out owner past_initialize "
            "principal record renewed request_id_prefix restored scope session_id sessionless "
            "version worker"
        ).split()
    )
    stream_controls = True  # the engine may send CLOSE_STREAM controls
    client: str | None
    restored: Restored | None

    def __init__(self, owner: StreamableHTTP, session_id: str | None, by: HttpRequest | None = None) -> None:
        self.owner = owner
        self.id = self.session_id = session_id
        #: The endpoint's bounds on waiting requests (the engine reads them).
        self.max_queued = owner.max_queued
        self.max_queued_total = owner.max_queued_total
        #: The session's protocol version: the requested one until the answer to
        #: ``initialize`` (``initialize_id``) names the negotiated one.
        self.version: str | None = None
        self.initialize_id: RequestId | None = None
        self.negotiated = False  # the answer to initialize named the version
        #: Set by the first request after the ``initialize`` POST (see StreamableHTTP._session_for);
        #: a full session table evicts the oldest session without it first.
        self.past_initialize = False
        self.opened = trio.current_time()
        # Input: the engine takes each frame in the POST's own task once attached (attach_receiver);
        # frames before that, or all for an engine reading with receive(), wait here (inbound_buffer).
        self._feed: Callable[[Frame], Awaitable[None]] | None = None
        self._early: deque[Frame] | None = None
        self._arrived: trio.Event | None = None  # receive() waits for a frame
        self._room: trio.Event | None = None  # put() waits for room in _early
        self._on_end: Callable[[], None] | None = None  # the engine's, see attach_receiver
        self._input_ended = False
        self.scope = trio.CancelScope()
        #: When the session expires unless a request comes or a stream is open (see touch).
        self.due = math.inf
        #: Set once the session's engine has ended (made when somebody waits, see wait_done).
        self.done: trio.Event | None = None
        self.finished = False
        self.closed = False
        self.ended_everywhere = False  # (see end_here)
        #: Stateless mode: the version to serve without a handshake (see open_session).
        self.assumed_version: str | None = None
        #: A stateless (2026-07-28+) request's own session (see open_session).
        self.expect_modern = False
        #: Served for one POST only (stateless mode, or a 2026-07-28 request): nothing
        #: tied to the session outlives it, so the server offers no 2025-11-25 tasks.
        self.sessionless = session_id is None
        #: The ``HttpRequest.principal`` and ``client`` (address) of the request that opened it
        #: (its ``initialize``, or a sessionless one; only that principal's requests find it).
        self.principal: Hashable | None = None if by is None else by.principal
        self.client: str | None = None if by is None else by.client
        # Shared through a store (see _sharing.py); nothing of this is used without one.
        sharing = owner.sharing if session_id is not None else None
        self._sharing = sharing
        self.worker = sharing.worker if sharing is not None else None
        #: What goes out: the streams, which request's answer goes to which, the event ids.
        self.out = _Outbound(owner, session_id, sharing.suffix if sharing is not None else "")
        self.request_id_prefix = sharing.id_prefix if sharing is not None else None
        self.record = None
        if sharing is not None and session_id is not None:
            self.record = SharedRecord(sharing.store.sessions, session_id, sharing.records.record_ttl)
        self.restored: Restored | None = None
        self.renewed = -math.inf  # when this worker last renewed the shared record (trio clock)
        #: Shared: the worker holding (or last holding) the GET stream, else the first (None:
        #: this one); it tells the session of list changes and resource updates.
        self.holder: str | None = None
        #: The ``initialize`` params, until the record is written (see StreamableHTTP._answer_post).
        self.init_params: dict[str, Any] | None = None
        self.on_shared_update: Callable[[str | None, list[str]], None] | None = None

    async def remember(self, *, log_level: str | None, subscriptions: list[str]) -> None:
        """Keep the log level and subscriptions for every worker (unshared: nothing to do)."""
        if self._sharing is not None:
            await self._sharing.update(self, log_level=log_level, subscriptions=subscriptions)

    def auth_for(self, request_id: RequestId) -> Any:
        """The authorization the request ``request_id`` came with (``HttpRequest.auth``)."""
        return self.out.auth.get(request_id)

    # ---- engine side

    async def wait_done(self) -> None:
        """Wait until the session's engine has ended."""
        if not self.finished:
            self.done = self.done or trio.Event()
            await self.done.wait()

    async def receive(self) -> Frame:
        while not self._early:
            if self._input_ended:
                raise trio.EndOfChannel
            self._arrived = trio.Event()
            await self._arrived.wait()
        frame = self._early.popleft()
        if self._room is not None:
            self._room.set()
        return frame

    async def attach_receiver(
        self, feed: Callable[[Frame], Awaitable[None]], on_end: Callable[[], None]
    ) -> None:
        """Push input (see ``Session.run``): feed the frames that came before,
        in order, then hand every later one to ``await feed(frame)`` in the
        task of the request that carried it, with no task or channel of the
        engine's own in between.  ``on_end()`` is called once when the input
        ends (the session was deleted or expired, or the engine closed it)."""
        while self._early:
            await feed(self._early.popleft())
        self._early = None
        if self._room is not None:
            self._room.set()
        if self._input_ended:
            on_end()
            return
        self._feed = feed
        self._on_end = on_end

    async def send(self, value: Frame) -> None:
        out = self.out
        if value.control == CLOSE_STREAM:
            out.close_stream(value.related)
            return
        if not value.data:
            return
        self._learn_version(value)
        batch_reply = value.final and value.data[:1] == b"["
        stream = out.by_request.get(value.related) if value.related is not None else None
        if stream is None and batch_reply:
            # A batch the core answered by itself (e.g. pings only): find it by its ids.
            stream = out.stream_of(value.data)
        if stream is None and value.related is None and value.final and len(out.streams) == 1:
            # A reply with no id (a parse error of a POST): its POST's stream.
            stream = next(iter(out.streams.values()))
        if stream is None:
            stream = out.get_stream
            if stream is None or not stream.attached:
                if self._sharing is not None and await self._sharing.to_stream_holder(self, value.data):
                    return  # another worker holds the GET stream
                out.keep(value.data)
                return
        if value.final and not batch_reply and out.plain_answer(stream, value.related):
            out.push_answer(stream, value)
            return
        if batch_reply and out.plain_batch_reply(stream):
            stream.delivered += 1
            stream.push((None, value.data))  # no event id: it goes out as a JSON body
            for request_id in list(stream.pending):
                out.finish(request_id)
            return
        await out.deliver(stream, value.data)
        if batch_reply and stream is not out.get_stream:
            for request_id in list(stream.pending):  # a batch reply answers them all
                out.finish(request_id)
        elif value.final and value.related is not None:
            out.finish(value.related)

    def send_nowait(self, frame: Frame) -> None:
        """Deliver an answer at once, from the task that produced it, or nothing.

        The engine calls this instead of handing a lone answer to its writer
        task when nothing is queued before it (see ``HandlerRunner.write_now``).
        Only a plain answer (see :meth:`_Outbound.plain_answer`) is delivered
        here: it needs no event store, so no waiting.

        Raises:
            trio.WouldBlock: anything else; the writer sends it with :meth:`send`.
        """
        related = frame.related
        if not frame.final or related is None or frame.control is not None:
            raise trio.WouldBlock
        if frame.data[:1] in (b"", b"["):  # nothing to send, or a batch's answers
            raise trio.WouldBlock
        out = self.out
        stream = out.by_request.get(related)
        if stream is None or not out.plain_answer(stream, related):
            raise trio.WouldBlock
        self._learn_version(frame)
        out.push_answer(stream, frame)

    def _learn_version(self, frame: Frame) -> None:
        """Take the negotiated version from the answer to ``initialize``: it
        decides what the session accepts (batches only in 2025-03-26), whatever
        version the client asked for."""
        if frame.related is None or frame.related != self.initialize_id or not frame.final:
            return
        self.initialize_id = None
        try:
            result = _init_peek.decode(frame.data).result
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if result is not None and isinstance(result.protocolVersion, str):
            self.version = result.protocolVersion  # (an error answer names none)
            self.negotiated = True

    async def aclose(self) -> None:
        self._end()
        await trio.lowlevel.checkpoint()

    def close_nowait(self) -> None:
        """:meth:`aclose` without waiting: the input ends (the engine uses this,
        and so does a stateless request once its frame is handed over)."""
        self._end()

    def _end(self) -> None:
        self._input_ended = True
        self._feed = None
        for event in (self._arrived, self._room):
            if event is not None:
                event.set()
        on_end, self._on_end = self._on_end, None
        if on_end is not None:
            on_end()

    # ---- HTTP side

    def announces(self) -> bool:  # (see holder)
        return self._sharing is None or self.holder is None or self.holder == self._sharing.worker

    async def adopted(self) -> bool:  # (see Sharing.adopt)
        return self._sharing is not None and await self._sharing.adopt(self)

    def end_here(self) -> None:
        """End this worker's replica of a session that ended elsewhere (as ``DELETE`` does)."""
        self.ended_everywhere = True
        if self.id is not None:
            self.owner.table.drop(self)
        self.closed = True
        self._end()
        self.scope.cancel()  # StreamableHTTP._run_session's finally forgets the rest

    async def put(self, frame: Frame) -> None:
        """Hand an incoming frame to the engine.

        Raises:
            trio.ClosedResourceError: the session's input has ended.
        """
        while True:
            if self._input_ended:
                raise trio.ClosedResourceError("the session has ended")
            if self._feed is not None:
                await self._feed(frame)
                return
            if self._early is None:
                self._early = deque()
            if len(self._early) < self.owner.inbound_buffer:
                self._early.append(frame)
                if self._arrived is not None:
                    self._arrived.set()
                return
            self._room = trio.Event()
            await self._room.wait()

    async def end_input(self) -> None:
        self._end()

    def touch(self) -> None:
        """Activity: the session's idle time starts again (``SessionTable.expire_idle``
        ends it once ``due`` has passed with no stream open)."""
        self.due = trio.current_time() + self.owner.idle_timeout

    def busy(self) -> bool:
        """Whether a POST or the GET stream is open (no idle expiry meanwhile)."""
        return self.out.holds_stream()

    @property
    def streams(self) -> dict[str, _Stream]:
        """The session's POST streams (and those followed from another worker), by key."""
        return self.out.streams

    @property
    def by_request(self) -> dict[RequestId, _Stream]:
        """The stream each request still unanswered is answered on."""
        return self.out.by_request


# ---------------------------------------------------------------- answers


async def _pump(
    stream: _Stream,
    responder: Responder,
    first: Any,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
    retry_ms: int | None = None,
    idle_timeout: float | None = None,
) -> None:
    """Write the stream's events until it completes (or is closed early for the
    client to resume it, or sent nothing for ``idle_timeout`` seconds: closed
    the same way); end the response."""
    item = first if first is not None else await _next(stream, idle_timeout)
    try:
        while item is not _END:
            if item is _CLOSE:
                if retry_ms is not None:
                    await responder.send(encode_retry(retry_ms))
                break
            if not isinstance(item, tuple):  # a marker of a followed stream's, already acted on
                item = await _next(stream, idle_timeout)
                continue
            event_id, data = item
            if event_id not in skip:
                await responder.send(encode_event(data, id=event_id))
            item = await _next(stream, idle_timeout)
        await responder.end()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        log.debug("client left SSE stream %s", stream.key)


async def _next(stream: _Stream, idle_timeout: float | None) -> Any:
    """The stream's next item, or ``_CLOSE`` when none came within ``idle_timeout``."""
    if idle_timeout is None:
        return await stream.next()
    with trio.move_on_after(idle_timeout):
        return await stream.next()
    return _CLOSE


class _InitializePeek(msgspec.Struct):
    protocolVersion: Any = None


class _AnswerPeek(msgspec.Struct):
    result: _InitializePeek | None = None


_init_peek = msgspec.json.Decoder(_AnswerPeek)


class _ErrorPeek(msgspec.Struct):
    code: Any = None


class _ReplyPeek(msgspec.Struct):
    error: _ErrorPeek | None = None


_reply_peek = msgspec.json.Decoder(_ReplyPeek)


def _status(session: _HttpSession, bodies: list[bytes]) -> int:
    """200, or for the single error answering a stateless request the status the
    revision gives its code (404 for an unknown method, 400 for a refused request)."""
    if not session.expect_modern or len(bodies) != 1:
        return 200
    try:
        error = _reply_peek.decode(bodies[0]).error
    except (msgspec.DecodeError, msgspec.ValidationError):
        return 200
    return _ERROR_STATUS.get(error.code, 200) if error is not None else 200


async def _send_json(
    responder: Responder, bodies: list[bytes], headers: list[tuple[str, str]], status: int = 200
) -> None:
    if not bodies:
        await _send_reply(responder, _Reply(202, headers=headers))
        return
    body = bodies[0] if len(bodies) == 1 else b"[" + b",".join(bodies) + b"]"
    await _send_reply(responder, _Reply(status, body, [*headers, ("content-type", "application/json")]))


async def _send_empty_stream(responder: Responder, headers: list[tuple[str, str]]) -> None:
    """The answer to a POST whose requests were all cancelled: nothing to send,
    but a request's POST must be answered with SSE or JSON (not 202)."""
    await responder.start(200, [*headers, *_SSE_HEADERS])
    await responder.end()
