"""Streamable HTTP, server side: the protocol logic, independent of the web server.

:class:`StreamableHTTP` answers one HTTP request at a time through two tiny
interfaces, :class:`HttpRequest` and :class:`Responder`; front doors adapt a
real server to them (:class:`ASGIApp` for hypercorn or any ASGI server).
Every MCP session is a :class:`~mcp_trio.transports.MessageChannel` served by
the ``serve_session`` callable given at construction, in a nursery this
object owns (so nothing outlives :meth:`StreamableHTTP.run`).

Rules:

* ``POST`` carries one JSON-RPC message (or a batch in 2025-03-26).  Only
  notifications and responses → 202.  Requests → one JSON body when the
  first thing the server sends back is the response (``response_mode="auto"``,
  the default) or always (``"json"``), else an SSE stream that ends once every
  request of the POST is answered (``"sse"`` forces it).  A POST whose
  requests were all cancelled gets an SSE stream with nothing in it.
* Sessions: ``initialize`` creates one; its id (256 random bits, URL-safe
  base64) comes back in ``Mcp-Session-Id``.  Later requests without it get
  400, with an unknown or ended one 404.  ``DELETE`` ends it.  A session with
  no open stream and no request for ``idle_timeout`` seconds ends; at most
  ``max_sessions`` exist (503 beyond).  Nothing of an ended session is kept.
* Stateless requests (2026-07-28: the protocol version in ``_meta``) need no
  session: each POST is served by a session of its own.
* ``GET`` opens the stream for messages unrelated to any request (one per
  session, 409 for a second).  Messages sent while no GET stream is open are
  kept (bounded) and delivered when one opens.
* SSE events carry ids ``<stream>.<n>`` unique within the session; with an
  :class:`EventStore` (an in-memory bounded one by default) a client that lost
  a stream reconnects with ``GET`` and ``Last-Event-ID`` and gets the rest of
  *that* stream.  From 2025-11-25 on each SSE stream starts with a priming
  event (an id and empty data) with ``retry``.  A handler may end its POST's
  stream early (``ctx.close_stream()``): the response ends after a ``retry``
  event, the request goes on, and the client resumes the stream with ``GET``
  + ``Last-Event-ID`` to receive the rest (SSE polling).
* A client that disconnects does not cancel its request (the spec says so);
  only ``notifications/cancelled`` does.
* ``MCP-Protocol-Version`` must name a supported revision (400 otherwise);
  without it 2025-03-26 is assumed.  A 2026-07-28 request must carry
  ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` (``tools/call``,
  ``resources/read``, ``prompts/get``) and the ``Mcp-Param-*`` headers its
  tool's ``x-mcp-header`` annotations ask for, all matching the body (400 with
  ``HeaderMismatch`` -32020 otherwise).  Host and Origin are checked against
  allow-lists (DNS rebinding; 421 / 403).  Bodies over ``max_body_size`` get
  413.  A session holds at most ``max_streams`` open POST streams (429 beyond).
"""

from __future__ import annotations

import logging
import os
import secrets
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import h11
import msgspec
import trio

from ... import _jsonrpc as rpc
from ...types import _versions
from .._base import CLOSE_STREAM, Frame, RequestId
from ._headers import Annotations, check_request_headers
from ._sse import encode_event, encode_retry

__all__ = [
    "ASGIApp",
    "EventStore",
    "Handler",
    "HostGuard",
    "HttpRequest",
    "InMemoryEventStore",
    "Responder",
    "StreamableHTTP",
    "serve_h11",
    "serve_hypercorn",
]

log = logging.getLogger("mcp_trio.http")

ServeSession = Callable[..., Awaitable[Any]]

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_DEFAULT_VERSION = "2025-03-26"  # assumed when MCP-Protocol-Version is absent
_FIRST_PRIMING = "2025-11-25"
_META_VERSION = "io.modelcontextprotocol/protocolVersion"
_HEADER_SESSION = "mcp-session-id"
_HEADER_VERSION = "mcp-protocol-version"


class _Message(msgspec.Struct):
    """Just enough of a JSON-RPC message to route it."""

    id: Any = msgspec.UNSET
    method: Any = msgspec.UNSET
    params: Any = msgspec.UNSET
    result: Any = msgspec.UNSET
    error: Any = msgspec.UNSET

    @property
    def kind(self) -> str:
        has_id = self.id is not msgspec.UNSET
        if isinstance(self.method, str):
            if not has_id:
                return "notification"
            return "request" if isinstance(self.id, int | str) and not isinstance(self.id, bool) else "invalid"
        if has_id and (self.result is not msgspec.UNSET) != (self.error is not msgspec.UNSET):
            return "response"
        return "invalid"


_peek = msgspec.json.Decoder(_Message | list[_Message])


# ------------------------------------------------------------- interfaces


@dataclass
class HttpRequest:
    """One HTTP request, as a front door hands it over.

    Attributes:
        method: ``GET``, ``POST`` ...
        headers: Lower-case names; repeated headers joined with ``", "``.
        body: The whole body (front doors enforce ``max_body_size`` while reading).
        path: The request target's path (without the query).
        query: The query string (after ``?``), undecoded.
        auth: What an authorization layer in front of the endpoint verified
            (``mcp_trio.auth.server`` puts the access token here); handlers
            of the requests this POST carries read it as ``ctx.auth``.
    """

    method: str
    headers: dict[str, str]
    body: bytes = b""
    path: str = ""
    query: str = ""
    auth: Any = None


class Handler(Protocol):
    """What a front door serves at a path: :class:`StreamableHTTP` or another
    endpoint (the legacy HTTP+SSE one)."""

    max_body_size: int

    async def handle(self, request: HttpRequest, responder: Responder) -> None: ...


class HostGuard:
    """``Host`` and ``Origin`` allow-lists (DNS rebinding protection).

    ``allowed_hosts`` (port ignored; ``None``: any); ``allowed_origins``
    applies when an ``Origin`` header is present (default: ``http(s)://`` +
    an allowed host; ``None`` with ``allowed_hosts=None``: any).
    """

    def __init__(
        self,
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
    ) -> None:
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        if allowed_origins is None and self.allowed_hosts is not None:
            allowed_origins = [f"{s}://{h}" for h in self.allowed_hosts for s in ("http", "https")]
        self.allowed_origins = None if allowed_origins is None else {o.lower() for o in allowed_origins}

    def check(self, request: HttpRequest) -> _Reply | None:
        """The rejection for ``request`` (421 / 403), or None."""
        if self.allowed_hosts is not None:
            host = request.headers.get("host", "").lower()
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in self.allowed_hosts and host not in self.allowed_hosts:
                return _error_reply(421, f"Host not allowed: {host!r}")
        origin = request.headers.get("origin")
        if origin is not None and self.allowed_origins is not None:
            base = origin.lower()
            scheme, _, rest = base.partition("://")
            if rest.startswith("["):  # an IPv6 literal, maybe with a port after "]"
                bare = f"{scheme}://{rest[: rest.find(']') + 1]}" if "]" in rest else base
            else:
                bare = f"{scheme}://{rest.rsplit(':', 1)[0]}" if rest.count(":") == 1 else base
            if base not in self.allowed_origins and bare not in self.allowed_origins:
                return _error_reply(403, f"Origin not allowed: {origin!r}")
        return None


class Responder(Protocol):
    """Where the answer goes.  ``send`` raises ``trio.BrokenResourceError``
    once the client is gone."""

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def end(self) -> None: ...


class EventStore(Protocol):
    """Keeps SSE events so a client can resume a stream it lost."""

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None: ...

    async def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        """The stream of ``event_id`` and its events after it, or ``None`` if unknown."""
        ...

    async def forget(self, session_id: str) -> None: ...


class InMemoryEventStore:
    """The newest ``max_events`` events of each session."""

    def __init__(self, max_events: int = 1024) -> None:
        self.max_events = max_events
        self._events: dict[str, deque[tuple[str, str, bytes]]] = {}

    async def store(self, session_id: str, stream: str, event_id: str, data: bytes) -> None:
        events = self._events.get(session_id)
        if events is None:
            events = self._events[session_id] = deque(maxlen=self.max_events)
        events.append((stream, event_id, data))

    async def replay_after(self, session_id: str, event_id: str) -> tuple[str, list[tuple[str, bytes]]] | None:
        events = self._events.get(session_id, ())
        for i, (stream, eid, _) in enumerate(events):
            if eid == event_id:
                later = [(e, d) for s, e, d in list(events)[i + 1 :] if s == stream]
                return stream, later
        return None

    async def forget(self, session_id: str) -> None:
        self._events.pop(session_id, None)

    def __len__(self) -> int:
        return sum(len(e) for e in self._events.values())


# ---------------------------------------------------------------- streams


_END = object()
_CLOSE = object()  # end the response now; the stream goes on for a resuming client


class _Stream:
    """One logical SSE stream: a POST's (its request ids) or the GET stream."""

    def __init__(self, key: str, pending: set[RequestId], buffer: int) -> None:
        self.key = key
        self.pending = pending
        self.items: deque[Any] = deque()  # (event id, data) or _END, for the attached listener
        self.buffer = buffer
        self.wakeup = trio.Event()
        self.attached = False
        self.complete = False  # every request answered (POST) / session over
        self.prime_id: str | None = None
        self.prime_stored = False  # the priming event is in the event store
        self.delivered = 0  # events pushed so far

    def push(self, item: Any) -> None:
        if self.attached:
            if len(self.items) >= self.buffer and item is not _END and item is not _CLOSE:
                # The reader is too slow: detach it (it may resume from the store).
                self.items.clear()
                self.items.append(_END)
                self.attached = False
            else:
                self.items.append(item)
        self.wakeup.set()

    async def next(self) -> Any:
        while not self.items:
            self.wakeup = trio.Event()
            await self.wakeup.wait()
        return self.items.popleft()


class _HttpSession(trio.abc.Channel[Frame]):
    """The MessageChannel the engine sees for one MCP session over HTTP."""

    stream_controls = True  # the engine may send CLOSE_STREAM controls

    def __init__(self, owner: StreamableHTTP, session_id: str | None) -> None:
        self.owner = owner
        self.id = session_id
        self.version: str | None = None
        # Input: the engine takes each frame in the POST's own task once it has
        # attached (attach_receiver); frames that come before, or every frame
        # for an engine that reads with receive(), wait here (at most
        # owner.inbound_buffer of them).
        self._feed: Callable[[Frame], Awaitable[None]] | None = None
        self._early: deque[Frame] | None = None
        self._arrived: trio.Event | None = None  # receive() waits for a frame
        self._room: trio.Event | None = None  # put() waits for room in _early
        self._on_end: Callable[[], None] | None = None  # the engine's, see attach_receiver
        self._input_ended = False
        self.streams: dict[str, _Stream] = {}
        self.by_request: dict[RequestId, _Stream] = {}
        self.get_stream: _Stream | None = None
        #: Messages for the GET stream while none is connected (made on the first one).
        self.backlog: deque[bytes] | None = None
        self.scope = trio.CancelScope()
        #: Set once the session's engine has ended (made when somebody waits, see wait_done).
        self.done: trio.Event | None = None
        self.finished = False
        self._seq = 0
        self._stream_seq = 0
        self.closed = False
        #: Stateless mode: the version to serve without a handshake (see open_session).
        self.assumed_version: str | None = None
        #: A stateless (2026-07-28+) request's own session (see open_session).
        self.expect_modern = False
        #: request id -> the ``HttpRequest.auth`` of the POST that carried it, until answered.
        self.auth: dict[RequestId, Any] = {}

    def auth_for(self, request_id: RequestId) -> Any:
        """The authorization the request ``request_id`` came with (``HttpRequest.auth``)."""
        return self.auth.get(request_id)

    # ---- engine side

    async def wait_done(self) -> None:
        """Wait until the session's engine has ended."""
        if not self.finished:
            if self.done is None:
                self.done = trio.Event()
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

    async def send(self, frame: Frame) -> None:
        if frame.control == CLOSE_STREAM:
            self.close_stream(frame.related)
            return
        if not frame.data:
            return
        batch_reply = frame.final and frame.data[:1] == b"["
        stream = self.by_request.get(frame.related) if frame.related is not None else None
        if stream is None and batch_reply:
            # A batch the core answered by itself (e.g. pings only): find it by its ids.
            stream = self._stream_of(frame.data)
        if stream is None and frame.related is None and frame.final and len(self.streams) == 1:
            # A reply with no id (a parse error of a POST): its POST's stream.
            stream = next(iter(self.streams.values()))
        if stream is None:
            stream = self.get_stream
            if stream is None or not stream.attached:
                if self.backlog is None:
                    self.backlog = deque(maxlen=self.owner.backlog)
                self.backlog.append(frame.data)
                return
        if frame.final and not batch_reply and self._plain_answer(stream, frame.related):
            self._push_answer(stream, frame)
            return
        await self.deliver(stream, frame.data)
        if batch_reply and stream is not self.get_stream:
            for request_id in list(stream.pending):  # a batch reply answers them all
                self.finish(request_id)
        elif frame.final and frame.related is not None:
            self.finish(frame.related)

    def send_nowait(self, frame: Frame) -> None:
        """Deliver an answer at once, from the task that produced it, or nothing.

        The engine calls this instead of handing a lone answer to its writer
        task when nothing is queued before it (see ``Session._write_now``).
        Only a plain answer (see :meth:`_plain_answer`) is delivered here: it
        needs no event store, so no waiting.

        Raises:
            trio.WouldBlock: anything else; the writer sends it with :meth:`send`.
        """
        related = frame.related
        if not frame.final or related is None or frame.control is not None:
            raise trio.WouldBlock
        if frame.data[:1] in (b"", b"["):  # nothing to send, or a batch's answers
            raise trio.WouldBlock
        stream = self.by_request.get(related)
        if stream is None or not self._plain_answer(stream, related):
            raise trio.WouldBlock
        self._push_answer(stream, frame)

    def _push_answer(self, stream: _Stream, frame: Frame) -> None:
        stream.delivered += 1
        stream.push((None, frame.data))  # no event id: it goes out as a JSON body
        assert frame.related is not None
        self.finish(frame.related)

    def _plain_answer(self, stream: _Stream, request_id: RequestId | None) -> bool:
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

    def _stream_of(self, batch_reply: bytes) -> _Stream | None:
        try:
            replies = _peek.decode(batch_reply)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        for reply in replies if isinstance(replies, list) else [replies]:
            stream = self.by_request.get(reply.id)
            if stream is not None:
                return stream
        return None

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

    # ---- HTTP side

    def new_stream(self, pending: set[RequestId]) -> _Stream:
        self._stream_seq += 1
        stream = _Stream(str(self._stream_seq), pending, self.owner.stream_buffer)
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
        return f"{stream.key}.{self._seq}"

    async def deliver(self, stream: _Stream, data: bytes) -> None:
        event_id = self.next_event_id(stream)
        store = self.owner.event_store
        if store is not None and self.id is not None:
            await self.store_prime(stream)
            await store.store(self.id, stream.key, event_id, data)
        stream.delivered += 1
        stream.push((event_id, data))

    async def store_prime(self, stream: _Stream) -> None:
        """Put ``stream``'s priming event in the event store, once, before any
        other event of the stream: when the first one is stored or the priming
        event is sent, whichever comes first (a POST answered with plain JSON
        never stores it)."""
        store = self.owner.event_store
        if stream.prime_id is None or stream.prime_stored or store is None or self.id is None:
            return
        stream.prime_stored = True
        await store.store(self.id, stream.key, stream.prime_id, b"")

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
        if any(s.attached for s in self.streams.values()) or (self.get_stream and self.get_stream.attached):
            self.scope.deadline = float("inf")
        else:
            self.scope.deadline = trio.current_time() + self.owner.idle_timeout


# ------------------------------------------------------------ the handler


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)


def _error_reply(status: int, message: str, code: int = rpc.INVALID_REQUEST, id: Any = None) -> _Reply:
    return _Reply(status, rpc.encode_error(id, code, message), [("content-type", "application/json")])


def _session_ended() -> _Reply:
    """What a request naming an unknown, deleted, expired or ending session gets."""
    return _error_reply(404, "Session not found", code=rpc.INVALID_REQUEST)


def _peek_body(body: bytes) -> _Message | list[_Message] | _Reply:
    """A POST body's message(s), or the 400 parse error for a body that is not
    JSON text (not JSON, nested deeper than the decoder goes, or not UTF-8)."""
    try:
        peeked = _peek.decode(body)
        body.decode("utf-8")  # JSON text is UTF-8 (msgspec checks only what it decodes)
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError) as exc:
        reason = "the body is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return _error_reply(400, f"Parse error: {reason}", code=rpc.PARSE_ERROR)
    return peeked


class StreamableHTTP:
    """The Streamable HTTP endpoint logic.

    Args:
        serve_session: ``async (channel, *, task_status)`` serving one MCP
            session until the channel ends (``Server.serve_session``).
        versions: Revisions accepted in ``MCP-Protocol-Version``.
        response_mode: ``"auto"``, ``"json"`` or ``"sse"`` (see the module doc).
        idle_timeout: Seconds an idle session lives.
        max_sessions: Sessions at once.
        max_body_size: Bytes in a POST body.
        max_streams: Open POST streams per session.
        allowed_hosts: ``Host`` values accepted (port ignored); ``None``
            accepts any.  Default: loopback names.
        allowed_origins: ``Origin`` values accepted when the header is
            present; default: ``http(s)://`` + an allowed host.
        event_store: Keeps events for resumption (default: a bounded
            :class:`InMemoryEventStore`).
        stateless: Keep no sessions in any revision: ``initialize`` is
            answered without ``Mcp-Session-Id``, every later request is served
            on a fresh session at the version its ``MCP-Protocol-Version``
            header names, as if initialized (the client's capabilities are
            unknown, so handlers cannot call back to it); notifications and
            responses are accepted and dropped; ``GET`` and ``DELETE`` get 405.
        tool_headers: ``name -> x-mcp-header annotations`` of the served
            tools, to check the ``Mcp-Param-*`` headers of 2026-07-28
            ``tools/call`` requests (default: ``Server.tool_header_annotations``
            when ``serve_session`` is a Server's).
        retry_ms: The ``retry`` (milliseconds a client waits before it
            reconnects) sent in priming events and when a handler closes its
            stream early (``Context.close_stream``); ``None``: not sent.
        inbound_buffer: Frames a session holds before its engine takes them:
            those that come before the engine has started, or all of them for
            an engine that reads with ``channel.receive()``; a POST waits for
            room beyond that.  An engine with push input (the library's, see
            docs/engine.md) takes every later frame in the POST's own task.
    """

    def __init__(
        self,
        serve_session: ServeSession,
        *,
        versions: Iterable[str] | None = None,
        response_mode: str = "auto",
        idle_timeout: float = 30 * 60,
        max_sessions: int = 10_000,
        max_body_size: int = 4 * 1024 * 1024,
        max_streams: int = 64,
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
        event_store: EventStore | None = None,
        retry_ms: int | None = 1000,
        stateless: bool = False,
        tool_headers: Callable[[str], Annotations | None] | None = None,
        inbound_buffer: int = 16,
        stream_buffer: int = 1024,
        backlog: int = 1024,
    ) -> None:
        if response_mode not in ("auto", "json", "sse"):
            raise ValueError("response_mode must be 'auto', 'json' or 'sse'")
        self.serve_session = serve_session
        self.versions = set(versions or _versions.SUPPORTED_VERSIONS)
        self.response_mode = response_mode
        self.idle_timeout = idle_timeout
        self.max_sessions = max_sessions
        self.max_body_size = max_body_size
        self.max_streams = max_streams
        self.guard = HostGuard(allowed_hosts, allowed_origins)
        self.event_store = event_store if event_store is not None else InMemoryEventStore()
        self.retry_ms = retry_ms
        self.stateless = stateless
        if tool_headers is None:
            # Server.serve_session: its server knows its tools' annotations.
            tool_headers = getattr(getattr(serve_session, "__self__", None), "tool_header_annotations", None)
        self.tool_headers = tool_headers
        self.inbound_buffer = inbound_buffer
        self.stream_buffer = stream_buffer
        self.backlog = backlog
        self.sessions: dict[str, _HttpSession] = {}
        self._nursery: trio.Nursery | None = None

    # -------------------------------------------------------------- running

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Own the nursery sessions run in; cancel it to end every session."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self)
            await trio.sleep_forever()

    def _start_session(self, session: _HttpSession) -> None:
        if self._nursery is None:
            raise RuntimeError("StreamableHTTP.run() is not running")
        self._nursery.start_soon(self._run_session, session)

    async def _run_session(self, session: _HttpSession) -> None:
        try:
            with session.scope:
                session.touch()
                await self.serve_session(session)
        except Exception:
            log.exception("HTTP session %s failed", session.id)
        finally:
            await self._forget(session)

    async def _forget(self, session: _HttpSession) -> None:
        session.closed = True
        session._end()  # a POST still handing over a frame learns it at once
        if session.id is not None:
            self.sessions.pop(session.id, None)
            if self.event_store is not None:
                with trio.CancelScope(shield=True):
                    await self.event_store.forget(session.id)
        for stream in list(session.streams.values()):
            stream.complete = True
            stream.push(_END)
        if session.get_stream is not None:
            session.get_stream.push(_END)
        session.streams.clear()
        session.by_request.clear()
        session.auth.clear()
        session.finished = True
        if session.done is not None:
            session.done.set()

    # ------------------------------------------------------------- requests

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        """Answer one HTTP request on the MCP endpoint."""
        problem = self.guard.check(request)
        try:
            if problem is None:
                if request.method == "POST":
                    problem = await self._post(request, responder)
                elif self.stateless and request.method in ("GET", "DELETE"):
                    problem = _Reply(405, headers=[("allow", "POST")])
                elif request.method == "GET":
                    problem = await self._get(request, responder)
                elif request.method == "DELETE":
                    problem = await self._delete(request)
                else:
                    problem = _Reply(405, headers=[("allow", "GET, POST, DELETE")])
            if problem is not None:
                await _send_reply(responder, problem)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("the client left before its answer was complete")

    def _check_version(self, request: HttpRequest) -> _Reply | None:
        version = request.headers.get(_HEADER_VERSION)
        if version is not None and version not in self.versions:
            return _error_reply(400, f"Unsupported MCP-Protocol-Version: {version!r}")
        return None

    def _session_for(self, request: HttpRequest) -> _HttpSession | _Reply:
        """The session a request names, or the reply refusing it (bad version, no or unknown id)."""
        problem = self._check_version(request)
        if problem is not None:
            return problem
        session_id = request.headers.get(_HEADER_SESSION)
        if session_id is None:
            return _error_reply(400, "Bad Request: Mcp-Session-Id header is required")
        session = self.sessions.get(session_id)
        if session is None or session.closed:
            return _session_ended()
        return session

    async def _post(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        accept = request.headers.get("accept", "")
        if "application/json" not in accept and "*/*" not in accept or (
            "text/event-stream" not in accept and "*/*" not in accept
        ):
            return _error_reply(406, "Not Acceptable: Accept must list application/json and text/event-stream")
        content_type = request.headers.get("content-type", "")
        if not content_type.split(";")[0].strip().lower() == "application/json":
            return _error_reply(415, "Unsupported Media Type: Content-Type must be application/json")
        if len(request.body) > self.max_body_size:
            return _error_reply(413, f"Request body larger than {self.max_body_size} bytes")
        peeked = _peek_body(request.body)
        if isinstance(peeked, _Reply):
            return peeked
        messages = peeked if isinstance(peeked, list) else [peeked]
        if not messages:
            return _error_reply(400, "Invalid Request: empty batch")
        kinds = [m.kind for m in messages]
        if "invalid" in kinds:
            return _error_reply(400, "Invalid Request: not a JSON-RPC request, notification or response")
        requests = [m for m, kind in zip(messages, kinds) if kind == "request"]
        is_initialize = any(m.method == "initialize" for m in requests)
        single = len(messages) == 1 and len(requests) == 1
        modern_version = _modern_version(requests[0]) if single else None
        header_version = request.headers.get(_HEADER_VERSION)
        # A stateless request names its version in _meta; one that names a
        # stateless version only in the header is a stateless request with bad _meta.
        modern = modern_version is not None or (
            single and header_version is not None and _versions.is_stateless(header_version)
        )

        if modern_version is not None:
            request_msg = requests[0]
            mismatch = check_request_headers(
                request.headers, request_msg.method, request_msg.params, modern_version, self.tool_headers
            )
            if mismatch is not None:
                return _error_reply(400, f"Header mismatch: {mismatch}", code=rpc.HEADER_MISMATCH, id=request_msg.id)
        reply_headers: list[tuple[str, str]] = []
        if modern and _HEADER_SESSION not in request.headers:
            session = _HttpSession(self, None)
            session.version = modern_version or header_version
            session.expect_modern = True
            self._start_session(session)
        elif self.stateless:
            problem = self._check_version(request)
            if problem is not None:
                return problem
            if not requests:
                return _Reply(202)  # no session: nothing can be waiting for them
            if is_initialize and len(messages) > 1:
                return _error_reply(400, "Invalid Request: initialize must not be part of a batch")
            session = _HttpSession(self, None)
            if not is_initialize:
                session.assumed_version = request.headers.get(_HEADER_VERSION) or _DEFAULT_VERSION
            self._start_session(session)
        elif is_initialize:
            if len(messages) > 1:
                return _error_reply(400, "Invalid Request: initialize must not be part of a batch")
            if len(self.sessions) >= self.max_sessions:
                return _error_reply(503, "Too many sessions")
            session = _HttpSession(self, secrets.token_urlsafe(32))
            assert session.id is not None
            self.sessions[session.id] = session
            self._start_session(session)
            reply_headers.append(("mcp-session-id", session.id))
        else:
            found = self._session_for(request)
            if isinstance(found, _Reply):
                return found
            session = found

        for m in messages:
            if m.method == "notifications/cancelled" and isinstance(m.params, dict):
                # The cancelled request gets no answer; its stream ends here.
                request_id = m.params.get("requestId")
                if request_id in session.by_request:
                    session.finish(request_id)

        if not requests:
            session.touch()
            try:
                await session.put(Frame(request.body))
            except trio.ClosedResourceError:
                return _session_ended()
            if session.id is None:
                session.close_nowait()
            return _Reply(202, headers=reply_headers)
        ids = {m.id for m in requests}
        if len(ids) != len(requests):
            return _error_reply(400, "Invalid Request: two requests of the batch share an id")
        if any(rid in session.by_request for rid in ids):
            return _error_reply(400, "Invalid Request: a request with this id is already in progress")
        if len([s for s in session.streams.values() if s.pending]) >= self.max_streams:
            return _error_reply(429, "Too many requests in flight in this session")
        stream = session.new_stream(ids)
        stream.attached = True
        session.touch()  # no idle expiry while the POST is open
        if request.auth is not None:
            session.auth.update(dict.fromkeys(ids, request.auth))
        version = (
            modern_version
            or (requests[0].params.get("protocolVersion") if is_initialize and isinstance(requests[0].params, dict) else None)
            or session.version  # negotiated: it decides, whatever the header says
            or request.headers.get(_HEADER_VERSION)
            or _DEFAULT_VERSION
        )
        if is_initialize and isinstance(version, str):
            session.version = version
        try:
            self._reserve_prime(session, stream, str(version))
            try:
                await session.put(Frame(request.body))
            except trio.ClosedResourceError:  # the session ended meanwhile
                return _session_ended()
            await self._answer_post(session, stream, responder, reply_headers, str(version))
        finally:
            stream.attached = False
            if stream.complete:
                session.streams.pop(stream.key, None)
            if session.id is None:
                session.close_nowait()
            session.touch()
        return None

    async def _answer_post(
        self,
        session: _HttpSession,
        stream: _Stream,
        responder: Responder,
        headers: list[tuple[str, str]],
        version: str,
    ) -> None:
        first = await stream.next()
        if first is not _END and first is not _CLOSE and first[0] is None:
            # The answer came first and alone (see _HttpSession._plain_answer).
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
            await _send_json(responder, [first[1]], headers, _status(session, [first[1]]))  # nothing but the answer
            return
        await responder.start(200, [*headers, *_SSE_HEADERS])
        await self._prime(session, stream, responder, version)
        await _pump(stream, responder, first, retry_ms=self.retry_ms)

    def _reserve_prime(self, session: _HttpSession, stream: _Stream, version: str) -> None:
        """Give ``stream`` its priming event id before anything else is sent on
        it (stored later, see :meth:`_HttpSession.store_prime`)."""
        if version < _FIRST_PRIMING or session.id is None or self.event_store is None:
            return
        stream.prime_id = session.next_event_id(stream)

    async def _prime(self, session: _HttpSession, stream: _Stream, responder: Responder, version: str) -> None:
        if stream.prime_id is not None:
            await session.store_prime(stream)
            await responder.send(encode_event(b"", id=stream.prime_id, retry=self.retry_ms))

    async def _get(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return _error_reply(406, "Not Acceptable: Accept must list text/event-stream")
        found = self._session_for(request)
        if isinstance(found, _Reply):
            return found
        session = found
        last_event_id = request.headers.get("last-event-id")
        key = last_event_id.partition(".")[0] if last_event_id else "0"
        stream = session.get_stream if key == "0" else session.streams.get(key)
        if stream is not None and stream.attached:
            return _error_reply(409, "Conflict: that stream is already connected")
        if stream is None and key == "0":
            stream = session.get_stream = _Stream("0", set(), self.stream_buffer)
        backlog: list[bytes] = []
        if stream is not None:
            # Attach before reading the store, so nothing sent meanwhile is lost.
            stream.items.clear()
            stream.attached = True
            if key == "0":
                backlog = list(session.backlog or ())
                session.backlog = None
        if stream is not None and not last_event_id:
            self._reserve_prime(session, stream, session.version or _DEFAULT_VERSION)
        replayed: list[tuple[str, bytes]] = []
        if last_event_id and self.event_store is not None and session.id is not None:
            found_replay = await self.event_store.replay_after(session.id, last_event_id)
            if found_replay is not None:
                replayed = found_replay[1]
        session.touch()
        try:
            await responder.start(200, _SSE_HEADERS)
            if not last_event_id:
                await self._prime(session, stream, responder, session.version or _DEFAULT_VERSION)
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
            await _pump(stream, responder, None, skip=sent, retry_ms=self.retry_ms)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("client left stream %s of session %s", key, session.id)
        finally:
            if stream is not None:
                stream.attached = False
                if stream.complete:
                    session.streams.pop(stream.key, None)
            session.touch()
        return None

    async def _delete(self, request: HttpRequest) -> _Reply | None:
        found = self._session_for(request)
        if isinstance(found, _Reply):
            return found
        session = found
        if session.id is not None:
            self.sessions.pop(session.id, None)
        session.closed = True
        await session.end_input()
        with trio.move_on_after(5):
            await session.wait_done()
        session.scope.cancel()
        return _Reply(200)


_SSE_HEADERS = [("content-type", "text/event-stream"), ("cache-control", "no-cache, no-transform")]


async def _pump(
    stream: _Stream,
    responder: Responder,
    first: Any,
    skip: set[str] = frozenset(),  # type: ignore[assignment]
    retry_ms: int | None = None,
) -> None:
    """Write the stream's events until it completes (or is closed early for the
    client to resume it); end the response."""
    item = first if first is not None else await stream.next()
    try:
        while item is not _END:
            if item is _CLOSE:
                if retry_ms is not None:
                    await responder.send(encode_retry(retry_ms))
                break
            event_id, data = item
            if event_id not in skip:
                await responder.send(encode_event(data, id=event_id))
            item = await stream.next()
        await responder.end()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        log.debug("client left SSE stream %s", stream.key)


def _modern_version(message: _Message) -> str | None:
    params = message.params
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(_META_VERSION)
    return version if isinstance(version, str) else None


def _is_response(data: bytes) -> bool:
    try:
        message = _peek.decode(data)
    except msgspec.DecodeError:
        return False
    if isinstance(message, list):
        return True
    return message.method is msgspec.UNSET


#: HTTP statuses of a stateless request's JSON-RPC errors (2026-07-28); others: 200.
_ERROR_STATUS = {
    rpc.PARSE_ERROR: 400,
    rpc.INVALID_REQUEST: 400,
    rpc.INVALID_PARAMS: 400,
    rpc.METHOD_NOT_FOUND: 404,
    rpc.HEADER_MISMATCH: 400,
    rpc.MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    rpc.UNSUPPORTED_PROTOCOL_VERSION: 400,
}


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


async def _send_reply(responder: Responder, reply: _Reply) -> None:
    headers = list(reply.headers)
    headers.append(("content-length", str(len(reply.body))))
    try:
        await responder.start(reply.status, headers)
        if reply.body:
            await responder.send(reply.body)
        await responder.end()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


# -------------------------------------------------------------- front door


def _declared_length(headers: Sequence[tuple[str, str]]) -> int | None:
    """The ``content-length`` a response declares, if any."""
    for name, value in headers:
        if name.lower() == "content-length":
            return int(value)
    return None


class _ASGIResponder:
    """Sends one response through ASGI.

    A response that declares its ``content-length`` ends with its body: the
    last (usually only) body message says ``more_body: False``, which saves
    the server a message and a write for the end of the response.
    """

    def __init__(self, send: Any) -> None:
        self._send = send
        self.gone = False
        self._left = -1  # body bytes still to come (-1: a streamed response)
        self._ended = False

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        length = _declared_length(headers)
        if length is not None:
            self._left = length
        await self._call(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in headers],
            }
        )

    async def send(self, data: bytes) -> None:
        if not data:
            return
        more = True
        if self._left >= 0:
            self._left -= len(data)
            more = self._left > 0
        self._ended = not more
        await self._call({"type": "http.response.body", "body": data, "more_body": more})

    async def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        await self._call({"type": "http.response.body", "body": b"", "more_body": False})

    async def _call(self, message: dict[str, Any]) -> None:
        if self.gone:
            raise trio.BrokenResourceError("the client disconnected")
        try:
            await self._send(message)
        except OSError as exc:  # hypercorn raises ClientDisconnected (an OSError)
            self.gone = True
            raise trio.BrokenResourceError("the client disconnected") from exc


def _routes(endpoint: Handler, path: str, routes: Mapping[str, Handler] | None) -> dict[str, Handler]:
    table = {(p.rstrip("/") or "/"): h for p, h in (routes or {}).items()}
    table[path.rstrip("/") or "/"] = endpoint
    return table


class ASGIApp:
    """An ASGI 3 application serving ``endpoint`` at ``path``, and each of
    ``routes`` (path -> :class:`Handler`) at its path; other paths get 404.

    Serve it with hypercorn's trio worker (see :func:`serve_hypercorn`) or any
    ASGI server running under trio.
    """

    def __init__(self, endpoint: Handler, path: str = "/mcp", routes: Mapping[str, Handler] | None = None) -> None:
        self.endpoint = endpoint
        self.path = path
        self.routes = _routes(endpoint, path, routes)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        responder = _ASGIResponder(send)
        handler = self.routes.get(scope["path"].rstrip("/") or "/")
        if handler is None:
            await _send_reply(responder, _Reply(404, b"Not Found", [("content-type", "text/plain")]))
            return
        headers: dict[str, str] = {}
        for raw_name, raw_value in scope["headers"]:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        body = bytearray()
        limit = handler.max_body_size
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > limit:
                await _send_reply(responder, _error_reply(413, f"Request body larger than {limit} bytes"))
                return
            if not message.get("more_body", False):
                break
        query = scope.get("query_string", b"").decode("latin-1")
        request = HttpRequest(scope["method"], headers, bytes(body), scope["path"], query)
        if request.method == "POST" and not _may_stay_open(request.body):
            # A POST's response ends with its answer: no task to watch for the
            # client leaving (it costs about a seventh of the server's CPU per
            # request); a client that left is noticed at the next write, and its
            # requests go on in their session as they would anyway.  GET streams
            # and subscriptions/listen may stay open indefinitely: watched.
            await handler.handle(request, responder)
            return
        async with trio.open_nursery() as nursery:

            async def watch_disconnect() -> None:
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        responder.gone = True
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(watch_disconnect)
            await handler.handle(request, responder)
            nursery.cancel_scope.cancel()


def _may_stay_open(body: bytes) -> bool:
    """Whether a POST body holds a ``subscriptions/listen`` request, whose
    response may stay open indefinitely (so the ASGI door watches for the
    client leaving).  Exact without parsing most bodies: the method name
    spelt plainly is found as bytes, and a body without a backslash has no
    JSON escape that could spell it otherwise; the rest are parsed."""
    if b"subscriptions/listen" in body:
        return True
    if b"\\" not in body:
        return False
    peeked = _peek_body(body)
    if isinstance(peeked, _Reply):
        return False
    return any(m.method == "subscriptions/listen" for m in (peeked if isinstance(peeked, list) else [peeked]))


async def serve_hypercorn(
    app: ASGIApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    shutdown_trigger: Callable[[], Awaitable[Any]] | None = None,
    task_status: Any = trio.TASK_STATUS_IGNORED,
    **config_options: Any,
) -> None:
    """Serve ``app`` with hypercorn (trio worker) until ``shutdown_trigger`` returns.

    ``task_status.started`` gets the bound URLs (``["http://127.0.0.1:43121"]``).
    """
    from hypercorn.config import Config
    from hypercorn.trio import serve

    config = Config()
    config.bind = [f"[{host}]:{port}" if ":" in host else f"{host}:{port}"]
    config.accesslog = None
    config.errorlog = log
    for key, value in config_options.items():
        setattr(config, key, value)
    await serve(app, config, shutdown_trigger=shutdown_trigger or trio.sleep_forever, task_status=task_status)


# ---------------------------------------------------- the lean front door


#: Header sets already validated by h11 (see :func:`_h11_headers`).
_H11_HEADERS: dict[tuple[tuple[str, str], ...], Any] = {}
_H11_HEADERS_MAX = 256
_READ_SIZE = 65536


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

    def _write_now(self, data: bytes) -> int:
        """Write what the socket takes at once, without waiting; the bytes written.

        Most answers fit in the socket's buffer: they need no timeout and no
        trip through the scheduler.  Whatever is left goes out through
        ``send_all`` under the write timeout.
        """
        fd = -1 if self._socket is None else self._socket.fileno()  # -1 once closed
        if fd < 0:
            return 0
        try:
            return os.write(fd, data)
        except (BlockingIOError, InterruptedError):
            return 0
        except OSError:
            self.gone = True  # reset, or a broken pipe
            raise trio.BrokenResourceError("the client disconnected") from None

    async def _write(self, data: bytes) -> None:
        if self.gone:
            raise trio.BrokenResourceError("the client disconnected")
        if not data:
            return
        written = self._write_now(data)
        if written == len(data):
            return
        data = data[written:]
        with trio.move_on_after(self._write_timeout) as scope:
            try:
                await self._stream.send_all(data)
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
        out = self._held + (b"" if self._head_only else self._conn.send(h11.Data(data=data)))
        self._held = b""
        if self._left >= 0:
            self._left -= len(data)
            if self._left <= 0:  # the whole body: the message ends with it
                out += self._conn.send(h11.EndOfMessage())
                self._ended = True
        await self._write(out)

    async def end(self) -> None:
        if self._ended:
            return
        self._ended = True
        out = self._held + self._conn.send(h11.EndOfMessage())
        self._held = b""
        await self._write(out)


@dataclass(frozen=True)
class _H11Limits:
    max_header_size: int
    keepalive_timeout: float
    request_timeout: float
    write_timeout: float


class _H11Connection:
    """One client connection of :func:`serve_h11`: requests answered one at a time.

    The connection's own task parses requests and answers them; a second task
    is the only one that reads the socket and feeds h11, at all times, so a
    client that leaves mid-answer is noticed at once (its EOF cancels the
    answer; the request itself goes on in its session).  It stays at most
    ``_READ_SIZE`` bytes ahead of the parser (a pipelining client waits for
    the answers), so memory stays bounded.  That costs one task per
    connection instead of a task and a nursery per request, and no extra read
    or cancellation when an answer is quick.
    """

    def __init__(
        self, stream: trio.SocketStream, limits: _H11Limits, table: dict[str, Handler], default: Handler
    ) -> None:
        self.stream = stream
        self.limits = limits
        self.table = table
        self.default = default
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_header_size)
        self.want = False  # the parser waits for bytes
        self.answering: _H11Responder | None = None
        self.ahead = 0  # bytes read since the parser last asked for more
        self.reader_lot = trio.lowlevel.ParkingLot()
        self.data_lot = trio.lowlevel.ParkingLot()
        self.cancel_scope = trio.CancelScope()

    async def serve(self) -> None:
        async with trio.open_nursery() as nursery:
            self.cancel_scope = nursery.cancel_scope
            nursery.start_soon(self._read_loop)
            try:
                while await self._exchange():
                    pass
            finally:
                nursery.cancel_scope.cancel()

    async def _read_loop(self) -> None:
        while True:
            while not self.want and self.ahead >= _READ_SIZE:
                await self.reader_lot.park()
            try:
                data = await self.stream.receive_some(_READ_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if not data and self.answering is not None:  # EOF or a reset mid-answer: the client left
                self.answering.gone = True
                self.cancel_scope.cancel()
                return
            self.ahead = 0 if self.want else self.ahead + len(data)
            self.want = False
            self.conn.receive_data(data)  # b"": the client closed its side
            self.data_lot.unpark()
            if not data:
                return

    async def _next_event(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.want = True
            self.ahead = 0
            self.reader_lot.unpark()
            await self.data_lot.park()

    async def _exchange(self) -> bool:
        """Read one request and answer it; False once the connection must end."""
        read = await self._read_request()
        if read is None:
            return False
        handler, request = read
        head_only = request.method == "HEAD"
        responder = _H11Responder(self.stream, self.conn, self.limits.write_timeout, head_only)
        self.answering = responder
        try:
            if handler is None:
                await _send_reply(responder, _Reply(404, b"Not Found", [("content-type", "text/plain")]))
            else:
                await handler.handle(request, responder)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
            return False
        finally:
            self.answering = None
        conn = self.conn
        if responder.gone or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
            return False
        try:
            conn.start_next_cycle()
        except h11.LocalProtocolError:
            return False
        return True

    async def _read_request(self) -> tuple[Handler | None, HttpRequest] | None:
        """The next request, whole; None (after an error answer if one is due)
        when the connection must end: closed, idle too long, or a bad request."""
        limits = self.limits
        in_request = False
        try:
            # One deadline: the keep-alive wait for a head, then the time allowed for the rest.
            with trio.CancelScope(deadline=trio.current_time() + limits.keepalive_timeout) as scope:
                event = await self._next_event()
                if not isinstance(event, h11.Request):
                    return None
                in_request = True
                scope.deadline = trio.current_time() + limits.request_timeout
                return await self._read_body(event)
            if in_request:
                await self._reject(408, "Request Timeout")
            return None
        except h11.RemoteProtocolError as exc:
            if self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                await self._reject(exc.error_status_hint, f"Bad HTTP request: {exc}")
            return None
        except (trio.BrokenResourceError, trio.ClosedResourceError, ValueError):
            return None

    async def _read_body(self, event: h11.Request) -> tuple[Handler | None, HttpRequest] | None:
        """Check the head of ``event``, then read its body (within the request timeout)."""
        headers: dict[str, str] = {}
        head_size = len(event.target)
        for raw_name, raw_value in event.headers:
            head_size += len(raw_name) + len(raw_value) + 4
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if head_size > self.limits.max_header_size:
            await self._reject(431, "Request Header Fields Too Large")
            return None
        target, _, query = event.target.decode("latin-1").partition("?")
        handler = self.table.get(target.rstrip("/") or "/")
        max_body = (handler or self.default).max_body_size
        length = headers.get("content-length")
        if length is not None and int(length) > max_body:
            await self._reject(413, f"Request body larger than {max_body} bytes")
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            part = await self._next_event()
            if isinstance(part, h11.Data):
                chunks.append(part.data)
                size += len(part.data)
                if size > max_body:
                    await self._reject(413, f"Request body larger than {max_body} bytes")
                    return None
            elif isinstance(part, h11.EndOfMessage):
                break
            else:
                return None
        body = bytes(chunks[0]) if len(chunks) == 1 else b"".join(chunks)
        return handler, HttpRequest(event.method.decode("ascii"), headers, body, target, query)

    async def _reject(self, status: int, message: str) -> None:
        """Answer with an error and ``connection: close`` (the caller then ends the connection)."""
        body = rpc.encode_error(None, rpc.INVALID_REQUEST, message)
        headers = [("content-type", "application/json"), ("content-length", str(len(body)))]
        conn = self.conn
        try:
            with trio.move_on_after(self.limits.write_timeout):
                out = conn.send(h11.Response(status_code=status, headers=[*headers, ("connection", "close")]))
                out += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
                await self.stream.send_all(out)
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.LocalProtocolError):
            pass


async def serve_h11(
    endpoint: Handler,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    path: str = "/mcp",
    routes: Mapping[str, Handler] | None = None,
    max_header_size: int = 64 * 1024,
    keepalive_timeout: float = 60.0,
    request_timeout: float = 30.0,
    write_timeout: float = 30.0,
    max_connections: int = 1024,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``endpoint`` over HTTP/1.1 with h11 on trio sockets (no ASGI layer).

    Limits: request heads up to ``max_header_size`` bytes (431 beyond),
    bodies up to the endpoint's ``max_body_size`` (413), a whole request
    within ``request_timeout`` seconds of its head (408), idle
    keep-alive connections closed after ``keepalive_timeout``, writes to a
    client that stops reading abandoned after ``write_timeout``, at most
    ``max_connections`` at once (further ones wait in the listen backlog).

    ``routes`` (path -> :class:`Handler`) serves more endpoints next to
    ``endpoint`` at ``path``.  ``task_status.started`` gets the bound URLs.
    """
    limit = trio.CapacityLimiter(max_connections)
    table = _routes(endpoint, path, routes)
    limits = _H11Limits(max_header_size, keepalive_timeout, request_timeout, write_timeout)

    async def connection(stream: trio.SocketStream) -> None:
        # One connection's failure must never take the listener down.
        try:
            async with limit, stream:
                await _H11Connection(stream, limits, table, endpoint).serve()
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            log.debug("HTTP connection ended abruptly: %s", exc)  # a reset by the client
        except Exception:
            log.exception("HTTP connection failed")

    listeners = await trio.open_tcp_listeners(port, host=host)
    urls = []
    for listener in listeners:
        address = listener.socket.getsockname()
        shown = f"[{address[0]}]" if ":" in address[0] else address[0]
        urls.append(f"http://{shown}:{address[1]}")
    await trio.serve_listeners(connection, listeners, handler_nursery=None, task_status=_Relay(task_status, urls))


class _Relay:
    """Passes our URLs to ``task_status`` instead of trio's listener list."""

    def __init__(self, task_status: Any, urls: list[str]) -> None:
        self._task_status = task_status
        self._urls = urls

    def started(self, value: Any = None) -> None:
        self._task_status.started(self._urls)
