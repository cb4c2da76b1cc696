"""The statistics of every worker serving a server through one store, for its metrics.

Under ``mcp-trio serve --workers`` (or any ``serve_http(store=...)``), each scrape of the
metrics lands on one worker, which knew only its own counts: a scrape read a random worker's,
and Prometheus saw counters go back and forth (resets).  So each worker publishes its counts on
the store's bus every ``PUBLISH_EVERY`` seconds and keeps the latest it heard from each other
worker; the metrics then list every worker heard from within ``STALE_AFTER`` seconds, each
sample labelled with its ``worker`` (sum them in the query: ``sum(mcp_requests_total)``).  A
worker that stopped drops out of the list after ``STALE_AFTER``, as a stopped process's own
metrics would.  Nothing here runs per request: a publication is one small message a second.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import astuple

import msgspec
import trio

from ..middleware._latency import LatencyHistogram, Series
from ..store import Store, StoreError
from ..transports.http._bus import listen
from ._stats import ServerStatistics, TransportStatistics

__all__ = ["PUBLISH_EVERY", "STALE_AFTER", "SharedStatistics"]

log = logging.getLogger("mcp_trio.server")

_CHANNEL = "mcp-trio:statistics"
PUBLISH_EVERY = 1.0  # seconds between two publications of a worker's counts
STALE_AFTER = 5.0  # seconds after which a worker not heard from is left out
_MAX_WORKERS = 1024  # workers remembered at most (the longest silent forgotten first)
_MAX_SERIES = 10_000  # latency series taken from one worker at most

_Row = tuple[int, int, int, int, int, int]


class _Counts(msgspec.Struct):
    worker: str
    by_transport: dict[str, _Row]
    #: The latency histogram's bucket bounds and series (method, tool, counts, sum), if any.
    buckets: list[float] = []
    latency: list[tuple[str, str, list[int], float]] = []


#: A worker's latency histogram: its bucket bounds and its series.
Histogram = tuple[Sequence[float], Mapping[tuple[str, str], Series]]


_decode = msgspec.json.Decoder(_Counts).decode


def _valid(worker: str) -> bool:
    return 0 < len(worker) <= 64 and all(c.isalnum() or c in "-_" for c in worker)


class SharedStatistics:
    """One worker's side: publishes ``statistics()`` as ``worker`` on ``store``'s bus, and keeps
    what the other workers publish (see the module doc)."""

    def __init__(
        self,
        store: Store,
        worker: str,
        statistics: Callable[[], ServerStatistics],
        latency: Callable[[], LatencyHistogram | None] = lambda: None,
    ) -> None:
        self.store = store
        self.worker = worker
        self.statistics = statistics
        self.latency = latency
        self._heard: dict[str, tuple[float, Mapping[str, TransportStatistics]]] = {}
        self._heard_latency: dict[str, Histogram] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Publish and listen until cancelled."""
        async with trio.open_nursery() as nursery:
            who = f"the statistics of {self.worker}"
            await nursery.start(listen, self.store, (_CHANNEL,), self._take, who)
            nursery.start_soon(self._publish)
            task_status.started()

    async def _publish(self) -> None:
        while True:
            rows = {transport: astuple(s) for transport, s in self.statistics().by_transport.items()}
            counts = _Counts(self.worker, rows)
            histogram = self.latency()
            if histogram is not None:
                counts.buckets = list(histogram.buckets)
                counts.latency = [(m, t, c, total) for (m, t), (c, total) in histogram.series().items()]
            try:
                await self.store.bus.publish(_CHANNEL, msgspec.json.encode(counts))
            except StoreError as exc:
                log.debug("the statistics of %s were not published: %s", self.worker, exc)
            await trio.sleep(PUBLISH_EVERY)

    async def _take(self, data: bytes) -> None:
        try:
            counts = _decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        worker = counts.worker
        if worker == self.worker or not _valid(worker) or not all(map(_valid, counts.by_transport)):
            return
        heard = self._heard
        heard.pop(worker, None)  # (to the end: the latest heard)
        if len(heard) >= _MAX_WORKERS:
            gone = next(iter(heard))
            del heard[gone]
            self._heard_latency.pop(gone, None)
        rows = {t: TransportStatistics(*row) for t, row in sorted(counts.by_transport.items())}
        heard[worker] = (trio.current_time(), rows)
        width = len(counts.buckets) + 1
        if 0 < len(counts.latency) <= _MAX_SERIES and all(len(c) == width for _, _, c, _ in counts.latency):
            series = {(m, t): (c, total) for m, t, c, total in counts.latency}
            self._heard_latency[worker] = (counts.buckets, series)
        else:
            self._heard_latency.pop(worker, None)

    def by_worker(self) -> dict[str, Mapping[str, TransportStatistics]]:
        """Each worker's statistics by transport: this one's now, the others' as last heard
        (those heard from within ``STALE_AFTER`` seconds), by worker id."""
        now = trio.current_time()
        found: dict[str, Mapping[str, TransportStatistics]] = {self.worker: self.statistics().by_transport}
        for worker, (when, rows) in list(self._heard.items()):
            if now - when <= STALE_AFTER:
                found[worker] = rows
            elif now - when > 10 * STALE_AFTER:
                del self._heard[worker]  # (long gone)
                self._heard_latency.pop(worker, None)
        return dict(sorted(found.items()))

    def latency_by_worker(self, workers: Iterable[str]) -> dict[str | None, Histogram]:
        """The latency histogram of each of ``workers`` (those :meth:`by_worker` listed) that has one."""
        found: dict[str | None, Histogram] = {}
        for worker in workers:
            if worker == self.worker:
                mine = self.latency()
                if mine is not None:
                    found[worker] = (mine.buckets, mine.series())
            elif worker in self._heard_latency:
                found[worker] = self._heard_latency[worker]
        return found
