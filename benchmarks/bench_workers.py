"""What worker processes give: echo calls/s at 64 clients with 1 and 2 (or more) ``--workers``.

Run from the project root::

    python -m benchmarks.bench_workers                  # 1 and 2 workers, 5 s each
    python -m benchmarks.bench_workers --workers 1,2,4 --duration 10 --rounds 3 --json

Each configuration is ``mcp-trio serve benchmarks/echo_server.py --http 127.0.0.1:PORT
--workers N --stateless`` (stateless until a shared session store is given), measured in the
same run by the HTTP load generator (:func:`benchmarks._load_http.http_calls`: each client owns
one kept-alive connection, so the kernel spreads the clients' connections over the workers).
With ``--rounds`` above 1 the configurations take turns and each keeps its median rate.  The
ratio is to one worker.  The load generator is one more process on the same cores: on a
2-core machine it takes one of them.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks._load_http import http_calls
from benchmarks._load_http_client import HttpTarget
from benchmarks._load_messages import LoadError
from benchmarks._run_common import HOST, ROOT, median
from benchmarks._run_servers import _stop

__all__ = ["main", "measure"]


@contextmanager
def serving(workers: int, front_door: str) -> Iterator[HttpTarget]:
    """``mcp-trio serve`` of the echo server with ``workers`` workers, until the block ends."""
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py"]
    argv += ["--http", f"{HOST}:0", "--stateless", "--workers", str(workers), "--front-door", front_door]
    process = subprocess.Popen(argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: queue.Queue[str] = queue.Queue()

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
                raise LoadError(f"the server with {workers} workers exited: code {process.wait()}")
        url = line.split(" at ")[1].split()[0]
        host_port = url.split("//", 1)[1].split("/", 1)[0]
        yield HttpTarget(HOST, int(host_port.rsplit(":", 1)[1]))
    finally:
        _stop(process)  # (SIGTERM: the supervisor stops its workers)
        drainer.join(5)
        if process.stderr is not None:
            process.stderr.close()


def measure(
    counts: list[int], *, duration: float, clients: int, rounds: int, front_door: str
) -> dict[int, float]:
    """Calls/s of each worker count (the median over ``rounds``)."""
    rates: dict[int, list[float]] = {n: [] for n in counts}
    for _ in range(rounds):
        for n in counts:
            with serving(n, front_door) as target:
                rates[n].append(http_calls(target, duration, clients=clients, warmup=0.5).rate)
    return {n: median(values) for n, values in rates.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default: 1,2)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds measured per run (default: 5)")
    parser.add_argument("--clients", type=int, default=64, help="concurrent clients (default: 64)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per worker count (default: 1)")
    parser.add_argument("--front-door", choices=("h11", "hypercorn"), default="h11")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    counts = sorted({int(n) for n in args.workers.split(",")})
    if 1 not in counts:
        counts.insert(0, 1)  # (the ratios' base)
    rates = measure(
        counts, duration=args.duration, clients=args.clients, rounds=args.rounds, front_door=args.front_door
    )
    base = rates[1]
    if args.json:
        rows = {str(n): {"rate": rate, "ratio": rate / base if base else 0.0} for n, rate in rates.items()}
        print(json.dumps({"clients": args.clients, "front_door": args.front_door, "workers": rows}))
        return 0
    print(f"echo calls/s at {args.clients} clients, stateless, {args.front_door}")
    for n, rate in rates.items():
        print(f"  {n} worker{'s' if n > 1 else ' '}  {rate:9.0f}/s  {rate / base if base else 0:5.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
