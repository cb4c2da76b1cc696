"""The sessions open on a server, and what the server keeps of each between
requests: its log level (``logging/setLevel``) and the resources it subscribed
to (``resources/subscribe``, which :class:`~._resources.Resources` answers),
and what its handlers keep (``ctx.set_state``: see :mod:`._session_state`), shared with the
other workers serving it when a store shares the session.
:class:`OpenSessions` also tells them that a list changed."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, TypeVar

from .._engine._context import RequestContext
from .._engine._session import Session
from .._exceptions import ConnectionClosed
from ..transports._base import SharedRecord, SharedSession
from ..types import _versions
from . import _session_state as kept
from ._context import _LEVEL_RANK, Context
from ._fanout import adopted, announces

if TYPE_CHECKING:
    from ._listen import SubscriptionHub

log = logging.getLogger("mcp_trio.server")

T = TypeVar("T")


class OpenSessions:
    """The sessions open on a :class:`~mcp_trio.server.Server`, their log levels and subscriptions."""

    __slots__ = ("sessions", "log_levels", "subscribed", "states", "_hub")

    def __init__(self, hub: SubscriptionHub) -> None:
        self.sessions: set[Session] = set()
        self.log_levels: dict[Session, str] = {}
        #: The URIs each session subscribed to.
        self.subscribed: dict[Session, set[str]] = {}
        #: What each (unshared) session's handlers keep (``ctx.set_state``).
        self.states: dict[Session, dict[str, object]] = {}
        self._hub = hub  # (the 2026-07-28 subscriptions/listen streams)

    def opened(self, session: Session) -> None:
        self.sessions.add(session)

    def closed(self, session: Session) -> None:
        self.sessions.discard(session)
        self.log_levels.pop(session, None)
        self.subscribed.pop(session, None)
        self.states.pop(session, None)

    async def get_state(self, session: Session, key: str, kind: type[T]) -> T | kept.Absent:
        """What the session's handlers kept as ``key``, as a ``kind`` (``ABSENT``: nothing)."""
        kept.check_key(key)
        record = _record(session)
        if record is not None:
            data = await kept.load(record, key)
            return kept.ABSENT if data is None else kept.decode(key, data, kind)
        values = self.states.get(session)
        if values is None or key not in values:
            return kept.ABSENT
        return kept.typed(key, values[key], kind)

    async def set_state(self, session: Session, key: str, value: object, *, delete: bool = False) -> None:
        """Keep ``value`` as ``key`` for the session's handlers (or forget ``key``)."""
        kept.check_key(key)
        record = _record(session)
        if record is not None:
            await kept.save(record, key, value, delete=delete)
        elif delete:
            self.states.get(session, {}).pop(key, None)
        elif session in self.sessions:  # (not once it has ended)
            self.states.setdefault(session, {})[key] = value

    async def set_level(self, ctx: RequestContext, params: Any) -> Any:
        """``logging/setLevel``."""
        self.log_levels[ctx.session] = params.level
        await self.share(ctx.session)
        return {}

    async def share(self, session: Session) -> None:
        """Keep the session's log level and subscriptions where the other
        workers serving it find them (a transport sharing sessions through a
        store: its ``remember``)."""
        channel = session.channel
        if isinstance(channel, SharedSession):
            subscriptions = sorted(self.subscribed.get(session, ()))
            await channel.remember(log_level=self.log_levels.get(session), subscriptions=subscriptions)

    def adopt(self, session: Session, log_level: str | None, subscriptions: list[str]) -> None:
        """Take the log level and subscriptions another worker set for ``session``."""
        if log_level is None:
            self.log_levels.pop(session, None)
        else:
            self.log_levels[session] = log_level
        if subscriptions:
            self.subscribed[session] = set(subscriptions)
        else:
            self.subscribed.pop(session, None)

    def log_threshold(self, ctx: Context) -> str | None:
        """The lowest level of log message the client of ``ctx`` wants (None: no choice made)."""
        if _versions.is_stateless(ctx.protocol_version):
            level = ctx.request.meta.get("io.modelcontextprotocol/logLevel")
            return level if level in _LEVEL_RANK else None
        return self.log_levels.get(ctx.session)

    def list_changed_here(self, method: str) -> None:
        """Send ``method`` (a ``list_changed`` notification) to this worker's initialized sessions."""
        self._hub.changed(method)
        for session in list(self.sessions):
            if session.initialized.is_set() and not _versions.is_stateless(session.protocol_version or ""):
                # (shared by workers: told by the one announcing to it, or instead of it if gone)
                self.spawn_notify(session, method, None, unless_announced_elsewhere=True)

    def spawn_notify(
        self, session: Session, method: str, params: Any, *, unless_announced_elsewhere: bool = False
    ) -> None:
        only_if_adopted = unless_announced_elsewhere and not announces(session)
        notify = _notify_if_adopted if only_if_adopted else _notify
        try:
            session.spawn(notify, session, method, params, name=method)
        except ConnectionClosed:  # (not running yet, or ended: nobody to tell)
            pass


def _record(session: Session) -> SharedRecord | None:
    channel = session.channel
    return channel.record if isinstance(channel, SharedSession) else None


async def _notify(session: Session, method: str, params: Any) -> None:
    try:
        await session.notify(method, params)
    except Exception as exc:  # the session may be closing
        log.debug("could not send %s: %s", method, exc)


async def _notify_if_adopted(session: Session, method: str, params: Any) -> None:
    try:
        if await adopted(session):
            await session.notify(method, params)
    except Exception as exc:  # the session may be closing
        log.debug("could not send %s: %s", method, exc)
