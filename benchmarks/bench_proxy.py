"""What a proxy costs: ``tools/call`` echo through ``proxy()`` against the same server called
directly, side by side, over stdio and over Streamable HTTP.

Run from the project root::

    python -m benchmarks.bench_proxy               # a table
    python -m benchmarks.bench_proxy --quick --json

The servers, each its own process tree, every call one at a time (the latency of one call):

* ``stdio direct``: ``mcp-trio serve benchmarks/echo_server.py`` over stdio;
* ``stdio proxy``: ``mcp-trio serve benchmarks/proxied_echo.py`` over stdio, a proxy that
  forwards over stdio to the same echo server, which it starts as its child (its calls go
  through the stdio relay: docs/guide/composition.md, "The stdio relay");
* ``stdio proxy (sessions)``: the same with ``stdio_relay=False``, every call through the
  proxy's sessions;
* ``http direct``: the echo server over Streamable HTTP (h11 door);
* ``http proxy``: a proxy over Streamable HTTP forwarding to an echo server over Streamable
  HTTP (a process of its own);
* floors, no proxy of ours, each with the echo server as its child: ``stdio trio relay``
  (``peers/relay_trio.py``: two trio tasks passing the frames between the pipes, ids
  rewritten, nothing else) and ``stdio thread relay`` (``peers/relay_threads.py``: the same
  with two OS threads and blocking I/O), what any relay of that kind must add; ``stdio copy
  relay`` (``peers/relay_copy.py``: two OS threads passing the bytes, nothing looked at), what
  any relay process written in Python must; and ``stdio C copy relay``
  (``peers/relay_copy.c``, the same in C, built with the C compiler found on the ``PATH``; the
  row is left out, with a line on stderr, where there is none), what any relay process must.

Reported per configuration: the p50 latency the load generator sees, and the server's CPU per
call (user + system, every process of the tree: for the proxies, the proxy and the server behind
it); ``added`` is the proxy's minus the direct one, and the proxy process's own CPU per call is
shown apart (what the proxy itself does per call: a server session's request and answer, a
client session's request and answer).  The configurations take turns, ``--rounds`` times, and
each keeps its median.
"""

from __future__ import annotations

import argparse
import atexit
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks._echo_http import http_server
from benchmarks._load_http import cpu_seconds, http_calls, process_tree
from benchmarks.loadgen import HttpTarget, StdioServer, stdio_sequential
from benchmarks.peers._relay_frames import ECHO

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
SERVE = [sys.executable, "-m", "mcp_trio._cli", "serve"]
_STDIO = {
    "stdio direct": [*SERVE, "benchmarks/echo_server.py"],
    "stdio proxy": [*SERVE, "benchmarks/proxied_echo.py"],
    "stdio proxy (sessions)": [*SERVE, "benchmarks/proxied_echo.py"],
    "stdio trio relay": [sys.executable, "benchmarks/peers/relay_trio.py"],
    "stdio thread relay": [sys.executable, "benchmarks/peers/relay_threads.py"],
    "stdio copy relay": [sys.executable, "benchmarks/peers/relay_copy.py"],
}
C_RELAY = "stdio C copy relay"
#: What a configuration's process gets in its environment besides ``ENV``.
_ENV = {"stdio proxy (sessions)": {"MCP_PROXY_STDIO_RELAY": "0"}}
FLAGS = {"--quick": "one short round (a smoke test)", "--json": "print the rows as one JSON object"}


@functools.cache
def c_relay() -> str | None:
    """``peers/relay_copy.c`` built (in a temporary directory, once a run, removed at exit): its path, or None
    when no C compiler is on the ``PATH`` (said on stderr)."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        print(f"no C compiler on the PATH: the {C_RELAY!r} row is left out", file=sys.stderr)
        return None
    where = tempfile.mkdtemp(prefix="mcp-trio-bench-")
    atexit.register(shutil.rmtree, where, True)
    built = str(Path(where) / "relay_copy")
    source = str(ROOT / "benchmarks" / "peers" / "relay_copy.c")
    subprocess.run([compiler, "-O2", "-pthread", "-o", built, source], check=True)
    return built


def configs() -> list[str]:
    """The configurations measured, in order (the C floor where it can be built)."""
    found = [*_STDIO]
    if c_relay() is not None:
        found.append(C_RELAY)
    return [*found, "http direct", "http proxy"]


def _command(config: str) -> list[str]:
    if config == C_RELAY:
        built = c_relay()
        assert built is not None
        return [built, *ECHO]
    return _STDIO[config]


def _stdio(config: str, seconds: float) -> tuple[float, float, float]:
    """(p50 seconds, CPU seconds per call of the tree, of the first process alone)."""
    with StdioServer(_command(config), env={**ENV, **_ENV.get(config, {})}, cwd=str(ROOT)) as server:
        server.initialize()
        stdio_sequential(server, 0.5)  # (warm-up; the proxy's upstream is connected by now)
        tree = process_tree(server.pid)
        before, own = cpu_seconds(tree), cpu_seconds(server.pid)
        measured = stdio_sequential(server, seconds, warmup=0)
        calls = max(1, measured.calls)
        return measured.p50, (cpu_seconds(tree) - before) / calls, (cpu_seconds(server.pid) - own) / calls


def _http(config: str, seconds: float) -> tuple[float, float, float]:
    with http_server([*SERVE, "benchmarks/echo_server.py"], ENV) as (port, echo):
        pids = [echo.pid]
        if config == "http direct":
            target = HttpTarget("127.0.0.1", port)
            return _http_measure(target, pids, echo.pid, seconds)
        env = {**ENV, "MCP_PROXY_UPSTREAM": f"http://127.0.0.1:{port}/mcp"}
        with http_server([*SERVE, "benchmarks/proxied_echo.py"], env) as (proxy_port, proxy):
            target = HttpTarget("127.0.0.1", proxy_port)
            return _http_measure(target, [proxy.pid, *pids], proxy.pid, seconds)


def _http_measure(
    target: HttpTarget, pids: list[int], own: int, seconds: float
) -> tuple[float, float, float]:
    http_calls(target, 0.5)  # (warm-up)
    before_own, before_all = cpu_seconds(own), cpu_seconds(pids)
    measured = http_calls(target, seconds, server_pid=pids)
    used_own, used_all = cpu_seconds(own) - before_own, cpu_seconds(pids) - before_all
    assert measured.cpu_per_call is not None
    return measured.p50, measured.cpu_per_call, measured.cpu_per_call * used_own / max(used_all, 1e-9)


def measure(seconds: float = 3.0, rounds: int = 3) -> list[dict[str, Any]]:
    measured = configs()
    found: dict[str, list[tuple[float, float, float]]] = {config: [] for config in measured}
    for _ in range(rounds):
        for config in measured:
            run = _stdio if config.startswith("stdio") else _http
            found[config].append(run(config, seconds))
    rows = []
    for config in measured:
        p50, cpu, own = (statistics.median(values) for values in zip(*found[config], strict=True))
        rows.append({"config": config, "p50_us": p50 * 1e3, "cpu_us": cpu * 1e6, "own_cpu_us": own * 1e6})
    for row in rows:
        transport, _, kind = row["config"].partition(" ")
        if kind != "direct":
            direct = next(r for r in rows if r["config"] == f"{transport} direct")
            row["added_p50_us"] = row["p50_us"] - direct["p50_us"]
            row["added_cpu_us"] = row["cpu_us"] - direct["cpu_us"]
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        f"{'config':<22} {'p50 us':>8} {'CPU us/call':>12} {'own CPU us':>11} "
        f"{'added p50':>10} {'added CPU':>10}"
    ]
    for r in rows:
        added = (
            f"{r['added_p50_us']:>10.1f} {r['added_cpu_us']:>10.1f}"
            if "added_p50_us" in r
            else f"{'':>10} {'':>10}"
        )
        lines.append(
            f"{r['config']:<22} {r['p50_us']:>8.1f} {r['cpu_us']:>12.1f} {r['own_cpu_us']:>11.1f} {added}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    for flag, meaning in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=meaning)
    parser.add_argument("--rounds", type=int, default=3, help="rounds (each configuration once a round)")
    parser.add_argument(
        "--seconds", type=float, default=3.0, help="seconds measured per configuration and round"
    )
    args = parser.parse_args(argv)
    rows = measure(seconds=0.5, rounds=1) if args.quick else measure(args.seconds, args.rounds)
    print(json.dumps({"rows": rows}) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
