"""Load generator: what one run measured (calls, wall time, per-call latencies) and its statistics.

The rate is calls per second; percentiles are nearest-rank, in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Measurement:
    """What one run measured: completed calls, wall time, per-call latencies (seconds)."""

    calls: int
    elapsed: float
    latencies: list[float] = field(repr=False, default_factory=list)
    #: The server's CPU seconds per call, when measured (``http_calls(server_pid=...)``, and
    #: every stdio load): its process's own, from ``/proc/<pid>/stat``.
    cpu_per_call: float | None = None
    #: The load generator's own CPU seconds per call (this process, ``time.process_time``):
    #: what the harness costs the machine for each call it makes.
    client_cpu_per_call: float | None = None
    #: The CPU seconds per call of a process the server relies on (``http_calls(store_pid=...)``).
    store_cpu_per_call: float | None = None

    @property
    def rate(self) -> float:
        """Calls per second."""
        return self.calls / self.elapsed if self.elapsed > 0 else 0.0

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (0..1) of the latencies, in milliseconds (nearest rank)."""
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
        return ordered[index] * 1000

    @property
    def p50(self) -> float:
        return self.percentile(0.50)

    @property
    def p99(self) -> float:
        return self.percentile(0.99)

    def summary(self) -> dict[str, float]:
        return {"rate": self.rate, "p50_ms": self.p50, "p99_ms": self.p99, "calls": self.calls}
