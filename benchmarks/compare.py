"""Two revisions of mcp-trio side by side, under one load, in one run: what a change costs.

    python -m benchmarks.compare BASE               # BASE (a commit, a tag, HEAD~3) against HEAD
    python -m benchmarks.compare BASE NEW --rounds 7 --seconds 4 --only stdio,http

Each revision is checked out into a git worktree of its own (removed at the end: uncommitted
changes are not measured), so that both run alike (a server run from this checkout itself
measured 1 KiB more per idle session than the same commit from a worktree); both run with this
environment's packages, each from its own source tree (``PYTHONPATH``), serving its own copy of
``benchmarks/echo_server.py``. Rounds alternate which revision goes first.

Each workload reports the server's CPU seconds per call (user + system, every thread, from
/proc: what noise on a shared machine moves least), its median over the rounds for each
revision, and the ratio of NEW to BASE:

* ``stdio sequential``: one ``tools/call`` at a time (after a warm-up);
* ``stdio pipelined``: 256 calls in flight;
* ``http x64 DOOR``: 64 clients, each with its session and connection, on each front door;
* ``idle session``: the server's RSS per idle Streamable HTTP session (2,000 sessions), in KiB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._load_http import cpu_seconds, http_calls
from benchmarks.loadgen import (
    HttpTarget,
    StdioServer,
    free_port,
    open_idle_sessions,
    rss_bytes,
    stdio_pipelined,
    stdio_sequential,
    wait_for_port,
)

ROOT = Path(__file__).resolve().parent.parent
DOORS = ("h11", "httptools", "hypercorn")
WORKLOADS = ("stdio", "http", "memory")


def _env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def _serve(tree: Path, *options: str) -> list[str]:
    return [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py", *options]


def stdio_cpu(tree: Path, seconds: float, pipelined: bool) -> float:
    """Server CPU seconds per call over stdio."""
    with StdioServer(_serve(tree), env=_env(tree), cwd=str(tree)) as server:
        server.initialize()
        stdio_sequential(server, 0.5)  # (warm-up)
        before = cpu_seconds(server.pid)
        if pipelined:
            measured = stdio_pipelined(server, seconds)
        else:
            measured = stdio_sequential(server, seconds, warmup=0)
        return (cpu_seconds(server.pid) - before) / max(1, measured.calls)


class _HttpServer:
    def __init__(self, tree: Path, door: str) -> None:
        self.port = free_port()
        argv = _serve(tree, "--http", f"127.0.0.1:{self.port}", "--front-door", door)
        argv += ["--max-sessions-per-client", "1000000"]  # (every load client has one address)
        self.proc = subprocess.Popen(
            argv, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        wait_for_port("127.0.0.1", self.port, 30, lambda: self.proc.poll() is None)
        self.target = HttpTarget("127.0.0.1", self.port)

    def __enter__(self) -> _HttpServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def http_cpu(tree: Path, seconds: float, door: str) -> float:
    """Server CPU seconds per call, 64 clients on ``door``."""
    with _HttpServer(tree, door) as server:
        http_calls(server.target, 1.0, clients=64)  # (warm-up)
        measured = http_calls(server.target, seconds, clients=64, server_pid=server.proc.pid)
        assert measured.cpu_per_call is not None
        return measured.cpu_per_call


def idle_kib(tree: Path, sessions: int = 2000) -> float:
    """The server's RSS per idle Streamable HTTP session, in KiB."""
    with _HttpServer(tree, "h11") as server:
        open_idle_sessions(server.target, 50)  # (what the first sessions allocate once)
        time.sleep(0.5)
        before = rss_bytes(server.proc.pid)
        open_idle_sessions(server.target, sessions)
        time.sleep(0.5)
        return (rss_bytes(server.proc.pid) - before) / sessions / 1024


def workloads(only: set[str], seconds: float) -> dict[str, Callable[[Path], float]]:
    found: dict[str, Callable[[Path], float]] = {}
    if "stdio" in only:
        found["stdio sequential (us/call)"] = lambda t: stdio_cpu(t, seconds, False) * 1e6
        found["stdio pipelined (us/call)"] = lambda t: stdio_cpu(t, seconds, True) * 1e6
    if "http" in only:
        for door in DOORS:
            found[f"http x64 {door} (us/call)"] = lambda t, d=door: http_cpu(t, seconds, d) * 1e6
    if "memory" in only:
        found["idle http session (KiB)"] = idle_kib
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.split("\n")[0])
    parser.add_argument("base", help="the revision to compare with (git rev)")
    parser.add_argument("new", nargs="?", default="HEAD", help="the revision measured against it (HEAD)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="measured seconds per workload and round")
    parser.add_argument("--only", default=",".join(WORKLOADS), help=f"some of {','.join(WORKLOADS)}")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    if not only <= set(WORKLOADS):
        parser.error(f"--only takes {','.join(WORKLOADS)}")
    with tempfile.TemporaryDirectory(prefix="mcp-trio-compare-") as scratch:
        trees: dict[str, Path] = {}
        try:
            for role, rev in (("base", args.base), ("new", args.new)):
                tree = Path(scratch) / role
                add = ["git", "worktree", "add", "--quiet", "--detach", str(tree), rev]
                subprocess.run(add, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
                short = ["git", "rev-parse", "--short", rev]
                commit = subprocess.run(short, cwd=ROOT, capture_output=True, text=True, check=True).stdout
                trees[f"{role} {commit.strip()}"] = tree
            measured: dict[str, dict[str, list[float]]] = {}
            for number in range(args.rounds):
                order = list(trees.items()) if number % 2 == 0 else list(trees.items())[::-1]
                for name, run in workloads(only, args.seconds).items():
                    for label, tree in order:
                        value = run(tree)
                        measured.setdefault(name, {}).setdefault(label, []).append(value)
                        print(f"round {number + 1}: {name}: {label} {value:.1f}", file=sys.stderr)
        finally:
            for tree in trees.values():
                subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False)
    base_label, head_label = trees
    print(
        f"| workload | {base_label} | {head_label} | ratio (median of {args.rounds}) | per round, base/new |"
    )
    print("|---|---|---|---|---|")
    for name, by in measured.items():
        old, new = statistics.median(by[base_label]), statistics.median(by[head_label])
        rounds = ", ".join(f"{b:.0f}/{h:.0f}" for b, h in zip(by[base_label], by[head_label], strict=True))
        print(f"| {name} | {old:.1f} | {new:.1f} | {new / old:.3f} | {rounds} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
