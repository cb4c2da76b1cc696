"""The legitimate clients of the soak test, run as a process of their own so that the attackers'
work in the test process never delays their clocks::

    python -m tests.soak._legit --port PORT [--source 127.0.0.2] [--clients 4] [--seconds 5]

Each client loops over whole sessions on a new connection from ``--source``: ``initialize``,
``notifications/initialized``, a few ``tools/call`` of the fast tool (each answer checked), then
``DELETE``, with a short think time between requests.  Every request's latency counts (the
``initialize`` one includes connecting); any wrong status, wrong answer, failed connection or
answer later than ``--timeout`` is an error.  Prints one JSON object: counts, percentiles in
milliseconds, a few error samples, the process's own CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
from dataclasses import dataclass, field

import trio

from ._wire import LATEST, Client, Failed, call, encode, headers, initialize, rpc

CALLS_PER_SESSION = 8
THINK = 0.01  # seconds between two requests of one client


@dataclass
class Tally:
    measure_from: float
    latencies: list[float] = field(default_factory=list)
    by_kind: dict[str, list[float]] = field(default_factory=dict)
    errors: int = 0
    warmup_errors: int = 0
    samples: list[str] = field(default_factory=list)
    sessions: int = 0

    def record(self, started: float, kind: str) -> None:
        if started >= self.measure_from:
            latency = trio.current_time() - started
            self.latencies.append(latency)
            self.by_kind.setdefault(kind, []).append(latency)

    def error(self, started: float, what: str) -> None:
        if started < self.measure_from:
            self.warmup_errors += 1
            return
        self.errors += 1
        if len(self.samples) < 8:
            self.samples.append(f"t+{started - self.measure_from:.1f}s {what}")


async def one_session(port: int, source: str, tally: Tally, ident: str, until: float, timeout: float) -> None:
    """One session; no request starts after ``until``, so each ends within ``until + timeout``."""
    started = trio.current_time()
    client: Client | None = None
    try:
        client = await Client.open(source, port, timeout)
        reply = await client.request("POST", headers(), initialize(LATEST, "legit"), timeout)
        session = reply.headers.get("mcp-session-id")
        result = reply.messages()[0].get("result", {}) if reply.status == 200 else {}
        if session is None or result.get("protocolVersion") != LATEST:
            raise Failed(f"initialize: {reply.status} {reply.body[:100]!r}")
        tally.record(started, "initialize")
        step = "notifications/initialized"
        await trio.sleep(THINK)
        if trio.current_time() >= until:
            return
        started = trio.current_time()
        reply = await client.request("POST", headers(session, LATEST), encode(rpc(None, step)), timeout)
        if reply.status != 202:
            raise Failed(f"{step}: {reply.status} {reply.body[:100]!r}")
        tally.record(started, "initialized")
        for n in range(CALLS_PER_SESSION):
            await trio.sleep(THINK)
            if trio.current_time() >= until:
                return
            text = f"{ident}-{n}"
            started = trio.current_time()
            reply = await client.request(
                "POST", headers(session, LATEST), encode(call(n + 1, "echo", text=text)), timeout
            )
            answer = reply.messages() if reply.status == 200 else []
            content = answer[-1].get("result", {}).get("content", []) if answer else []
            if not content or content[0].get("text") != text:
                raise Failed(f"tools/call: {reply.status} {reply.body[:100]!r}")
            tally.record(started, "call")
        await trio.sleep(THINK)
        if trio.current_time() >= until:
            return
        started = trio.current_time()
        reply = await client.request("DELETE", headers(session, LATEST), b"", timeout)
        if reply.status not in (200, 202, 204):
            raise Failed(f"DELETE: {reply.status} {reply.body[:100]!r}")
        tally.record(started, "DELETE")
        tally.sessions += 1
    except Failed as exc:
        tally.error(started, str(exc))
    except (OSError, ValueError, KeyError, IndexError, AttributeError) as exc:
        tally.error(started, f"{type(exc).__name__}: {exc}")
    finally:
        if client is not None:
            client.close()


async def client_loop(
    port: int, source: str, tally: Tally, number: int, until: float, timeout: float
) -> None:
    rounds = 0
    while trio.current_time() < until:
        rounds += 1
        await one_session(port, source, tally, f"c{number}r{rounds}", until, timeout)
        await trio.sleep(THINK)


def percentile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


async def run(
    port: int, source: str, clients: int, warmup: float, seconds: float, timeout: float
) -> dict[str, object]:
    now = trio.current_time()
    tally = Tally(measure_from=now + warmup)
    until = now + warmup + seconds
    with trio.move_on_after(warmup + seconds + timeout + 5):  # a hung client is already an error
        async with trio.open_nursery() as nursery:
            for number in range(clients):
                nursery.start_soon(client_loop, port, source, tally, number, until, timeout)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    ms = [1000 * value for value in tally.latencies]
    return {
        "requests": len(ms),
        "sessions": tally.sessions,
        "errors": tally.errors,
        "warmup_errors": tally.warmup_errors,
        "error_samples": tally.samples,
        "p50_ms": percentile(ms, 0.50),
        "p90_ms": percentile(ms, 0.90),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": max(ms, default=math.nan),
        "p99_ms_by_kind": {
            kind: round(1000 * percentile(values, 0.99), 1) for kind, values in tally.by_kind.items()
        },
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--source", default="127.0.0.2")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--timeout", type=float, default=5.0)
    args = parser.parse_args()
    print(
        json.dumps(
            trio.run(run, args.port, args.source, args.clients, args.warmup, args.seconds, args.timeout)
        )
    )


if __name__ == "__main__":
    main()
