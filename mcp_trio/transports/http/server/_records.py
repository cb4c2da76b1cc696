"""The records of the sessions shared through a store, and this worker's replicas of them.

Rules (see :mod:`._sharing` for the whole):

* The worker that answered ``initialize`` writes the session's record before its answer
  leaves; one the store failed to take is kept (at most ``_UNSAVED``) and written when the
  store answers again, the session served by this worker only meanwhile.
* A record lives a quarter longer than ``idle_timeout``; a worker renews it at most every
  eighth of ``idle_timeout``, when a request of the session comes (or a stream stays open).
* A request naming a session this worker has never seen restores a replica from its record
  (this worker named among its replicas first: a ``DELETE`` waits for it), one at a time per
  session; a session ended meanwhile is not restored.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import trio

from ....store import SessionRecord, Store, StoreError
from .._bus import Restored, _from_json, _json, principal_key
from .._replies import _error_reply, _Reply, _session_ended
from .._request import _HEADER_SESSION
from ._streams import _HttpSession

if TYPE_CHECKING:
    from .._request import HttpRequest
    from ._endpoint import StreamableHTTP

log = logging.getLogger("mcp_trio.http")

_TOUCH_EVERY = 1 / 8  # of idle_timeout: how often a worker in use renews a session's record, at most
_UNSAVED = 1024  # records kept at most to write when the store is back
_RECORD_TTL = 1 + 2 * _TOUCH_EVERY  # of idle_timeout: a record's time to live (the renewals are late)


def _announcer(record: SessionRecord) -> str | None:
    """The worker telling the session of list changes and resource updates: the one
    holding (or last holding) its GET stream, else the one that answered initialize."""
    return record.stream_worker or (record.replicas[0] if record.replicas else None)


def _keep_unsaved(unsaved: dict[str, SessionRecord], record: SessionRecord) -> None:
    """Keep ``record`` (the store failed to take it) to write when the store is back, at most
    ``_UNSAVED`` of them (the oldest forgotten: its session stays this worker's only)."""
    if len(unsaved) >= _UNSAVED:
        del unsaved[next(iter(unsaved))]
    unsaved[record.session_id] = record


async def _save_late(store: Store, record: SessionRecord, ttl: float) -> bool:
    """Write the record of a session opened while the store was away, now that it answers: the
    other workers can serve the session from now on."""
    log.info("session %s: its record is written now that the store answers", record.session_id)
    await store.sessions.put(record, ttl=ttl)
    return True


class Records:
    """The records of the sessions shared through ``store`` and this worker's replicas of them
    (a collaborator of ``Sharing``): writing a session's record, renewing it,
    restoring a replica from it, telling whether the session expired everywhere."""

    def __init__(self, endpoint: StreamableHTTP, store: Store, worker: str) -> None:
        self.endpoint = endpoint
        self.store = store
        self.worker = worker
        self._unsaved: dict[str, SessionRecord] = {}  # records the store failed to take, by session
        self._restoring: dict[str, trio.Event] = {}
        self._ended_restoring: set[str] = set()  # sessions ended while this worker restored them

    @property
    def ttl(self) -> float:
        return self.endpoint.idle_timeout

    @property
    def record_ttl(self) -> float:  # (renewed at most every 1/8 of idle_timeout, it outlives it)
        return self.ttl * _RECORD_TTL

    async def keep_alive(self) -> None:
        """Sessions whose streams stay open here are alive everywhere: touch their records."""
        while True:
            await trio.sleep(self.ttl / 4)
            await self._touch_streaming()

    async def _touch_streaming(self) -> None:
        # (a method of its own: the loop variable, left in keep_alive's frame, would keep the
        # last session, and all it holds, alive while keep_alive sleeps, after its end)
        for session in list(self.endpoint.sessions.values()):
            if session.id is not None and session.out.holds_stream():
                await self.touch(session)

    async def save(self, session: _HttpSession) -> None:
        """Write the record of ``session``, just initialized here, if the answer
        to its ``initialize`` negotiated a version."""
        params, session.init_params = session.init_params, None
        if not session.negotiated or params is None:
            return
        assert session.id is not None and session.version is not None
        record = SessionRecord(
            session_id=session.id,
            protocol_version=session.version,
            client_info=_json(params.get("clientInfo"), b"null"),
            client_capabilities=_json(params.get("capabilities"), b"{}"),
            principal=principal_key(session.principal),
            replicas=[self.worker],
        )
        try:
            await self.store.sessions.put(record, ttl=self.record_ttl)
            session.renewed = trio.current_time()
        except StoreError as exc:
            log.warning("session %s is served by this worker only: its record failed (%s)", session.id, exc)
            _keep_unsaved(self._unsaved, record)

    async def touch(self, session: _HttpSession) -> bool:
        """Renew the record of ``session``, in use; False: the record is gone (the
        session ended, and the news has not come over the bus)."""
        assert session.id is not None
        try:
            renewed = await self.store.sessions.touch(session.id, ttl=self.record_ttl)
            if not renewed and session.id in self._unsaved:  # (opened while the store was away)
                renewed = await _save_late(self.store, self._unsaved.pop(session.id), self.record_ttl)
            session.renewed = trio.current_time()
            return renewed
        except StoreError as exc:
            log.warning("could not touch the record of session %s: %s", session.id, exc)
            return True

    async def find(self, request: HttpRequest, found: _HttpSession | _Reply) -> _HttpSession | _Reply:
        """The session a request names (``found`` here, or restored from its
        record), or the reply refusing it (404 when the record is gone too)."""
        if isinstance(found, _Reply):
            session_id = request.headers.get(_HEADER_SESSION)
            if found.status != 404 or session_id is None or session_id in self.endpoint.sessions:
                return found  # (a local session ending, or another principal's)
            try:
                restored = await self.restore(session_id, request)
            except StoreError as exc:
                log.warning("could not restore session %s: %s", session_id, exc)
                return _error_reply(503, f"Service Unavailable: the session store failed ({exc})")
            if isinstance(restored, _Reply):
                return restored
            return found if restored is None or restored.closed else restored
        # No store round trip per request: a worker ending the session waits until every
        # replica has dropped it (tell_ended), so a later request here is a 404 at once.
        if trio.current_time() - found.renewed >= self.ttl * _TOUCH_EVERY and not await self.touch(found):
            found.end_here()  # ended by another worker, and the news was lost
            return _session_ended()
        return found

    async def restore(self, session_id: str, request: HttpRequest) -> _HttpSession | _Reply | None:
        """A local replica of the session another worker initialized, or None
        (no such session, or not this principal's), or the refusal when this
        worker's session table is full (a replica counts as a session)."""
        endpoint = self.endpoint
        waiting = self._restoring.get(session_id)
        if waiting is not None:  # another request of the session is restoring it
            await waiting.wait()
            return endpoint.sessions.get(session_id)
        done = self._restoring[session_id] = trio.Event()
        try:
            record = await self.store.sessions.get(session_id)
            if record is None or record.principal != principal_key(request.principal):
                return None
            # Named among the replicas first: a DELETE from now on waits for this one.
            record = await self.store.sessions.change(session_id, self._with_me, ttl=self.record_ttl)
            if record is None or session_id in self._ended_restoring:
                return None
            refused = endpoint.table.make_room(None)
            if refused is not None:
                return refused
            session = _HttpSession(endpoint, session_id)
            session.restored = Restored(
                record.protocol_version,
                _from_json(record.client_info),
                _from_json(record.client_capabilities),
                record.log_level,
                list(record.subscriptions),
                record.replicas[0] if record.replicas else None,  # (the first)
            )
            session.version = record.protocol_version
            session.principal = request.principal
            session.past_initialize = True
            session.renewed = trio.current_time()
            # (the worker holding its GET stream announces, else the first)
            session.holder = _announcer(record) or ""
            endpoint.table.add(session)
            endpoint._start_session(session)
            return session
        finally:
            del self._restoring[session_id]
            self._ended_restoring.discard(session_id)
            done.set()

    def _with_me(self, record: SessionRecord) -> dict[str, Any]:
        return {} if self.worker in record.replicas else {"replicas": [*record.replicas, self.worker]}

    def ended(self, session_id: str) -> None:
        """The session ended everywhere: a replica of it being restored here is not."""
        if session_id in self._restoring:
            self._ended_restoring.add(session_id)

    async def expired(self, session: _HttpSession) -> bool:
        """Whether ``session``, idle here for ``idle_timeout``, is idle everywhere
        (no worker touched its record since this one last did)."""
        assert session.id is not None
        try:
            record = await self.store.sessions.get(session.id)
        except StoreError:
            return False
        # This worker renewed the record at most an eighth of idle_timeout before the
        # session's last request here: left as it renewed it, the record expires at most
        # _RECORD_TTL - 1 idle_timeouts from now (give or take the clocks' rounding: a
        # 32nd); later, another worker renewed it since.
        return record is None or record.expires_at <= time.time() + self.ttl * (_RECORD_TTL - 1 + 1 / 32)
