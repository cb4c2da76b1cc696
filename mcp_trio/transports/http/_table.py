"""The session table of the Streamable HTTP endpoint (:class:`_SessionTable`):
its sessions by id and by client address, within ``max_sessions`` in all and
``max_sessions_per_client`` of one address."""

from __future__ import annotations

import logging
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
