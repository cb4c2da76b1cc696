"""What middleware costs: sequential tools/call with 0, 1 and 5 no-op middlewares, side by side.

Run from the project root::

    python benchmarks/bench_middleware.py            # a table of calls/s and ratios
    python benchmarks/bench_middleware.py --quick --json

A server and a client in one process over the in-memory transport (no I/O, so the
middleware's share is as large as it gets); each configuration serves the same echo tool.
The three sessions stay open and take turns, a short round each, and each keeps its
best round, so a slower moment of the machine does not fall on one of them.  Time is the
process's CPU time (one thread, no I/O): what other processes take of a busy machine is
left out.  The ratios are to the
server without middleware, whose handler table is the handlers themselves (the fast path:
``callgrind`` over stdio, ``/work/tools/cg.py``-style, shows no difference there).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import AsyncExitStack
from typing import Any

import trio

from mcp_trio.client import connect_server
from mcp_trio.middleware import CallNext, RequestInfo, Result
from mcp_trio.server import Server

COUNTS = (0, 1, 5)
FLAGS = {"--quick": "fewer, shorter rounds (a smoke test)", "--json": "print the rows as one JSON object"}


class NoOp:
    """A middleware that only passes the request on."""

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        return await call_next(request)


def make_server(middlewares: int) -> Server:
    server = Server("bench-middleware", "1", middleware=[NoOp() for _ in range(middlewares)])

    @server.tool
    async def echo(text: str) -> str:
        return text

    return server


async def _rounds(calls: int, rounds: int) -> dict[int, float]:
    best = dict.fromkeys(COUNTS, 0.0)
    async with AsyncExitStack() as stack:
        clients = {
            count: await stack.enter_async_context(
                connect_server(make_server(count), versions=["2025-06-18"])
            )
            for count in COUNTS
        }
        for client in clients.values():
            await client.call_tool("echo", {"text": "warm"})
        for _ in range(rounds):
            for count, client in clients.items():
                start = time.process_time()
                for _ in range(calls):
                    await client.call_tool("echo", {"text": "hello"})
                best[count] = max(best[count], calls / max(time.process_time() - start, 1e-9))
    return best


def measure(calls: int = 200, rounds: int = 50) -> list[dict[str, Any]]:
    best = trio.run(_rounds, calls, rounds)
    base = best[0]
    return [
        {"middlewares": count, "calls_per_s": best[count], "ratio": best[count] / base} for count in COUNTS
    ]


def table(rows: list[dict[str, Any]]) -> str:
    """``rows`` as a text table."""
    lines = [f"{'middlewares':>11} {'calls/s':>9} {'ratio':>6}"]
    lines += [f"{r['middlewares']:>11} {r['calls_per_s']:>9.0f} {r['ratio']:>6.3f}" for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, meaning in FLAGS.items():
        parser.add_argument(flag, action="store_true", help=meaning)
    args = parser.parse_args(argv)
    rows = measure(calls=50, rounds=2) if args.quick else measure()
    print(json.dumps({"rows": rows}) if args.json else table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
