"""Request latency histograms, per method and per tool, for the Prometheus metrics.

:class:`LatencyHistogram` times every request it wraps and counts it in the bucket of its
duration, in a series per method (and, for ``tools/call``, per tool).
``serve_http(metrics_path=...)`` (``mcp-trio serve --metrics-path``) installs one, outermost,
unless the server has one already, and :func:`~mcp_trio.server.prometheus_text` lists its series
as ``mcp_request_duration_seconds`` (a Prometheus histogram: ``_bucket``, ``_sum``, ``_count``).

Rules:

* A request is timed from when it reaches the middleware until its answer is made, whatever
  its outcome (a result, an error, cancelled).
* The series are bounded: past ``max_series`` series, a new tool's requests count under
  ``tool="_other"`` (a client calling made-up tool names cannot grow the
  metrics without bound; unknown methods never reach a middleware).
* The cost per request is two clock reads, a binary search over the bucket bounds and two
  additions.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Sequence

from ._base import CallNext, RequestInfo, Result

__all__ = ["DEFAULT_BUCKETS", "OTHER", "LatencyHistogram", "Series", "series_lines"]

#: The upper bounds (seconds) of the buckets by default: 0.5 ms to 10 s (``+Inf`` is implied).
DEFAULT_BUCKETS: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
#: The tool label of the requests past ``max_series``.
OTHER = "_other"

#: One series: the count in each bucket (the last one ``+Inf``, not cumulative) and the sum
#: of the durations, in seconds.
Series = tuple[list[int], float]


class LatencyHistogram:
    """Times each request into a histogram per method and tool (see the module's rules).

    Args:
        buckets: The buckets' upper bounds in seconds, increasing (``+Inf`` is implied).
        max_series: The series kept at most.
        known: Whether a tool name is one of the server's; the others count as ``_other``
            (``serve_http`` passes the server's tools).  By default every name is its own series.
    """

    __slots__ = ("buckets", "max_series", "known", "_counts", "_sums")

    def __init__(
        self,
        buckets: Sequence[float] = DEFAULT_BUCKETS,
        *,
        max_series: int = 1000,
        known: Callable[[str], bool] | None = None,
    ) -> None:
        bounds = tuple(float(b) for b in buckets)
        if not bounds or any(b <= a for a, b in zip(bounds, bounds[1:], strict=False)) or bounds[0] <= 0:
            raise ValueError("buckets must be positive upper bounds, in increasing order")
        if max_series < 1:
            raise ValueError("max_series must be at least 1")
        self.buckets = bounds
        self.max_series = max_series
        self.known = known
        self._counts: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = {}

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        start = time.perf_counter()
        try:
            return await call_next(request)
        finally:
            self.observe(request.method, request.name, time.perf_counter() - start)

    def observe(self, method: str, tool: str | None, seconds: float) -> None:
        """Count one request of ``method`` (and ``tool``, for ``tools/call``) that took ``seconds``."""
        key = (method, (tool or "") if method == "tools/call" else "")
        counts = self._counts.get(key)
        if counts is None:
            if key[1] and (  # (methods are the handlers': bounded)
                len(self._counts) >= self.max_series or (self.known is not None and not self.known(key[1]))
            ):
                key = (method, OTHER)
                counts = self._counts.get(key)
            if counts is None:
                counts = self._counts[key] = [0] * (len(self.buckets) + 1)
                self._sums[key] = 0.0
        counts[bisect_left(self.buckets, seconds)] += 1
        self._sums[key] += seconds

    def series(self) -> dict[tuple[str, str], Series]:
        """A snapshot: (method, tool) -> the bucket counts (not cumulative) and the sum."""
        return {key: (list(counts), self._sums[key]) for key, counts in self._counts.items()}


def series_lines(name: str, labels: str, uppers: Sequence[str], series: Series) -> list[str]:
    """One labelled series of histogram ``name`` in Prometheus' text format: its buckets,
    cumulative (``uppers``: their bounds as written, ``+Inf`` last), its sum and its count."""
    counts, total = series
    lines = []
    cumulative = 0
    for upper, count in zip(uppers, counts, strict=True):
        cumulative += count
        lines.append(f'{name}_bucket{{{labels},le="{upper}"}} {cumulative}')
    lines.append(f"{name}_sum{{{labels}}} {total:.9g}")
    lines.append(f"{name}_count{{{labels}}} {cumulative}")
    return lines
