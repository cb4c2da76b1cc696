"""Streamable HTTP, server side: the protocol logic, independent of the web server.

:class:`StreamableHTTP` answers one HTTP request at a time through two tiny
interfaces, :class:`HttpRequest` and :class:`Responder`; front doors adapt a
real server to them (:class:`ASGIApp` for hypercorn or any ASGI server).
Every MCP session is a :class:`~mcp_trio.transports.MessageChannel` served by
the ``serve_session`` callable given at construction, in a nursery this
object owns (so nothing outlives :meth:`StreamableHTTP.run`).  What a
request calls for is decided by :mod:`._planner` (its module docstring has
every request rule, in the order they apply); this class runs the plans.

What it does, in short:

* ``POST`` carries one JSON-RPC message (or a batch in 2025-03-26; in any
  other revision a batch gets 400 with one -32600 of id ``null``).  Only
  notifications and responses → 202.  Requests → one JSON body when the
  first thing the server sends back is the response (``response_mode="auto"``,
  the default) or always (``"json"``), else an SSE stream that ends once every
  request of the POST is answered (``"sse"`` forces it).  A POST whose
  requests were all cancelled gets an SSE stream with nothing in it.
* Sessions: ``initialize`` creates one; its id (256 random bits, URL-safe
  base64) comes back in ``Mcp-Session-Id``.  Later requests without it get
  400, with an unknown or ended one 404.  ``DELETE`` ends it.  A session with
  no open stream and no request for ``idle_timeout`` seconds ends; at most
  ``max_sessions`` exist, at most ``max_sessions_per_client`` opened from one
  client address: an ``initialize`` finding either full evicts the oldest
  session (of that address, or of all) that never got past its ``initialize``
  POST (ended as by ``DELETE``; of its own address only one at least 10 s old),
  and gets 429 (its address) or 503 (all) with ``Retry-After`` only when there
  is none.  Nothing of an ended session is kept.
  A session opened by one principal (``HttpRequest.principal``: whom an
  authorization layer verified) is unknown (404) to requests of any other.
* Stateless requests (2026-07-28: the protocol version in ``_meta``) need no
  session: each POST is served by a session of its own.
* ``GET`` opens the stream for messages unrelated to any request (one per
  session, 409 for a second).  Messages sent while no GET stream is open are
  kept (bounded) and delivered when one opens.  GET streams (resumed ones
  included) are bounded per process and per client address
  (:class:`StreamSlots`: 429 / 503 with ``Retry-After``), and one that sent
  nothing for ``stream_idle_timeout`` seconds ends after a ``retry`` hint (the
  client reconnects, with ``Last-Event-ID`` where it got an event id).
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
import secrets
from collections.abc import Callable, Iterable
from typing import Any

import trio

from ....store import Store, StoreError
from ....types import _versions
from ..._base import Frame
from .._headers import Annotations
from .._replies import _BatchMember, _Message, _Reply, _session_ended, _unconfirmed_end
from .._request import (
    DEFAULT_ALLOWED_HOSTS,
    DEFAULT_MAX_STREAMS_PER_CLIENT,
    DEFAULT_MAX_STREAMS_TOTAL,
    HttpRequest,
    Responder,
    ServeSession,
    SessionServer,
    StreamSlots,
    ToolHeaderSource,
    _Endpoint,
    _send_reply,
)
from ._event_store import DEFAULT_EVENT_STORE_BYTES, EventStore, InMemoryEventStore
from ._planner import (
    PostPlan,
    messages_of,
    plan_answer,
    plan_post,
    refuse_accept,
    refuse_method,
    session_id_of,
)
from ._sharing import Sharing, take_session
from ._standalone import Streaming
from ._streams import _HttpSession
from ._table import SessionTable

log = logging.getLogger("mcp_trio.http")

_FIRST_PRIMING = "2025-11-25"

_KIND_SLICE = 2048  # batch members classified between two checkpoints


async def _kinds(messages: list[_Message | _BatchMember]) -> list[str]:
    """The kind of each message; a large batch's a slice at a time, other tasks
    running in between (the engine reads its members the same way)."""
    kinds = [m.kind for m in messages[:_KIND_SLICE]]
    for start in range(_KIND_SLICE, len(messages), _KIND_SLICE):
        await trio.lowlevel.checkpoint()
        kinds += [m.kind for m in messages[start : start + _KIND_SLICE]]
    return kinds


class StreamableHTTP(_Endpoint):
    """The Streamable HTTP endpoint logic.

    Args:
        serve_session: ``async (channel, *, task_status)`` serving one MCP
            session until the channel ends (``Server.serve_session``), or the
            server itself (a :class:`SessionServer`: its ``serve_session``, and
            its tools' header annotations by default).
        versions: Revisions accepted in ``MCP-Protocol-Version``.
        response_mode: ``"auto"``, ``"json"`` or ``"sse"`` (see the module doc).
        idle_timeout: Seconds an idle session lives.
        max_sessions: Sessions at once; when full, a new ``initialize`` evicts
            the oldest session with no request since its own ``initialize``
            (503 when every session got past it).
        max_body_size: Bytes in a POST body.
        max_streams: Open POST streams per session.
        max_streams_total: Open GET streams of the process (shared with a
            legacy HTTP+SSE endpoint given ``stream_slots``); see :class:`StreamSlots`.
        max_streams_per_client: Open GET streams of one client address (``None``: no bound).
        stream_idle_timeout: Seconds a GET stream may send nothing before it
            is closed with a ``retry`` hint (``None``: never).
        max_sessions_per_client: Sessions opened from one client address
            (``None``: no bound); see the module doc.
        allowed_hosts: ``Host`` names accepted (any port; a ``name:port``
            entry: that port only); ``None`` accepts any.  Default: loopback names.
        allowed_origins: ``Origin`` values accepted when the header is
            present (exact ``scheme://host[:port]``); default: same origin,
            ``http(s)://`` + an allowed host on the ``Host`` port (see :class:`HostGuard`).
        event_store: Keeps events for resumption (default: an
            :class:`InMemoryEventStore` of ``event_store_bytes`` per session
            and 64 MiB in all).  Only events a client can resume are stored:
            those of SSE responses and of the GET stream, never a reply sent
            as a plain JSON body.
        event_store_bytes: Bytes of events the default store keeps per
            session (default 1 MiB); the oldest are dropped first, and a
            ``Last-Event-ID`` naming a dropped event resumes nothing (see
            docs/http.md).  Only with the default store.
        max_queued: Requests of one session that may wait for a handler slot
            (``Session.max_queued``, default 1024); a request past it (a
            batch member, say) is answered at once with -32603 naming the bound.
        max_queued_total: The same for all sessions of the process together
            (``Session.max_queued_total``, default 16384).
        stateless: Keep no sessions in any revision: ``initialize`` is
            answered without ``Mcp-Session-Id``, every later request is served
            on a fresh session at the version its ``MCP-Protocol-Version``
            header names, as if initialized (the client's capabilities are
            unknown, so handlers cannot call back to it); notifications and
            responses are accepted and dropped; ``GET`` and ``DELETE`` get 405.
        tool_headers: ``name -> x-mcp-header annotations`` of the served
            tools, to check the ``Mcp-Param-*`` headers of 2026-07-28
            ``tools/call`` requests (default: ``Server.tool_header_annotations``
            when ``serve_session`` is a Server).
        retry_ms: The ``retry`` (milliseconds a client waits before it
            reconnects) sent in priming events and when a handler closes its
            stream early (``Context.close_stream``); ``None``: not sent.
        inbound_buffer: Frames a session holds before its engine takes them:
            those that come before the engine has started, or all of them for
            an engine that reads with ``channel.receive()``; a POST waits for
            room beyond that.  An engine with push input (the library's, see
            docs/engine.md) takes every later frame in the POST's own task.
        store: Share the sessions with the other workers (processes, hosts)
            serving the endpoint with this store (see :mod:`mcp_trio.store`):
            any request of a session may then land on any of them.  Its event
            store keeps the events (``event_store`` must not be given too).
            ``None`` (the default): the sessions live in this endpoint alone.
        worker_id: This worker's name among those sharing ``store`` (letters,
            digits, ``-``, ``_``; unique among them).  Default: a random one.
    """

    _started_with_self = True  # run() hands this endpoint to task_status.started

    def __init__(
        self,
        serve_session: ServeSession | SessionServer,
        *,
        versions: Iterable[str] | None = None,
        response_mode: str = "auto",
        idle_timeout: float = 30 * 60,
        max_sessions: int = 10_000,
        max_body_size: int = 4 * 1024 * 1024,
        max_streams: int = 64,
        max_streams_total: int = DEFAULT_MAX_STREAMS_TOTAL,
        max_streams_per_client: int | None = DEFAULT_MAX_STREAMS_PER_CLIENT,
        stream_idle_timeout: float | None = 300.0,
        max_sessions_per_client: int | None = 128,
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
        event_store: EventStore | None = None,
        event_store_bytes: int | None = None,
        max_queued: int = 1024,
        max_queued_total: int | None = None,
        retry_ms: int | None = 1000,
        stateless: bool = False,
        tool_headers: Callable[[str], Annotations | None] | None = None,
        inbound_buffer: int = 16,
        stream_buffer: int = 1024,
        backlog: int = 1024,
        store: Store | None = None,
        worker_id: str | None = None,
    ) -> None:
        if response_mode not in ("auto", "json", "sse"):
            raise ValueError("response_mode must be 'auto', 'json' or 'sse'")
        if isinstance(serve_session, SessionServer):
            if tool_headers is None and isinstance(serve_session, ToolHeaderSource):
                tool_headers = serve_session.tool_header_annotations  # its tools' annotations
            serve_session = serve_session.serve_session
        super().__init__(serve_session, max_sessions, max_body_size, allowed_hosts, allowed_origins)
        self.versions = set(versions or _versions.SUPPORTED_VERSIONS)
        self.response_mode = response_mode
        self.idle_timeout = idle_timeout
        self.max_streams = max_streams
        self.stream_slots = StreamSlots(max_streams_total, max_streams_per_client)
        if store is not None:
            if event_store is not None or event_store_bytes is not None:
                raise ValueError("a store keeps the events itself: give store or event_store, not both")
            event_store = store.events
        if event_store is not None and event_store_bytes is not None:
            raise ValueError("event_store_bytes sizes the default event store: give one or the other")
        if event_store is None:
            event_store = InMemoryEventStore(
                max_bytes=DEFAULT_EVENT_STORE_BYTES if event_store_bytes is None else event_store_bytes
            )
        self.event_store = event_store
        if max_queued < 0 or max_queued_total is not None and max_queued_total < 0:
            raise ValueError("max_queued and max_queued_total must not be negative")
        #: Given to each session's engine (``Session.max_queued``, ``max_queued_total``;
        #: None: the engine's default).
        self.max_queued: int | None = max_queued
        self.max_queued_total = max_queued_total
        self.stateless = stateless
        self.tool_headers = tool_headers
        self.inbound_buffer = inbound_buffer
        self.stream_buffer = stream_buffer
        self.backlog = backlog
        #: This worker's side of the sessions shared through ``store`` (None: unshared).
        self.sharing = None if store is None else Sharing(self, store, worker_id or secrets.token_hex(4))
        #: The sessions (``sessions`` is the table's), their bounds and their idle expiry.
        self.table = SessionTable(max_sessions, max_sessions_per_client, idle_timeout)
        self.sessions = self.table.sessions
        #: How answers go out: a POST's, the GET stream, priming events.
        self.streaming = Streaming(
            response_mode=response_mode,
            retry_ms=retry_ms,
            event_store=event_store,
            slots=self.stream_slots,
            buffer=stream_buffer,
            idle_timeout=stream_idle_timeout,
            sharing=self.sharing,
            session_for=self._session_for,
        )

    # -------------------------------------------------------------- running

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Own the nursery sessions run in (and, with a store, listen to the
        other workers); cancel it to end every session."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.table.expire_idle)
            if self.sharing is not None:
                await nursery.start(self.sharing.run)
            task_status.started(await nursery.start(super().run))

    def _start_session(self, session: _HttpSession) -> None:
        if self._nursery is None:
            raise RuntimeError("StreamableHTTP.run() is not running")
        self._nursery.start_soon(self._run_session, session)

    async def _run_session(self, session: _HttpSession) -> None:
        try:
            with session.scope:
                self.table.watch_idle(session)
                await self.serve_session(session)
        except Exception:
            log.exception("HTTP session %s failed", session.id)
        finally:
            await self._forget(session)

    async def _forget(self, session: _HttpSession) -> None:
        session.closed = True
        self.table.unwatch_idle()
        session._end()  # a POST still handing over a frame learns it at once
        if session.id is not None:
            self.table.drop(session)
            if self.sharing is not None:
                with trio.move_on_after(5, shield=True):
                    await self.sharing.ended(session)
            elif self.event_store is not None:
                with trio.CancelScope(shield=True):
                    await self.event_store.forget(session.id)
        session.out.end()
        session.finished = True
        if session.done is not None:
            session.done.set()

    # ------------------------------------------------------------- requests

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        """Answer one HTTP request on the MCP endpoint."""
        problem = self.guard.check(request) or refuse_method(request.method, self.stateless)
        try:
            if problem is None:
                if request.method == "POST":
                    problem = await self._post(request, responder)
                elif request.method == "GET":
                    problem = await self.streaming.get(request, responder)
                else:
                    problem = await self._delete(request)
            if problem is not None:
                await _send_reply(responder, problem)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            log.debug("the client left before its answer was complete")

    def _session_for(self, request: HttpRequest) -> _HttpSession | _Reply:
        """The session a request names, or the reply refusing it (bad version, no or unknown id)."""
        session_id = session_id_of(request.headers, self.versions)
        if isinstance(session_id, _Reply):
            return session_id
        session = self.sessions.get(session_id)
        if session is None or session.closed or session.principal != request.principal:
            return _session_ended()  # another principal's session does not exist for this one
        self.table.used(session)
        return session

    async def _post(self, request: HttpRequest, responder: Responder) -> _Reply | None:
        """Carry out what :func:`plan_post` and :func:`plan_answer` decide (see :mod:`._planner`)."""
        peeked = refuse_accept(request.headers) or self._json_body(request)
        if isinstance(peeked, _Reply):
            return peeked
        messages = messages_of(peeked)
        if isinstance(messages, _Reply):
            return messages
        kinds = [messages[0].kind] if len(messages) == 1 else await _kinds(messages)
        plan = plan_post(
            request,
            peeked,
            messages,
            kinds,
            versions=self.versions,
            stateless=self.stateless,
            tool_headers=self.tool_headers,
        )
        del peeked, kinds
        if isinstance(plan, _Reply):
            return plan
        reply_headers: list[tuple[str, str]] = []
        if plan.target == "modern":
            session = _HttpSession(self, None, request)
            session.version = plan.version
            session.expect_modern = True
            self._start_session(session)
        elif plan.target == "stateless":
            session = _HttpSession(self, None, request)
            session.assumed_version = plan.version
            self._start_session(session)
        elif plan.target == "initialize":
            refused = self.table.make_room(request.client)
            if refused is not None:
                return refused
            session = _HttpSession(self, secrets.token_urlsafe(32), request)
            assert session.id is not None
            self.table.add(session)
            if self.sharing is not None:
                session.init_params = plan.init_params()  # for its record (see Streaming.answer_post)
            self._start_session(session)
            reply_headers.append(("mcp-session-id", session.id))
        else:
            found = self._session_for(request)
            if self.sharing is not None:
                found = await self.sharing.records.find(request, found)
            if isinstance(found, _Reply):
                return found
            session = found
            refused = plan.refuse_batch(session.version)
            if refused is not None:
                return refused

        body = request.body
        if self.sharing is not None and session.id is not None and len(plan.messages) > 1:
            left = self.sharing.route_batch(session, plan.messages, body)  # (answers for other workers)
            if left is None:
                session.touch()
                return _Reply(202, headers=reply_headers)
            body = left
        for request_id in plan.cancelled():
            if request_id in session.out.by_request:
                session.out.finish(request_id)  # the cancelled request gets no answer; its stream ends here
        if not plan.requests:
            return await _hand_over(session, plan, body, reply_headers, self.sharing)
        version = plan_answer(
            plan,
            session_version=session.version,
            in_progress=session.out.by_request.keys(),
            pending_streams=len([s for s in session.out.streams.values() if s.pending]),
            max_streams=self.max_streams,
        )
        if isinstance(version, _Reply):
            return version
        ids = {m.id for m in plan.requests}
        stream = session.out.new_stream(ids)
        stream.attached = True
        session.touch()  # no idle expiry while the POST is open
        if request.auth is not None:
            session.out.auth.update(dict.fromkeys(ids, request.auth))
        if plan.is_initialize and isinstance(version, str):
            session.version = version  # until the answer names the negotiated one
            session.initialize_id = plan.requests[0].id
        # What was peeked at is not kept while the POST is answered (a large batch's would be
        # as large as its body again).
        del plan, messages
        try:
            self.streaming.reserve_prime(session, stream, str(version))
            try:
                await session.put(Frame(body))
            except trio.ClosedResourceError:  # the session ended meanwhile
                return _session_ended()
            await self.streaming.answer_post(session, stream, responder, reply_headers, str(version))
        finally:
            stream.attached = False
            if stream.complete:
                session.out.streams.pop(stream.key, None)
            if session.id is None:
                session.close_nowait()
            session.touch()
        return None

    async def _delete(self, request: HttpRequest) -> _Reply | None:
        """End the session a ``DELETE`` names, on every worker (503 when the store cannot say so)."""
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


async def _hand_over(
    session: _HttpSession,
    plan: PostPlan,
    body: bytes,
    headers: list[tuple[str, str]],
    sharing: Sharing | None,
) -> _Reply:
    """Hand over a ``POST`` of notifications and responses alone: 202 (the planner's rule 6)."""
    session.touch()
    if sharing is not None and session.id is not None and len(plan.messages) == 1:
        if plan.messages[0].method == "notifications/initialized" and session.restored is not None:
            await sharing.initialized_elsewhere(session, body)  # (for the first worker)
            return _Reply(202, headers=headers)
        if sharing.route(session, plan.messages[0], body):
            return _Reply(202, headers=headers)  # for another worker's handler
    try:
        await session.put(Frame(body))
    except trio.ClosedResourceError:
        return _session_ended()
    if session.id is None:
        session.close_nowait()
    return _Reply(202, headers=headers)
