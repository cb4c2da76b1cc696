"""The session table of the Streamable HTTP endpoint (:class:`_SessionTable`):
its sessions by id and by client address, within ``max_sessions`` in all and
``max_sessions_per_client`` of one address, and the end of idle sessions.

Idle expiry is one task for the table (:meth:`_SessionTable._expire_idle`), not a
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

from . import _streams
from ._replies import _Reply
from ._request import _busy

if TYPE_CHECKING:
    from ._streams import _HttpSession

log = logging.getLogger("mcp_trio.http")


class _SessionTable:
    """The session table of :class:`StreamableHTTP` (its ``sessions``, and the
    same sessions by client address) and its bounds: ``max_sessions`` in all,
    ``max_sessions_per_client`` of one address."""

    sessions: dict[str, _HttpSession]
    _by_client: dict[str | None, dict[str, _HttpSession]]  # oldest first
    max_sessions: int
    max_sessions_per_client: int | None
    idle_timeout: float
    _idle: list[tuple[float, int, _HttpSession]]  # (when to look, order, session): a heap
    _idle_order: itertools.count[int]
    _idle_stale: int  # entries of sessions that ended
    _idle_sleep: trio.CancelScope | None  # the expiry task's wait for the next due session

    def _init_idle(self) -> None:
        self._idle = []
        self._idle_order = itertools.count()
        self._idle_stale = 0
        self._idle_sleep = None

    def _watch_idle(self, session: _HttpSession) -> None:
        """Have ``session`` ended once idle (see the module's docstring)."""
        session.touch()
        self._look_at(session, session.due)

    def _look_at(self, session: _HttpSession, when: float) -> None:
        idle = self._idle
        if self._idle_sleep is not None and (not idle or when < idle[0][0]):
            self._idle_sleep.cancel()  # (sooner than the task waits for)
        heapq.heappush(idle, (when, next(self._idle_order), session))

    def _unwatch_idle(self) -> None:
        """A watched session ended: its entry is dropped when due, or before, with every other
        such entry, once they are half of the heap."""
        self._idle_stale += 1
        if self._idle_stale > 64 and self._idle_stale * 2 > len(self._idle):
            self._idle = [entry for entry in self._idle if not entry[2].closed]
            heapq.heapify(self._idle)
            self._idle_stale = 0

    async def _expire_idle(self) -> None:
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
                self._idle_stale -= 1  # (its end, _forget, counts an entry it no longer has)
                session.scope.cancel()  # (_run_session's finally forgets it)

    def _make_room(self, client: str | None) -> _Reply | None:
        """Room for a new session of ``client``, or the refusal (429: its address holds its
        share; 503: the table is full)."""
        mine = self._by_client.get(client) if client is not None else None
        cap = self.max_sessions_per_client
        if (
            mine is not None
            and cap is not None
            and len(mine) >= cap
            and not self._evict_half_open(mine.values(), _streams._REPLACE_AFTER)
        ):
            return _busy(429, f"Too many sessions from this client address (at most {cap})")
        if len(self.sessions) >= self.max_sessions and not self._evict_half_open(self.sessions.values()):
            return _busy(503, "Too many sessions")
        return None

    def _drop(self, session: _HttpSession) -> None:
        """Take ``session`` out of the session tables."""
        assert session.id is not None
        self.sessions.pop(session.id, None)
        mine = self._by_client.get(session.client)
        if mine is not None and mine.pop(session.id, None) is not None and not mine:
            del self._by_client[session.client]

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
        assert session.id is not None
        log.info("session table full: evicting half-open session %s", session.id)
        self._drop(session)
        session.closed = True
        session._end()
        session.scope.cancel()  # _run_session's finally forgets the rest
        return True
