"""The metrics of a proxy's upstream sessions: what it forwarded, how it went, how long it took,
and whether each session is up (a gateway's: one set per backend, labelled with its prefix as
``backend``), listed with the server's own metrics (``serve_http(metrics_path=...)``,
``mcp-trio serve --metrics-path``).

Families (docs/guide/composition.md, "Metrics"):

* ``mcp_upstream_requests_total`` (counter), by ``method`` and ``outcome``: ``ok`` (a result),
  ``error`` (the upstream's JSON-RPC error, passed on), ``unavailable`` (no session within the
  wait), ``lost`` (the session ended while it was in flight), ``timeout``, ``invalid`` (an
  answer that was not valid) or ``cancelled`` (by the client);
* ``mcp_upstream_request_duration_seconds`` (histogram), by ``method``: from the request's
  forwarding to its answer, whatever the outcome;
* ``mcp_upstream_up`` (gauge), by ``revision`` (one upstream session per revision offered):
  1 while connected, 0 while being opened again;
* ``mcp_upstream_reconnections_total`` (counter), by ``revision``: sessions opened again after a loss;
* ``mcp_upstream_notifications_dropped_total`` (counter): upstream notifications dropped because
  the relay queue was full;
* ``mcp_upstream_relayed_total`` (counter), a proxy's only: of its requests, those its stdio
  relay passed on without its sessions (docs/guide/composition.md, "The stdio relay").

The ``method`` label takes only the methods a proxy forwards (bounded).  Served with a store
(``--workers``), each worker lists its own samples, labelled with its ``worker``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from ..middleware._latency import LatencyHistogram, series_lines

if TYPE_CHECKING:
    from ._forwarding import Forwarding

__all__ = ["ForwardingTally", "UpstreamMetrics"]

_REQUESTS = "mcp_upstream_requests_total"
_DURATION = "mcp_upstream_request_duration_seconds"


class ForwardingTally:
    """What one forwarding counts of its requests: by (method, outcome), and their durations.
    Counted in trio (:meth:`count`), or in another thread (:meth:`later`: kept aside, and
    counted at the next :meth:`fold`)."""

    __slots__ = ("_requests", "_latency", "_later")

    def __init__(self) -> None:
        self._requests: Counter[tuple[str, str]] = Counter()
        self._latency = LatencyHistogram()
        self._later: deque[tuple[str, str, float]] = deque()

    def count(self, method: str, outcome: str, seconds: float) -> None:
        self._requests[(method, outcome)] += 1
        self._latency.observe(method, None, seconds)

    def later(self, method: str, outcome: str, seconds: float) -> None:
        """:meth:`count`, from any thread."""
        self._later.append((method, outcome, seconds))

    def fold(self) -> None:
        """Count what :meth:`later` kept aside (in trio)."""
        later = self._later
        while later:
            self.count(*later.popleft())

    @property
    def requests(self) -> Counter[tuple[str, str]]:
        """Requests by (method, outcome)."""
        self.fold()
        return self._requests

    @property
    def latency(self) -> LatencyHistogram:
        """Their durations, by method."""
        self.fold()
        return self._latency


class UpstreamMetrics:
    """The metrics of forwardings (by backend; None: a proxy's own), as a
    :class:`~mcp_trio.server.MetricSource`; ``worker`` names this worker (None: no store)."""

    def __init__(
        self, forwardings: Mapping[str | None, Forwarding], worker: Callable[[], str | None]
    ) -> None:
        self._forwardings = dict(forwardings)
        self._worker = worker

    def prometheus_lines(self) -> list[str]:
        worker = self._worker()
        rows = [
            (
                ("" if backend is None else f'backend="{backend}",')
                + ("" if worker is None else f'worker="{worker}",'),
                f,
            )
            for backend, f in self._forwardings.items()
        ]
        lines = [
            f"# HELP {_REQUESTS} Requests a proxy forwarded upstream, by method and outcome.",
            f"# TYPE {_REQUESTS} counter",
        ]
        for where, forwarding in rows:
            for (method, outcome), count in sorted(forwarding.tally.requests.items()):
                lines.append(f'{_REQUESTS}{{{where}method="{method}",outcome="{outcome}"}} {count}')
        lines += [
            f"# HELP {_DURATION} Time from forwarding a request upstream to its answer, by method.",
            f"# TYPE {_DURATION} histogram",
        ]
        for where, forwarding in rows:
            latency = forwarding.tally.latency
            uppers = [f"{b:g}" for b in latency.buckets] + ["+Inf"]
            for (method, _), series in sorted(latency.series().items()):
                lines += series_lines(_DURATION, f'{where}method="{method}"', uppers, series)
        families = (
            ("mcp_upstream_up", "gauge", "Whether the upstream session is connected (1) or not (0)."),
            ("mcp_upstream_reconnections_total", "counter", "Upstream sessions opened again after a loss."),
        )
        for name, kind, text in families:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
            for where, forwarding in rows:
                for upstream in forwarding.upstreams.all():
                    value = (
                        int(upstream.current() is not None)
                        if kind == "gauge"
                        else max(0, upstream.connections - 1)
                    )
                    lines.append(f'{name}{{{where}revision="{upstream.version}"}} {value}')
        dropped = "mcp_upstream_notifications_dropped_total"
        lines += [
            f"# HELP {dropped} Upstream notifications dropped: the relay queue was full.",
            f"# TYPE {dropped} counter",
        ]
        for where, forwarding in rows:
            total = sum(upstream.dropped for upstream in forwarding.upstreams.all())
            lines.append(f"{dropped}{{{where.rstrip(',')}}} {total}" if where else f"{dropped} {total}")
        relays = [(where, f.relay) for where, f in rows if f.relay is not None]
        if relays:
            relayed = "mcp_upstream_relayed_total"
            lines += [
                f"# HELP {relayed} Requests a proxy served over stdio passed on through its stdio relay.",
                f"# TYPE {relayed} counter",
            ]
            for where, relay in relays:
                label = f"{{{where.rstrip(',')}}}" if where else ""
                lines.append(f"{relayed}{label} {relay.relayed}")
        return lines
