"""Streamable HTTP sessions shared by several workers through a store.

With a :class:`~mcp_trio.store.Store`, any request of a session may land on
any worker (process or host) serving the endpoint.  Each worker keeps a local
*replica* of the sessions it has seen; the store holds what they share:

* the session record (:class:`~mcp_trio.store.SessionRecord`), written by the
  worker that answered ``initialize`` before its answer leaves; a worker that
  gets a request naming a session it has never seen restores a replica from
  it (no handshake: the negotiated revision, the client's info and
  capabilities, log level, subscriptions), else answers 404 as always;
* the events of resumable SSE streams (ids ``<stream>.<n>@<worker>``, unique
  among the workers), so a client resumes a stream on any worker;
* the bus: each worker listens on its own channel and on one all of them
  hear.  What must reach another worker goes there: the client's answer to a
  request another worker's handler made (its id names that worker:
  ``<worker>~<n>``), messages for the GET stream another worker holds (the
  record names it), ``notifications/cancelled`` (every replica takes it:
  the handler runs wherever its POST landed), the session's end (``DELETE``,
  or expiry with no worker having seen the session within ``idle_timeout``)
  and changes of the record (log level, subscriptions).

A request of a session a worker holds a replica of costs no store round trip:
the worker renews the record at most every eighth of ``idle_timeout`` (it lives
a quarter longer), and a worker ending a session takes the record (which names
every worker holding a replica) and waits until each has confirmed over the bus
that it dropped its own, so that the next request anywhere is a 404.  A message
for the GET stream of a worker that died (nobody listens on its channel) is kept
by the sender, which is named holder instead until the client opens the stream
again; the worker holding the GET stream (else the one that answered
``initialize``) tells the session of list changes and resource updates, and a
replica finding it gone at such a change takes its place (``adopt``).

Nothing here runs without a store: a single server keeps today's path.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from ....store import SessionRecord, Store, StoreError
from ..._base import Frame
from .._bus import (
    _batch_members,
    _Note,
    check_worker_id,
    principal_key,
)
from .._replies import _Reply, _unconfirmed_end
from .._request import _HEADER_SESSION
from ._follow import Following
from ._records import Records, _announcer
from ._streams import _HttpSession
from ._worker_bus import WorkerBus

if TYPE_CHECKING:
    from .._request import HttpRequest
    from ._endpoint import StreamableHTTP

log = logging.getLogger("mcp_trio.http")

_ID_MARK = "~"  # a request id of the server's: <worker>~<n>
_STREAM_NOTES = frozenset({"follow", "followed", "unfollow", "event", "close", "done"})


async def take_session(store: Store, session_id: str) -> SessionRecord | None:
    """Take a session's record (the replicas it names) from ``store`` and forget its events
    (they expire by themselves if that fails); raise :class:`StoreError`, before anything
    ended, if the record cannot be taken: a ``DELETE`` then answers 503."""
    record = await store.sessions.take(session_id)
    try:
        await store.events.forget(session_id)
    except StoreError as exc:
        log.warning("could not forget the events of session %s: %s", session_id, exc)
    return record


class Sharing:
    """One worker's side of the sessions shared through ``store`` (see the module doc): the
    replicas' changes, the GET stream's holder, routing; the records and restoring a replica
    from one are its :class:`Records`, the bus its :class:`WorkerBus`, the streams followed
    between workers its :class:`Following`."""

    def __init__(self, endpoint: StreamableHTTP, store: Store, worker_id: str) -> None:
        self.endpoint = endpoint
        self.store = store
        self.worker = check_worker_id(worker_id)
        self.id_prefix = worker_id + _ID_MARK  # (the ids of the server's requests on this worker)
        self.suffix = "@" + worker_id  # (of this worker's event ids and stream keys)
        self.records = Records(endpoint, store, self.worker)
        self._updates = 0  # (numbers this worker's updates: see ``update``)
        self.bus = WorkerBus(store, self.worker, self._take)
        self.following = Following(endpoint, self.bus)

    # ------------------------------------------------------------- running

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen to the bus, publish what is queued and keep the records of the
        sessions with open streams alive, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self.bus.publisher)
            nursery.start_soon(self.records.keep_alive)
            await nursery.start(self.bus.listen)
            task_status.started()

    # ------------------------------------------------------------ records

    async def update(self, session: _HttpSession, *, log_level: str | None, subscriptions: list[str]) -> None:
        """Write the session's log level and subscriptions to its record and tell
        the other replicas; return once each has it (the client's next request may
        go to any of them)."""
        assert session.id is not None
        record = None
        try:
            changes = {"log_level": log_level, "subscriptions": subscriptions}
            record = await self.store.sessions.change(session.id, changes, ttl=self.records.record_ttl)
        except StoreError as exc:
            log.warning("could not write the record of session %s: %s", session.id, exc)
        self._updates += 1  # (its own key: two updates at once each wait)
        note = _Note("update", session.id, key=f"update-{self._updates}", origin=self.worker)
        note.log_level, note.subscriptions = log_level, subscriptions
        await self.bus.post_confirmed(note, set(record.replicas) if record is not None else set())

    async def hold_stream(self, session: _HttpSession) -> None:
        """Name this worker in the record as the holder of the session's GET
        stream, and have the other workers send here what they kept for it.
        It stays named once the stream closes: what the others send meanwhile
        waits here, for a GET on any worker to collect (see ``held``)."""
        assert session.id is not None
        session.holder = self.worker
        try:
            if (
                await self.store.sessions.change(
                    session.id, {"stream_worker": self.worker}, ttl=self.records.record_ttl
                )
                is None
            ):
                return
        except StoreError as exc:
            log.warning("could not name this worker the GET stream's of session %s: %s", session.id, exc)
        self.bus.post(None, _Note("held", session.id, origin=self.worker))

    async def to_stream_holder(self, session: _HttpSession, data: bytes) -> bool:
        """Send ``data`` to the GET stream of the session another worker holds; False: none does."""
        assert session.id is not None
        try:
            record = await self.store.sessions.get(session.id)
        except StoreError as exc:
            log.warning("a message for session %s is kept here: %s", session.id, exc)
            return False
        holder = record.stream_worker if record is not None else None
        if holder is None or holder == self.worker:
            return False
        self.bus.post(
            holder, _Note("get", session.id, data), partial(self._holder_gone, session, holder, data)
        )
        return True

    async def _holder_gone(self, session: _HttpSession, holder: str, data: bytes) -> None:
        """The worker named as holding the session's GET stream is gone (it died): this
        one keeps ``data`` for the stream and is named instead, unless another was."""
        session.out.keep(data)
        self.bus.mark_gone(holder)
        await self._take_over(session, holder)

    async def adopt(self, session: _HttpSession) -> bool:
        """Whether the worker announcing to ``session`` (list changes, resource updates)
        is gone and this one took its place; asked of the bus (is anybody listening on
        that worker's channel?) once a second at most per worker."""
        holder = session.holder
        if not holder or holder == self.worker or session.closed:
            return False
        return await self.bus.is_gone(holder) and await self._take_over(session, holder)

    async def _take_over(self, session: _HttpSession, holder: str) -> bool:
        """Name this worker instead of ``holder`` (gone) as the one holding the session's
        GET stream, unless another worker was named meanwhile; whether it is."""
        assert session.id is not None
        if session.holder == self.worker:
            return True  # (named already)

        def instead(record: SessionRecord) -> dict[str, Any]:
            return {"stream_worker": self.worker} if _announcer(record) == holder else {}

        try:
            record = await self.store.sessions.change(session.id, instead, ttl=self.records.record_ttl)
        except StoreError as exc:
            log.warning("session %s: could not replace the worker of its GET stream: %s", session.id, exc)
            return False
        if record is None or record.stream_worker != self.worker:
            if record is not None and record.stream_worker:
                session.holder = record.stream_worker
            return False
        log.info("session %s: worker %s is gone; its GET stream is kept here", session.id, holder)
        session.holder = self.worker
        self.bus.post(None, _Note("held", session.id, origin=self.worker))
        return True

    async def tell_ended(self, session_id: str, record: SessionRecord | None) -> None:
        """End every replica of the session; return once the workers ``record`` names have
        dropped theirs (see ``_post_confirmed``)."""
        replicas = set(record.replicas if record is not None else ())
        await self.bus.post_confirmed(_Note("end", session_id, origin=self.worker), replicas)

    async def initialized_elsewhere(self, session: _HttpSession, body: bytes) -> None:
        """Hand ``notifications/initialized``, sent to this replica, to the worker that
        answered ``initialize``; return once it has it: the client's next request may
        go there, and must find the session initialized."""
        assert session.id is not None and session.restored is not None
        first = session.restored.first_worker
        note = _Note("initialized", session.id, body, origin=self.worker)
        await self.bus.post_confirmed(note, {first} if first else set())

    async def delete_elsewhere(self, request: HttpRequest, found: _Reply) -> _Reply:
        """``DELETE`` of a session this worker holds no replica of: end it
        everywhere if its record says it exists and is this principal's."""
        session_id = request.headers.get(_HEADER_SESSION)
        if found.status != 404 or session_id is None or session_id in self.endpoint.sessions:
            return found
        try:
            record = await self.store.sessions.get(session_id)
            if record is None or record.principal != principal_key(request.principal):
                return found
            record = await take_session(self.store, session_id)
        except StoreError as exc:
            return _unconfirmed_end(exc)
        await self.tell_ended(session_id, record)
        return _Reply(200)

    async def ended(self, session: _HttpSession) -> None:
        """This worker's replica of ``session`` ended: if no worker has used the
        session within ``idle_timeout`` (it expired), end it everywhere."""
        if not session.ended_everywhere and await self.records.expired(session):
            assert session.id is not None
            record = None
            try:
                record = await take_session(self.store, session.id)
            except StoreError as exc:  # (the replicas end all the same)
                log.warning("could not forget session %s: %s", session.id, exc)
            await self.tell_ended(session.id, record)

    # ------------------------------------------------------------ routing

    def owner_of(self, request_id: Any) -> str | None:
        """The worker whose handler waits for the answer to ``request_id``, if not this one."""
        if isinstance(request_id, str):
            worker, mark, _ = request_id.partition(_ID_MARK)
            if mark and worker != self.worker:
                return worker
        return None

    def route(self, session: _HttpSession, message: Any, body: bytes) -> bool:
        """Pass a POST's message on to the workers that must see it: an
        answer (or progress) for another worker's request goes to that worker
        only (True: not for this one); ``notifications/initialized`` to the
        worker that answered ``initialize``; ``notifications/cancelled`` to
        every worker as well as this one (False)."""
        assert session.id is not None
        if message.method == "notifications/initialized":
            if session.restored is None:
                return False  # this worker answered initialize: its replica takes it
            note = _Note("initialized", session.id, body, origin=self.worker)
            self.bus.post(None, note)  # (a restored replica is ready; see initialized_elsewhere)
            return True
        if message.method == "notifications/cancelled":
            params = message.params if isinstance(message.params, dict) else {}
            note = _Note("frame", session.id, body, cancel=params.get("requestId"), origin=self.worker)
            self.bus.post(None, note)
            return False
        target = message.id
        if message.method == "notifications/progress" and isinstance(message.params, dict):
            target = message.params.get("progressToken")
        worker = self.owner_of(target)
        if worker is None:
            return False
        self.bus.post(worker, _Note("frame", session.id, body))
        return True

    def route_batch(self, session: _HttpSession, messages: list[Any], body: bytes) -> bytes | None:
        """:meth:`route` each message of a batch (2025-03-26): the batch left for this
        worker (``body`` itself when nothing went elsewhere), or None: nothing is left."""
        try:
            members = _batch_members(body)
        except msgspec.DecodeError:
            return body
        if len(members) != len(messages):
            return body
        kept = [
            bytes(raw)
            for m, raw in zip(messages, members, strict=True)
            if not self.route(session, m, bytes(raw))
        ]
        if len(kept) == len(members):
            return body
        return b"[" + b",".join(kept) + b"]" if kept else None

    async def _take_confirmed(self, note: _Note) -> None:
        """A note another worker waits for this one to confirm (``_post_confirmed``),
        confirmed once taken, even without a replica; or a confirmation."""
        if note.kind == "ack":
            self.bus.confirmation(note)
            return
        session = self.endpoint.sessions.get(note.session)
        if note.kind == "end":
            self.records.ended(note.session)
            if session is not None and not session.closed:
                session.end_here()
        elif note.kind == "update":
            watcher = session.on_shared_update if session is not None and not session.closed else None
            if watcher is not None:
                watcher(note.log_level, list(note.subscriptions or ()))
        elif session is not None and not session.closed and session.restored is None:
            try:  # (initialized: queued before any later request of the client's reaches it)
                await session.put(Frame(note.data))
            except trio.ClosedResourceError:
                pass
        if note.origin is not None:
            self.bus.post(
                note.origin, _Note("ack", note.session, key=note.key or note.kind, origin=self.worker)
            )

    async def _take(self, note: _Note) -> None:
        """A message from another worker (or this one's broadcast) about a session."""
        if note.kind in ("end", "initialized", "update", "ack"):
            if note.origin != self.worker:
                await self._take_confirmed(note)
            return
        session = self.endpoint.sessions.get(note.session)
        if session is None or session.closed or note.origin == self.worker:
            return
        if note.kind == "frame":
            if note.cancel is not None and note.cancel in session.out.by_request:
                session.out.finish(note.cancel)
            try:
                await session.put(Frame(note.data))
            except trio.ClosedResourceError:
                pass
        elif note.kind == "held":
            session.holder = note.origin
            kept, session.out.backlog = session.out.backlog, None
            for data in kept or ():
                self.bus.post(note.origin, _Note("get", note.session, data))
        elif note.kind == "get":
            await session.out.to_get_stream(note.data)
        elif note.kind in _STREAM_NOTES:
            self.following.take(session, note)
