"""What worker processes and the shared session store give: echo calls/s at 64 clients, side by side.

Run from the project root::

    python -m benchmarks.bench_workers                  # the configurations below, 5 s each
    python -m benchmarks.bench_workers --workers 1,2,4 --duration 10 --rounds 3 --json
    python -m benchmarks.bench_workers --stateless      # mcp-trio stateless instead of sessions

Every client opens its own MCP session (``initialize`` + ``notifications/initialized``) on its
own kept-alive connection, then calls ``echo`` back to back (:func:`benchmarks._load_http.http_calls`;
the kernel spreads the clients' connections over the workers sharing the port).  The
configurations, measured in the same run:

* ``memory-1``: ``mcp-trio serve benchmarks/echo_server.py --http 127.0.0.1:0``, one worker,
  sessions in its own memory (the base of the ratios);
* ``redis-N`` for each N of ``--workers``: ``... --workers N --store redis://...``, sessions in a
  Redis store (a ``redis-server`` the benchmark starts on a free loopback port, or
  ``--store-url``);
* ``sdk-N`` for each N (unless ``--no-sdk``): the official Python SDK's low-level server in its
  stateless mode (``stateless_http=True``, JSON answers) under ``uvicorn --workers N``
  (``benchmarks/peers/sdk_lowlevel.py http PORT --json --stateless --workers N``), the way that SDK
  scales out.

With ``--stateless``, mcp-trio's rows are ``stateless-N`` (``--stateless --workers N``, no store)
instead of ``memory-1`` and ``redis-N``.  Reported: each configuration's calls/s and its ratio to
the same server with one worker; the Redis store's cost against memory at one worker (calls/s,
and CPU per call of the server's processes and of redis-server, from ``/proc``); mcp-trio against
the SDK at each worker count.  ``--connections-per-session K`` calls each session over K
connections (``clients / K`` sessions), so its requests land on several workers.  With
``--rounds`` above 1 the configurations take turns and each keeps its
median.  The load generator is one more process on the same cores: on a 2-core machine it takes
one of them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks._load_http import free_port, http_calls, process_tree, wait_for_port
from benchmarks._load_http_client import HttpTarget
from benchmarks._load_messages import LoadError
from benchmarks._redis import RedisServer
from benchmarks._run_common import DEFAULT_VENV, HOST, REQUIREMENTS, ROOT, loadavg, median
from benchmarks._run_env import ensure_venv
from benchmarks._run_report import _x
from benchmarks._run_servers import _server_log, _stop

__all__ = ["Config", "configurations", "main", "measure"]


@dataclass(frozen=True)
class Config:
    """One server set-up measured: ``server`` is ``mcp-trio`` or ``sdk``; ``store`` is
    ``memory``, ``redis`` or ``none`` (stateless)."""

    server: str
    store: str
    workers: int

    @property
    def key(self) -> str:
        """``memory-1``, ``redis-N``, ``stateless-N`` (mcp-trio) or ``sdk-N``."""
        kind = "sdk" if self.server == "sdk" else "stateless" if self.store == "none" else self.store
        return f"{kind}-{self.workers}"

    @property
    def label(self) -> str:
        processes = f"{self.workers} worker{'s' if self.workers > 1 else ''}"
        if self.server == "sdk":
            return f"SDK stateless, uvicorn {processes}"
        store = {"memory": " (memory)", "redis": " --store redis", "none": " --stateless"}[self.store]
        return f"mcp-trio {processes}{store}"


def configurations(counts: list[int], *, stateless: bool = False, sdk: bool = True) -> list[Config]:
    """The configurations measured for the worker ``counts`` (1 always among them)."""
    counts = sorted(set(counts) | {1})
    if stateless:
        ours = [Config("mcp-trio", "none", n) for n in counts]
    else:
        ours = [Config("mcp-trio", "memory", 1)] + [Config("mcp-trio", "redis", n) for n in counts]
    return ours + ([Config("sdk", "none", n) for n in counts] if sdk else [])


@dataclass
class Served:
    """A running configuration: where it listens, and its processes (the first one and its
    workers)."""

    target: HttpTarget
    pids: list[int]


def _ours_argv(config: Config, store_url: str | None, front_door: str) -> list[str]:
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py"]
    argv += ["--http", f"{HOST}:0", "--workers", str(config.workers), "--front-door", front_door]
    # Every client connects from one address: the per-address session share is lifted.
    argv += ["--max-sessions-per-client", "1000000"]
    if config.store == "none":
        return argv + ["--stateless"]
    if config.store == "redis":
        assert store_url is not None
        return argv + ["--store", store_url]
    return argv


@contextmanager
def serving_ours(config: Config, store_url: str | None, front_door: str) -> Iterator[Served]:
    """``mcp-trio serve`` of the echo server as ``config`` says, until the block ends."""
    argv = _ours_argv(config, store_url, front_door)
    process = subprocess.Popen(argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()
    said: list[str] = []

    def drain() -> None:  # (all of it: a full pipe would stop the server)
        assert process.stderr is not None
        for raw in process.stderr:
            lines.put(raw.decode(errors="replace"))
        lines.put("")

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    try:
        deadline = time.monotonic() + 60
        while " at http://" not in (line := lines.get(timeout=max(0.0, deadline - time.monotonic()))):
            if not line:
                output = "".join(said[-5:]).strip()
                raise LoadError(f"{config.label} exited: code {process.wait()}: {output}")
            said.append(line)
        url = line.split(" at ")[1].split()[0]
        host_port = url.split("//", 1)[1].split("/", 1)[0]
        # (the supervisor announces once its workers serve)
        yield Served(HttpTarget(HOST, int(host_port.rsplit(":", 1)[1])), process_tree(process.pid))
    finally:
        _stop(process)  # (SIGTERM: the supervisor stops its workers)
        drainer.join(5)
        if process.stderr is not None:
            process.stderr.close()


@contextmanager
def serving_sdk(config: Config, python: str) -> Iterator[Served]:
    """The SDK's stateless server under uvicorn with ``config.workers`` workers."""
    port = free_port(HOST)
    argv = [python, "benchmarks/peers/sdk_lowlevel.py", "http", str(port), "--json", "--stateless"]
    argv += ["--workers", str(config.workers)]
    with _server_log(f"workers-{config.key}") as errlog:
        process = subprocess.Popen(
            argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=errlog, stderr=errlog
        )
        try:
            wait_for_port(HOST, port, 60, lambda: process.poll() is None)
            yield Served(HttpTarget(HOST, port), _workers_started(process, config.workers))
        finally:
            _stop(process)  # (SIGTERM: uvicorn stops its workers)


def _workers_started(process: subprocess.Popen[bytes], workers: int) -> list[int]:
    """The processes of uvicorn ``process`` once its ``workers`` have started (it listens before)."""
    deadline = time.monotonic() + 30
    while len(tree := process_tree(process.pid)) <= workers and workers > 1:
        if process.poll() is not None or time.monotonic() > deadline:
            raise LoadError(f"uvicorn did not start {workers} workers: {tree}")
        time.sleep(0.05)
    return tree


def pinned_sdk() -> str:
    """The SDK version ``benchmarks/requirements.txt`` pins."""
    for line in REQUIREMENTS.read_text().splitlines():
        if line.startswith("mcp=="):
            return line.split("==", 1)[1].strip()
    raise LookupError(f"{REQUIREMENTS} pins no mcp")


def sdk_python(explicit: str | None, venv: Path) -> str:
    """The Python that runs the SDK peer: ``explicit``, else this one when it has the pinned SDK
    and uvicorn, else the benchmark environment's (created as ``benchmarks.run`` does)."""
    if explicit:
        return explicit
    try:
        here = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        here = None
    if here == pinned_sdk() and importlib.util.find_spec("uvicorn") is not None:
        return sys.executable
    return str(ensure_venv(venv, label="bench_workers"))


@dataclass
class Setup:
    """What the configurations need: the Redis store's URL and server, the SDK's Python."""

    front_door: str = "h11"
    store_url: str | None = None
    store_pid: int | None = None
    sdk_python: str = sys.executable
    warmup: float = 0.5
    connections_per_session: int = 1


def measure(
    configs: list[Config], setup: Setup, *, duration: float, clients: int, rounds: int
) -> dict[str, dict[str, Any]]:
    """Each configuration's calls/s and CPU µs per call (medians over ``rounds``), by key."""
    runs: dict[str, list[Any]] = {c.key: [] for c in configs}
    for _ in range(rounds):
        for config in configs:
            with ExitStack() as stack:
                if config.server == "sdk":
                    served = stack.enter_context(serving_sdk(config, setup.sdk_python))
                else:
                    served = stack.enter_context(serving_ours(config, setup.store_url, setup.front_door))
                store_pid = setup.store_pid if config.store == "redis" else None
                runs[config.key].append(
                    http_calls(
                        served.target,
                        duration,
                        clients=clients,
                        warmup=setup.warmup,
                        server_pid=served.pids,
                        store_pid=store_pid,
                        connections_per_session=setup.connections_per_session,
                    )
                )

    def micro(values: list[float | None]) -> float | None:
        known = [v * 1e6 for v in values if v is not None]
        return median(known) if known else None

    return {
        c.key: {
            "label": c.label,
            "server": c.server,
            "store": c.store,
            "workers": c.workers,
            "rate": median([m.rate for m in runs[c.key]]),
            "cpu_us_per_call": micro([m.cpu_per_call for m in runs[c.key]]),
            "redis_cpu_us_per_call": micro([m.store_cpu_per_call for m in runs[c.key]]),
        }
        for c in configs
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _with_redis(row: dict[str, Any]) -> float | None:
    """CPU µs per call of the server and of its redis-server together."""
    server = row["cpu_us_per_call"]
    return None if server is None else server + (row["redis_cpu_us_per_call"] or 0.0)


def compare(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The ratios: each row to its server's one-worker base, Redis against memory, ours against the SDK."""
    ours_base = "memory-1" if "memory-1" in rows else "stateless-1"
    for row in rows.values():
        base = rows.get("sdk-1" if row["server"] == "sdk" else ours_base)
        row["ratio"] = _ratio(row["rate"], base["rate"] if base else None)
    report: dict[str, Any] = {"base": ours_base}
    memory, redis = rows.get("memory-1"), rows.get("redis-1")
    if memory and redis:
        report["store_cost"] = {
            "rate": _ratio(redis["rate"], memory["rate"]),
            "server_cpu": _ratio(redis["cpu_us_per_call"], memory["cpu_us_per_call"]),
            "server_and_redis_cpu": _ratio(_with_redis(redis), _with_redis(memory)),
        }
    versus = {}
    for row in rows.values():
        if row["server"] == "sdk":
            n = row["workers"]
            ours = rows.get(f"redis-{n}") or rows.get(f"stateless-{n}")
            if ours:
                versus[str(n)] = {"ours": ours["label"], "ratio": _ratio(ours["rate"], row["rate"])}
    if versus:
        report["versus_sdk"] = versus
    return report


def _us(value: float | None) -> str:
    return f"{value:.0f}" if value is not None else "-"


def _table_line(cells: tuple[str, ...]) -> str:
    return f"  {cells[0]:40}" + "".join(f"{cell:>12}" for cell in cells[1:])


def render(report: dict[str, Any]) -> str:
    """The report as text: one line per configuration, then the comparisons."""
    head = ("configuration", "calls/s", "to 1 worker", "server CPU", "redis CPU")
    cells = [
        (
            r["label"],
            f"{r['rate']:.0f}",
            _x(r["ratio"]),
            _us(r["cpu_us_per_call"]),
            _us(r["redis_cpu_us_per_call"]),
        )
        for r in report["configs"].values()
    ]
    per = report["connections_per_session"]
    sessions = "each with its own session" if per == 1 else f"a session per {per} of them"
    out = [
        f"echo calls/s at {report['clients']} clients, {sessions} ({report['front_door']})",
        f"  load average before {report['load_before']}, after {report['load_after']}",
        *map(_table_line, [head, *cells]),
        "  (CPU: µs per call, of all the server's processes (workers, supervisor), of redis-server)",
    ]
    cost = report.get("store_cost")
    if cost:
        out.append(
            f"the Redis store against memory, 1 worker: calls/s {_x(cost['rate'])}, CPU per call: "
            f"server {_x(cost['server_cpu'])}, server and redis-server {_x(cost['server_and_redis_cpu'])}"
        )
    for n, row in report.get("versus_sdk", {}).items():
        out.append(
            f"{row['ours']} / SDK stateless at {n} worker{'s' if n != '1' else ''}: {_x(row['ratio'])}"
        )
    return "\n".join(out)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default: 1,2)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per run (default: 5)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients (default: 64)")
    parser.add_argument(
        "--connections-per-session",
        type=int,
        default=1,
        metavar="K",
        help="call each session over K connections (clients / K sessions): its requests land on "
        "several workers (default: 1)",
    )
    parser.add_argument("--warmup", type=float, default=0.5, help="seconds not counted first (default: 0.5)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per configuration (default: 1)")
    parser.add_argument("--front-door", choices=("h11", "hypercorn"), default="h11")
    parser.add_argument("--stateless", action="store_true", help="mcp-trio stateless, no sessions nor store")
    parser.add_argument("--no-sdk", action="store_true", help="leave out the official SDK's rows")
    parser.add_argument("--store-url", help="an existing Redis to use (default: start a redis-server)")
    parser.add_argument("--redis-server", help="the redis-server command (default: found on PATH)")
    parser.add_argument("--sdk-python", help="the Python with the SDK (default: this one, or --venv's)")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="the benchmark environment")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    configs = configurations(
        [int(n) for n in args.workers.split(",")], stateless=args.stateless, sdk=not args.no_sdk
    )
    setup = Setup(args.front_door, args.store_url, warmup=args.warmup)
    setup.connections_per_session = args.connections_per_session
    with ExitStack() as stack:
        if any(c.store == "redis" for c in configs) and setup.store_url is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-redis-")))
            redis = stack.enter_context(RedisServer(folder, command=args.redis_server))
            setup.store_url, setup.store_pid = redis.url, redis.pid
        if not args.no_sdk:
            setup.sdk_python = sdk_python(args.sdk_python, args.venv)
        before = loadavg()
        rows = measure(configs, setup, duration=args.duration, clients=args.clients, rounds=args.rounds)
    report = {"clients": args.clients, "front_door": args.front_door, "load_before": before}
    report["connections_per_session"] = args.connections_per_session
    report.update(load_after=loadavg(), configs=rows, **compare(rows))
    print(json.dumps(report) if args.json else render(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
