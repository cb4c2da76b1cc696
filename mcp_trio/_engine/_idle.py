"""The sessions' idle handler tasks, and their expiry.

A session keeps the task that handled its last request, waiting for the next
one (see ``HandlerRunner._linger``), so requests that come one after another
cost no new task.  The engine ends such a task once it has waited through two sweeps of
:class:`IdleSweep` (2 to 4 seconds apart by default): a session gone quiet
holds no task.  One sweep runs per trio run, as a system task that exists
only while some session waits, so nothing outlives the run and an idle
process wakes for nothing.
"""

from __future__ import annotations

from typing import Protocol

import trio

#: Seconds between sweeps: an idle handler task ends after one to two of them.
SWEEP_EVERY = 2.0


class Lingering(Protocol):
    """A session's request runner whose handler task may wait for the next request (``HandlerRunner``)."""

    def sweep_idle_handler(self) -> bool:
        """End the idle handler task if it has waited since the previous sweep;
        False: no idle handler task now (no longer to be swept)."""
        ...


class IdleSweep:
    """The sessions of one trio run whose handler task waits for the next request."""

    __slots__ = ("sessions", "_running")

    def __init__(self) -> None:
        self.sessions: set[Lingering] = set()
        self._running = False

    def add(self, session: Lingering) -> None:
        self.sessions.add(session)
        if not self._running:
            self._running = True
            trio.lowlevel.spawn_system_task(self._sweep, name="mcp_trio: idle handler sweep")

    def discard(self, session: Lingering) -> None:
        self.sessions.discard(session)

    async def _sweep(self) -> None:
        try:
            while self.sessions:
                await trio.sleep(SWEEP_EVERY)
                self._sweep_once()
        finally:
            self._running = False

    def _sweep_once(self) -> None:
        # (a method of its own: a loop variable left in _sweep's frame would keep the
        # last session swept, and all it holds, alive while the sweep waits, after its end)
        for session in list(self.sessions):
            if not session.sweep_idle_handler():
                self.sessions.discard(session)


_SWEEP: trio.lowlevel.RunVar[IdleSweep] = trio.lowlevel.RunVar("mcp_trio_idle_sweep")


def idle_sweep() -> IdleSweep:
    """This trio run's :class:`IdleSweep`."""
    try:
        return _SWEEP.get()
    except LookupError:
        sweep = IdleSweep()
        _SWEEP.set(sweep)
        return sweep
