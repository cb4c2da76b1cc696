"""The session table of the Streamable HTTP endpoint (:class:`SessionTable`, its collaborator):
its sessions by id and by client address, within ``max_sessions`` in all and
``max_sessions_per_client`` of one address, and the end of idle sessions.

A full table makes room for a new session (:meth:`SessionTable.make_room`) by
ending the oldest *half-open* one (no request after its ``initialize`` POST), else
one of the least recently used: of the ``_SAMPLE`` sessions used least recently
(none with a stream open), the one whose address holds the most sessions.  So
sessions held from many addresses cannot lock new clients out, and an address with
many sessions loses one before an address with few.  Both orders are kept as
requests come (``_half_open`` and ``_recent``, dictionaries in order), so making
room looks at a few sessions, never the whole table.

Idle expiry is one task for the table (:meth:`SessionTable.expire_idle`), not a
deadline per session: a request only stores when the session falls due
(``_HttpSession.touch``), and the task looks at each session once it is due,
ending it if no stream is open and nothing came since.  A deadline per session
cost every request two moves of trio's deadline heap (off while its POST is
open, on again after) and left a stale record in it each time."""

from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import trio

from .._replies import _Reply
from .._request import _busy
from . import _streams

if TYPE_CHECKING:
    from ._streams import _HttpSession

log = logging.getLogger("mcp_trio.http")

_SAMPLE = 16  # least recently used sessions compared when a full table makes room


class SessionTable:
    """The sessions of one :class:`StreamableHTTP` endpoint (``sessions``, by id; the same by
    client address), their bounds (``max_sessions`` in all, ``max_sessions_per_client`` of one
    address) and the end of idle ones (``expire_idle``, one task).  The table owns these; the
    endpoint adds, finds and drops sessions through it."""

    def __init__(self, max_sessions: int, max_sessions_per_client: int | None, idle_timeout: float) -> None:
        self.max_sessions = max_sessions
        self.max_sessions_per_client = max_sessions_per_client
        self.idle_timeout = idle_timeout
        self.sessions: dict[str, _HttpSession] = {}
        self._by_client: dict[str | None, dict[str, _HttpSession]] = {}  # oldest first
        self._half_open: dict[str, _HttpSession] = {}  # not yet past initialize, oldest first
        self._recent: dict[str, _HttpSession] = {}  # past initialize, least recently used first
        self._idle: list[tuple[float, int, _HttpSession]] = []  # (when to look, order, session): a heap
        self._idle_order = itertools.count()
        self._idle_stale = 0  # entries of sessions that ended
        self._idle_sleep: trio.CancelScope | None = None  # the expiry task's wait for the next due one

    # ------------------------------------------------------------ idle expiry

    def watch_idle(self, session: _HttpSession) -> None:
        """Have ``session`` ended once idle (see the module's docstring)."""
        session.touch()
        self._look_at(session, session.due)

    def _look_at(self, session: _HttpSession, when: float) -> None:
        idle = self._idle
        if self._idle_sleep is not None and (not idle or when < idle[0][0]):
            self._idle_sleep.cancel()  # (sooner than the task waits for)
        heapq.heappush(idle, (when, next(self._idle_order), session))

    def unwatch_idle(self) -> None:
        """A watched session ended: its entry is dropped when due, or before, with every other
        such entry, once they are half of the heap (more than 64), or all of it.

        An entry holds its session, and with it all the session kept, so ended sessions
        are not left waiting for their idle time: at most half the heap, and none once
        no session is left.  The heap is pruned in place: :meth:`expire_idle` holds it
        while it waits, and would keep a replaced one (every session in it) until then."""
        self._idle_stale += 1
        idle = self._idle
        stale = self._idle_stale
        if stale * 2 > len(idle) and (stale > 64 or stale >= len(idle)):
            idle[:] = [entry for entry in idle if not entry[2].closed]
            heapq.heapify(idle)
            self._idle_stale = 0

    async def expire_idle(self) -> None:
        """End each session idle for ``idle_timeout``: no request, no POST or GET stream open."""
        while True:
            idle = self._idle
            when = idle[0][0] if idle else math.inf
            now = trio.current_time()
            if when > now:
                with trio.CancelScope(deadline=when) as self._idle_sleep:
                    await trio.sleep_forever()
                self._idle_sleep = None
                continue
            session = heapq.heappop(idle)[2]
            if session.closed:
                self._idle_stale = max(0, self._idle_stale - 1)
            elif session.due > now:
                self._look_at(session, session.due)
            elif session.busy():
                self._look_at(session, now + self.idle_timeout)
            else:
                self._idle_stale -= 1  # (its end, unwatch_idle, counts an entry it no longer has)
                session.scope.cancel()  # (StreamableHTTP._run_session's finally forgets it)

    # ------------------------------------------------------------ the table

    def add(self, session: _HttpSession) -> None:
        """Put ``session`` (an id, a client address; past ``initialize`` if restored) in the table."""
        assert session.id is not None
        self.sessions[session.id] = session
        self._by_client.setdefault(session.client, {})[session.id] = session
        (self._recent if session.past_initialize else self._half_open)[session.id] = session

    def used(self, session: _HttpSession) -> None:
        """A request named ``session``: it is past its ``initialize``, and the most recently used."""
        assert session.id is not None
        if not session.past_initialize:
            session.past_initialize = True
            self._half_open.pop(session.id, None)
        recent = self._recent
        recent[session.id] = recent.pop(session.id, session)

    def drop(self, session: _HttpSession) -> None:
        """Take ``session`` out of the table."""
        assert session.id is not None
        self.sessions.pop(session.id, None)
        self._half_open.pop(session.id, None)
        self._recent.pop(session.id, None)
        mine = self._by_client.get(session.client)
        if mine is not None and mine.pop(session.id, None) is not None and not mine:
            del self._by_client[session.client]

    def make_room(self, client: str | None) -> _Reply | None:
        """Room for a new session of ``client``, or the refusal (429: its address holds its
        share; 503: every session of the full table has a stream open)."""
        mine = self._by_client.get(client) if client is not None else None
        cap = self.max_sessions_per_client
        if (
            mine is not None
            and cap is not None
            and len(mine) >= cap
            and not self._evict_half_open(mine.values(), _streams._REPLACE_AFTER)
        ):
            return _busy(429, f"Too many sessions from this client address (at most {cap})")
        if len(self.sessions) < self.max_sessions:
            return None
        if not self._evict_half_open(self._half_open.values()) and not self._evict_least_used():
            return _busy(503, "Too many sessions, each with a stream open")
        return None

    def _evict_half_open(self, candidates: Iterable[_HttpSession], min_age: float = 0.0) -> bool:
        """Make room for a new session: end the oldest of ``candidates`` that never
        got past its ``initialize`` POST (and is ``min_age`` seconds old), as ``DELETE``
        would.  False: none."""
        for session in candidates:  # insertion order: oldest first
            if not session.past_initialize:
                break
        else:
            return False
        if trio.current_time() - session.opened < min_age:
            return False  # the oldest is too young, so are the others
        self._evict(session, "half-open")
        return True

    def _evict_least_used(self) -> bool:
        """Make room for a new session: of the ``_SAMPLE`` least recently used sessions with
        no stream open, end the one whose address holds the most sessions (of those, the least
        recently used).  False: every session has a stream open."""
        recent, by_client = self._recent, self._by_client
        chosen, most, looked = None, 0, 0
        for session in list(itertools.islice(recent.values(), _SAMPLE * 4)):
            assert session.id is not None
            if session.busy():  # (a stream open: in use now)
                recent[session.id] = recent.pop(session.id)
                continue
            held = len(by_client.get(session.client, ()))
            if held > most:
                chosen, most = session, held
            looked += 1
            if looked == _SAMPLE:
                break
        if chosen is None:
            return False
        self._evict(chosen, "least recently used")
        return True

    def _evict(self, session: _HttpSession, which: str) -> None:
        assert session.id is not None
        log.info("session table full: evicting %s session %s", which, session.id)
        self.drop(session)
        session.closed = True
        session._end()
        session.scope.cancel()  # StreamableHTTP._run_session's finally forgets the rest
