"""Server-wide statistics, the session log lines and the Prometheus text.

:class:`ServerStatistics` (``Server.statistics()``), the lines a session logs
for operators, and :func:`prometheus_text`, the statistics in Prometheus's
text exposition format.

Each session adds its requests to its server's counts for its transport as
they go (a :class:`RequestTally`: a few integer additions per request), so a
scrape of the metrics costs the same however many sessions are open.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import astuple, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import trio

from .._engine._common import RequestTally
from .._engine._common import log as _engine_log
from .._engine._session import Session
from ..middleware._latency import LatencyHistogram, Series, series_lines
from ..transports._base import ChannelTraits

if TYPE_CHECKING:
    from ._server import Server
    from ._shared_stats import SharedStatistics

__all__ = ["MetricSource", "ServerStatistics", "TransportStatistics", "add_metrics", "prometheus_text"]

log = logging.getLogger("mcp_trio.server")

#: The transport of a session, by the module of its channel's class.
_TRANSPORTS = {
    "mcp_trio.transports.stdio": "stdio",
    "mcp_trio.transports.memory": "memory",
    "mcp_trio.transports.http.server._streams": "http",
    "mcp_trio.transports.http.legacy_sse": "sse",
}


def _transport(channel: object) -> str:
    named = channel.counted_as if isinstance(channel, ChannelTraits) else None
    if named is not None:
        return named
    module = type(channel).__module__
    name = _TRANSPORTS.get(module)
    if name is None:
        name = "websocket" if module.startswith("mcp_trio.transports.websocket") else "other"
    return name


@dataclass(frozen=True)
class TransportStatistics:
    """Counts of sessions and of the requests they received.

    Attributes:
        sessions_open: Sessions open now.
        sessions_total: Sessions opened since the server started (a
            2026-07-28 HTTP request without a session is a session of its own).
        requests_in_flight: Requests of the peers being handled now.
        requests_ok: Requests answered with a result (a tool's ``isError``
            result included: it is a result).
        requests_error: Requests answered with a JSON-RPC error (refusals for
            lack of room included).
        requests_cancelled: Requests left unanswered: cancelled by the
            client, or ended with their session.
    """

    sessions_open: int = 0
    sessions_total: int = 0
    requests_in_flight: int = 0
    requests_ok: int = 0
    requests_error: int = 0
    requests_cancelled: int = 0


@dataclass(frozen=True)
class ServerStatistics(TransportStatistics):
    """:class:`TransportStatistics` of the whole server (see
    :meth:`Server.statistics <mcp_trio.server.Server.statistics>`), and of
    each transport that has had a session (``stdio``, ``http``, ``sse``, the
    2024-11-05 HTTP+SSE one, ``websocket``, ``memory``, ``other``)."""

    by_transport: Mapping[str, TransportStatistics] = field(default_factory=lambda: MappingProxyType({}))


@runtime_checkable
class MetricSource(Protocol):
    """Metrics of its own that a server's metrics list (``Server.add_metrics``)."""

    def prometheus_lines(self) -> list[str]:
        """Its families in the Prometheus text exposition format (0.0.4): ``# HELP`` and
        ``# TYPE`` lines, then the samples, one a line, without a final newline."""
        ...


class _Totals:
    """The counts of a server's sessions and their requests, one :class:`RequestTally` per
    transport that every session of that transport adds to as it goes (so that
    :meth:`statistics` costs the same for ten sessions or ten thousand), and when each open
    session began (for its log line)."""

    def __init__(self) -> None:
        self.tallies: dict[str, RequestTally] = {}
        self.open: dict[Session, tuple[str, float]] = {}
        #: With a store: every worker's statistics, for the metrics (see ``_shared_stats``).
        self.shared: SharedStatistics | None = None
        #: The request latencies, once the metrics are served (see ``serve_http``).
        self.latency: LatencyHistogram | None = None
        #: More metrics, listed after the server's own (``Server.add_metrics``).
        self.sources: list[MetricSource] = []

    def opened(self, session: Session, channel: object) -> None:
        transport = _transport(channel)
        tally = self.tallies.get(transport)
        if tally is None:
            tally = self.tallies[transport] = RequestTally()
        session.tally.into = tally
        tally.sessions_open += 1
        tally.sessions_total += 1
        self.open[session] = (transport, trio.current_time())
        if _engine_log.isEnabledFor(logging.DEBUG):
            session.log_requests = True
        if log.isEnabledFor(logging.DEBUG):
            peer = channel.client if isinstance(channel, ChannelTraits) else None
            log.debug("session opened: transport %s, peer %s", transport, peer or "-")

    def closed(self, session: Session) -> None:
        found = self.open.pop(session, None)
        if found is None:
            return
        transport, began = found
        self.tallies[transport].sessions_open -= 1
        if log.isEnabledFor(logging.DEBUG):
            ok, error, cancelled = session.request_totals()
            log.debug(
                "session closed after %.3f s: %d requests (%d ok, %d errors, %d cancelled)",
                trio.current_time() - began,
                ok + error + cancelled,
                ok,
                error,
                cancelled,
            )

    def statistics(self) -> ServerStatistics:
        by_transport = {
            transport: TransportStatistics(
                t.sessions_open,
                t.sessions_total,
                t.running,
                t.done - t.error - t.cancelled,
                t.error,
                t.cancelled,
            )
            for transport, t in sorted(self.tallies.items())
        }
        rows = [astuple(t) for t in by_transport.values()]
        s = [sum(column) for column in zip(*rows, strict=True)] if rows else [0] * 6
        return ServerStatistics(
            s[0], s[1], s[2], s[3], s[4], s[5], by_transport=MappingProxyType(by_transport)
        )


#: (name, type, help, the TransportStatistics field, its ``outcome`` label)
_METRICS = (
    ("mcp_sessions_open", "gauge", "MCP sessions open now.", (("sessions_open", None),)),
    ("mcp_sessions_total", "counter", "MCP sessions opened.", (("sessions_total", None),)),
    ("mcp_requests_in_flight", "gauge", "MCP requests being handled now.", (("requests_in_flight", None),)),
    (
        "mcp_requests_total",
        "counter",
        "MCP requests finished, by outcome (ok: a result, error: a JSON-RPC error, cancelled: no answer).",
        (("requests_ok", "ok"), ("requests_error", "error"), ("requests_cancelled", "cancelled")),
    ),
)


@functools.cache
def _process_start() -> float:
    """When this process started (seconds since the epoch), from /proc: read once."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    stat = Path("/proc/stat").read_text().splitlines()
    boot = next(int(line.split()[1]) for line in stat if line.startswith("btime"))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def _process_metrics() -> list[tuple[str, str, str, float]]:
    """The process's own metrics under the names Prometheus clients use (Linux: from /proc;
    elsewhere those it cannot read are left out)."""
    found: list[tuple[str, str, str, float]] = []
    try:
        import resource
    except ImportError:  # (not on a Unix)
        return found
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime
    found.append(("process_cpu_seconds_total", "counter", "CPU time of the process, in seconds.", cpu))
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        rss = pages * os.sysconf("SC_PAGE_SIZE")
        found.append(("process_resident_memory_bytes", "gauge", "Resident memory, in bytes.", rss))
        fds = len(os.listdir("/proc/self/fd"))
        found.append(("process_open_fds", "gauge", "Open file descriptors.", fds))
        start = _process_start()
        found.append(
            (
                "process_start_time_seconds",
                "gauge",
                "Start of the process, in seconds since the epoch.",
                start,
            )
        )
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY:
        found.append(("process_max_fds", "gauge", "The most file descriptors the process may open.", soft))
    return found


def add_metrics(server: Server, source: MetricSource) -> None:
    """List ``source``'s metrics after ``server``'s own in :func:`prometheus_text` (what
    ``serve_http(metrics_path=...)`` serves): a proxy's validation findings, or a family of
    your own.  Under ``--workers`` each worker lists its own source's samples."""
    if not isinstance(source, MetricSource):
        raise TypeError(f"add_metrics() takes an object with prometheus_lines(), not {type(source).__name__}")
    server._totals.sources.append(source)


def prometheus_text(server: Server) -> str:
    """``server.statistics()`` in the Prometheus text exposition format (0.0.4).

    Every metric is labelled with its ``transport`` (one sample per
    transport that has had a session; none before the first session):

    * ``mcp_sessions_open`` (gauge), ``mcp_sessions_total`` (counter),
    * ``mcp_requests_in_flight`` (gauge),
    * ``mcp_requests_total`` (counter), also labelled with its ``outcome``:
      ``ok``, ``error`` or ``cancelled``;
    * once the metrics are served (``serve_http(metrics_path=...)``),
      ``mcp_request_duration_seconds`` (histogram), labelled with its ``method``
      and ``tool`` (for ``tools/call``; else empty) instead of the transport
      (see :class:`~mcp_trio.middleware.LatencyHistogram`);

    and the process's own, unlabelled (with a store: labelled with this
    worker): ``process_cpu_seconds_total``, ``process_resident_memory_bytes``,
    ``process_open_fds``, ``process_max_fds``, ``process_start_time_seconds``.

    A server sharing its sessions with other workers through a store
    (``serve_http(store=...)``, ``mcp-trio serve --workers``) lists every
    worker's samples, each also labelled with its ``worker`` (see
    :mod:`mcp_trio.server._shared_stats`), whichever worker is scraped.

    Serve it with ``serve_http(metrics_path="/metrics")`` (the content type
    is ``text/plain; version=0.0.4``), or from a route of your own.
    """
    shared = server._totals.shared
    by_worker: Sequence[tuple[str | None, Mapping[str, TransportStatistics]]] = (
        [(None, server.statistics().by_transport)] if shared is None else list(shared.by_worker().items())
    )
    lines: list[str] = []
    for name, kind, text, value in _process_metrics():
        where = "" if shared is None else f'{{worker="{shared.worker}"}}'
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}", f"{name}{where} {value:.17g}"]
    for name, kind, text, fields in _METRICS:
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for worker, stats in by_worker:
            where = "" if worker is None else f',worker="{worker}"'
            for transport, counts in stats.items():
                for attribute, outcome in fields:
                    labels = f'transport="{transport}"{where}' + (f',outcome="{outcome}"' if outcome else "")
                    lines.append(f"{name}{{{labels}}} {getattr(counts, attribute)}")
    latency = server._totals.latency
    if latency is not None:
        histograms: Mapping[str | None, tuple[Sequence[float], Mapping[tuple[str, str], Series]]]
        if shared is None:
            histograms = {None: (latency.buckets, latency.series())}
        else:
            histograms = shared.latency_by_worker(worker for worker, _ in by_worker if worker is not None)
        lines += _histogram_lines(histograms)
    for source in server._totals.sources:
        lines += source.prometheus_lines()
    return "\n".join(lines) + "\n"


_LATENCY = "mcp_request_duration_seconds"


def _histogram_lines(
    by_worker: Mapping[str | None, tuple[Sequence[float], Mapping[tuple[str, str], Series]]],
) -> list[str]:
    """``mcp_request_duration_seconds``, a histogram per method and tool (and worker)."""
    lines = [
        f"# HELP {_LATENCY} Time to answer MCP requests, by method (and tool, for tools/call).",
        f"# TYPE {_LATENCY} histogram",
    ]
    for worker, (bounds, series) in by_worker.items():
        where = "" if worker is None else f',worker="{_escape(worker)}"'
        uppers = [f"{b:g}" for b in bounds] + ["+Inf"]
        for (method, tool), one in sorted(series.items()):
            labels = f'method="{_escape(method)}",tool="{_escape(tool)}"{where}'
            lines += series_lines(_LATENCY, labels, uppers, one)
    return lines


def _escape(value: str) -> str:
    """A label value escaped as the exposition format wants (backslash, quote, newline)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
