"""The peer's requests that wait for a handler slot: a session's queue, and the budget its
queue draws on with every other session's.

Rules:

* A session's queue holds up to ``max_queued`` requests, in arrival order.
* Every request waiting in a queue counts against the :class:`QueueBudget` its session draws
  on; a session queues no more while that count is at its ``max_queued_total``.  A
  :class:`~mcp_trio.server.Server` gives its own budget to every session it serves; a session
  given none draws on :data:`SHARED_BUDGET` with every other such session of the process.
* What leaves a queue, taken or dropped, gives its place in the budget back at once.
"""

from __future__ import annotations

from collections import deque

from .._core import RequestReceived
from ..transports._base import HostedSession

__all__ = ["DEFAULT_MAX_QUEUED_TOTAL", "SHARED_BUDGET", "QueueBudget", "RequestQueue", "queue_bounds"]

DEFAULT_MAX_QUEUED_TOTAL = 16_384


class QueueBudget:
    """The requests waiting for a handler slot in every session that draws on it: what
    ``max_queued_total`` bounds.  A :class:`~mcp_trio.server.Server` gives its own to each
    session it serves (``Server(queue_budget=...)`` to share one between servers); a session
    given none draws on :data:`SHARED_BUDGET` with every other such session of the process."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0  #: requests waiting now


#: The budget of the sessions made without one (``queue_budget=None``).
SHARED_BUDGET = QueueBudget()


def queue_bounds(
    channel: object, max_in_flight: int, max_queued: int | None, max_queued_total: int | None
) -> tuple[int, int]:
    """A session's ``max_queued`` and ``max_queued_total``: as given, else the
    channel's (a transport's own defaults, Streamable HTTP's), else
    ``max_in_flight`` and ``DEFAULT_MAX_QUEUED_TOTAL``."""
    if isinstance(channel, HostedSession):  # (the endpoint's own defaults)
        if max_queued is None:
            max_queued = channel.max_queued
        if max_queued_total is None:
            max_queued_total = channel.max_queued_total
    if max_queued is not None and max_queued < 0:
        raise ValueError("max_queued must not be negative")
    if max_queued_total is not None and max_queued_total < 0:
        raise ValueError("max_queued_total must not be negative")
    return (
        max_in_flight if max_queued is None else max_queued,
        DEFAULT_MAX_QUEUED_TOTAL if max_queued_total is None else max_queued_total,
    )


class RequestQueue:
    """One session's requests waiting for a slot (see the module's rules)."""

    __slots__ = ("limit", "total", "budget", "waiting")

    def __init__(self, limit: int, total: int, budget: QueueBudget | None = None) -> None:
        self.limit = limit  # max_queued
        self.total = total  # max_queued_total
        self.budget = SHARED_BUDGET if budget is None else budget
        #: The requests, oldest first: a deque from the first one (the hot paths test its truth
        #: directly, not through a method of this class).
        self.waiting: deque[RequestReceived] | tuple[()] = ()

    def __len__(self) -> int:
        return len(self.waiting)

    def full(self) -> str | None:
        """Why one more request cannot wait here now (the bound it meets), or ``None``."""
        if len(self.waiting) >= self.limit:
            return f"Server busy: the session's queue is full (max_queued={self.limit}); retry later"
        if self.budget.count >= self.total:
            return f"Server busy: the server's queue is full (max_queued_total={self.total}); retry later"
        return None

    def push(self, event: RequestReceived) -> None:
        waiting = self.waiting
        if not isinstance(waiting, deque):
            waiting = self.waiting = deque()
        waiting.append(event)
        self.budget.count += 1

    def pop(self) -> RequestReceived:
        """The request that has waited longest (the queue is not empty)."""
        self.budget.count -= 1
        return self.waiting.popleft()  # type: ignore[union-attr]

    def drop(self) -> None:
        """The session stops: what waits here is never started."""
        self.budget.count -= len(self.waiting)
        self.waiting = ()
