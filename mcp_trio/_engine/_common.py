"""What the engine's modules share: the ``mcp_trio`` logger, the default-timeout
marker, the reason and wording of a session's end, the request counts, the unwrapping of
one-member exception groups, background work (``Session.spawn``: logged, never ending the
session) and what a server's transport settles about a session's era
before it starts."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import trio

from .._exceptions import McpError
from ..transports._base import ChannelTraits, HostedSession, SharedSession

log = logging.getLogger("mcp_trio")

_DEFAULT = object()  # "the session's default_timeout"


class Ending:
    """Why a session ended, or will: what its calls say once it has (shared by the session and
    its collaborators, which each may learn the cause: the writer a broken pipe, the reader the
    end of the input)."""

    __slots__ = ("reason",)

    def __init__(self) -> None:
        self.reason = "the session was closed"


class RequestTally:
    """Counts of requests: a session's own, added as well to ``into`` (its server's for its
    transport, shared by every session of that transport) as they go, so that reading the
    server's costs the same for ten sessions or ten thousand (a scrape never walks them)."""

    __slots__ = ("sessions_open", "sessions_total", "running", "done", "error", "cancelled", "into")

    def __init__(self) -> None:
        self.sessions_open = self.sessions_total = 0  # (a server's tally only)
        self.running = 0  # requests being handled now (from the moment a slot is taken)
        self.done = 0  # requests finished: answered with a result or an error, or cancelled
        self.error = 0
        self.cancelled = 0
        self.into: RequestTally | None = None

    def count_start(self) -> None:
        self.running += 1
        if self.into is not None:
            self.into.running += 1

    def count_unstarted(self) -> None:
        """A request given a slot that never started (its session stopped): not running, not done."""
        self.running -= 1
        if self.into is not None:
            self.into.running -= 1

    def count_end(self) -> None:
        self.running -= 1
        self.done += 1
        if self.into is not None:
            self.into.running -= 1
            self.into.done += 1

    def count_error(self, refused: bool = False) -> None:
        """One more answered with an error (``refused``: one that never started, now done)."""
        for tally in (self, self.into):
            if tally is not None:
                tally.error += 1
                tally.done += refused

    def count_cancelled(self) -> None:
        for tally in (self, self.into):
            if tally is not None:
                tally.cancelled += 1

    def count_relayed(self, begun: int, done: int, error: int, cancelled: int) -> None:
        """Requests a proxy's stdio relay handled for this session, counted as its own in the
        statistics: ``begun`` more, ``done`` of them finished, ``error`` and ``cancelled`` of
        those.  Those in flight are the server's (``into``) only: the session's own ``running``
        admits its requests (``max_in_flight``), and the relay bounds its calls apart."""
        into = self.into
        if into is not None:
            into.running += begun - done
        for tally in (self, into):
            if tally is not None:
                tally.done += done
                tally.error += error
                tally.cancelled += cancelled


def _ended(what: str, channel: object) -> str:
    """``what`` happened, with the transport's own account (``end_reason``) when it has one,
    such as a WebSocket close code."""
    reason = channel.end_reason if isinstance(channel, ChannelTraits) else None
    return f"{what} ({reason})" if reason else what


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside (nested) one-member groups, else the group."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _settle_era(core: Any, channel: object) -> bool:
    """Server: what the transport knows of the session before it starts.  A
    session of a transport without sessions (stateless Streamable HTTP,
    ``assumed_version``) or one another process initialized (shared through a
    store, ``restored``) needs no handshake: True, it is initialized.  A
    transport that saw a stateless version in the headers (``expect_modern``)
    makes every request a stateless one; ``request_id_prefix`` prefixes the
    ids of the server's requests."""
    settled = False
    if isinstance(channel, HostedSession):
        if channel.assumed_version is not None:
            core.assume_initialized(channel.assumed_version)
            settled = True
        if channel.expect_modern and core.modern_versions:  # (a server of older revisions
            core.expect_modern()  # only answers such a request as one of them would)
    if isinstance(channel, SharedSession):
        restored = channel.restored
        if restored is not None:
            core.restore(
                restored.version,
                peer_info=restored.client_info,
                peer_capabilities=restored.client_capabilities,
            )
            settled = True
        if channel.request_id_prefix is not None:
            # our request ids, unique among the processes serving the session
            core.id_prefix = channel.request_id_prefix
    return settled


def failures(exc: BaseException) -> list[BaseException]:
    """The exceptions ``exc`` stands for: itself, or the leaves of an exception group (what the
    tasks of a handler's nursery raised), each once."""
    if not isinstance(exc, BaseExceptionGroup):
        return [exc]
    leaves: list[BaseException] = []
    for inner in exc.exceptions:
        leaves.extend(leaf for leaf in failures(inner) if leaf not in leaves)
    return leaves


def refusal(exc: BaseException) -> McpError | None:
    """The one refusal (an :class:`McpError`) that ``exc`` stands for, when every failure in it
    is an :class:`McpError` of one code (the tasks of a handler that each asked for what the
    client lacks); else None."""
    refusals = [leaf for leaf in failures(exc) if isinstance(leaf, McpError)]
    if len(refusals) == len(failures(exc)) and len({leaf.code for leaf in refusals}) == 1:
        return refusals[0]
    return None


def spawn_guarded(
    nursery: trio.Nursery, async_fn: Callable[..., Awaitable[Any]], args: Sequence[Any], name: str | None
) -> bool:
    """Start ``async_fn(*args)`` in ``nursery``, its exceptions logged; False: the nursery is
    cancelled or closing (nothing was started)."""
    if nursery.cancel_scope.cancel_called:
        return False

    async def guarded() -> None:
        try:
            await async_fn(*args)
        except Exception:
            log.exception("background task %s failed", name or getattr(async_fn, "__name__", async_fn))

    try:
        nursery.start_soon(guarded, name=name or getattr(async_fn, "__qualname__", None))
    except RuntimeError:  # the nursery is closing
        return False
    return True
