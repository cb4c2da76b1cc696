"""Benchmark suite: the workloads: codec, stdio, Streamable HTTP, memory, cold start, own
clients, and the harness check.

Each starts the servers it compares side by side, warms every one of them alike with
``mode.warmup_calls`` calls (:func:`warm_up_stdio`, :func:`warm_up_http`), and measures them in
interleaved repeats (:func:`rounds`), so a change in the machine's load hits them all alike; a
figure is the median of its repeats, each repeat kept beside it (:func:`summarize`).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext, suppress
from typing import Any

from benchmarks._run_common import (
    BIG_TEXT,
    HTTP_CLIENTS,
    PIPELINE_DEPTH,
    ROOT,
    Mode,
    log,
    median,
)
from benchmarks._run_servers import Peer, available, http_servers, stdio_servers

#: The harness check's servers: trivial JSON answers, on Node and on Python (``--check-peer``).
CHECK_PEERS = ["trivial_node", "trivial_httptools", "trivial_h11"]


def summarize(runs: list[Any]) -> dict[str, Any]:
    """Median rate and latencies over repeated :class:`loadgen.Measurement` runs, each run's
    rate, and where measured the server's CPU microseconds per call (its process's alone) and
    the load generator's, as medians and per run."""
    out: dict[str, Any] = {
        "rate": median([r.rate for r in runs]),
        "p50_ms": median([r.p50 for r in runs]),
        "p99_ms": median([r.p99 for r in runs]),
        "runs": [round(r.rate, 1) for r in runs],
    }
    for name, field in (("server_cpu_us", "cpu_per_call"), ("client_cpu_us", "client_cpu_per_call")):
        values = [getattr(r, field) * 1e6 for r in runs if getattr(r, field, None) is not None]
        if values:
            out[name] = median(values)
            out[name.replace("_us", "_runs")] = [round(v, 1) for v in values]
    return out


def rounds(keys: Sequence[str], repeats: int) -> Iterator[str]:
    """Each key once per repeat, in turn (interleaved, so load drift hits everyone)."""
    for _ in range(repeats):
        yield from keys


def run_codec(python: str, mode: Mode) -> dict[str, Any]:
    argv = [python, "-m", "benchmarks.wire_codec", "--json"] + (["--quick"] if not mode.full else [])
    out = subprocess.run(argv, cwd=str(ROOT), check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def warm_up_stdio(servers: dict[str, Any], table: dict[str, Peer], calls: int) -> None:
    """``calls`` sequential calls to each server, not measured: every peer warmed alike."""
    from benchmarks import loadgen

    for key, server in servers.items():
        loadgen.stdio_warm_up(server, calls, check=table[key].check)


def warm_up_http(servers: dict[str, Any], calls: int) -> None:
    """``calls`` calls to each server over ``HTTP_CLIENTS`` sessions, not measured."""
    from benchmarks import loadgen

    for target, _pid in servers.values():
        loadgen.http_warm_up(target, calls, clients=HTTP_CLIENTS)


def run_stdio(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """Sequential and pipelined calls, each as the scheduler places the two processes and with
    the server and the load generator pinned to one CPU (:func:`one_cpu`: what a call costs the
    machine, whatever the placement); a 1 MiB echo."""
    from benchmarks import loadgen

    seq_keys = available(
        ["ours", "ours_lowlevel", "sdk", "sdk_high", "fastmcp", "ts", "raw_trio"], table, "stdio"
    )
    pipe_keys = seq_keys if mode.full else [k for k in seq_keys if k != "sdk_high"]
    big_keys = available(
        ["ours", "sdk", "sdk_high", "fastmcp", "ts"] if mode.full else ["ours", "sdk", "ts"], table, "stdio"
    )
    out: dict[str, Any] = {}
    with stdio_servers(seq_keys, table) as servers:
        warm_up_stdio(servers, table, mode.warmup_calls)
        for name, pinned in (("sequential", False), ("sequential_one_cpu", True)):
            runs: dict[str, list[Any]] = {k: [] for k in seq_keys}
            placements: dict[str, list[str]] = {k: [] for k in seq_keys}
            for key in rounds(seq_keys, mode.repeats):
                with one_cpu(servers[key].process.pid) if pinned else nullcontext():
                    runs[key].append(
                        loadgen.stdio_sequential(servers[key], mode.duration, check=table[key].check)
                    )
                    placements[key].append(_placement(servers[key].process.pid))
            out[name] = {k: {**summarize(v), "placement": placements[k]} for k, v in runs.items()}
            log(f"  stdio {name}: { {k: round(v['rate']) for k, v in out[name].items()} }")
        for name, pinned in (("pipelined", False), ("pipelined_one_cpu", True)):
            runs = {k: [] for k in pipe_keys}
            for key in rounds(pipe_keys, mode.repeats):
                with one_cpu(servers[key].process.pid) if pinned else nullcontext():
                    runs[key].append(
                        loadgen.stdio_pipelined(
                            servers[key], mode.duration, depth=PIPELINE_DEPTH, check=table[key].check
                        )
                    )
            out[name] = {k: summarize(v) for k, v in runs.items()}
            log(f"  stdio {name}: { {k: round(v['rate']) for k, v in out[name].items()} }")
        runs = {k: [] for k in big_keys}
        for key in rounds(big_keys, mode.repeats):
            runs[key].append(
                loadgen.stdio_sequential(servers[key], mode.big_duration, text=BIG_TEXT, warmup=0.0)
            )
        out["payload_1mib"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  stdio 1 MiB: { {k: round(v['rate'], 1) for k, v in out['payload_1mib'].items()} }")
    return out


def _last_cpu(pid: int | str) -> int:
    """The CPU process ``pid`` last ran on (``/proc/<pid>/stat``, field 39)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        return int(stat.read().rsplit(b")", 1)[1].split()[36])


@contextmanager
def one_cpu(server_pid: int) -> Iterator[None]:
    """The load generator and every thread of the server on one CPU, for the block.

    A sequential round trip hands the CPU back and forth between the two processes: where the
    scheduler put them decided the figure (about 2x between one vCPU and two on the 2-core
    guest of the committed figures, run to run, for the same code; ``benchmarks/README.md``).
    The stdio tables' "one CPU" variants pin every peer alike, to the CPU the load generator
    is on, so that the figure measures what a call costs and not the placement; the others
    leave the placement to the scheduler.  Where affinity cannot be set (not Linux), nothing
    changes."""
    if not hasattr(os, "sched_setaffinity"):
        yield
        return
    threads = (
        [int(tid) for tid in os.listdir(f"/proc/{server_pid}/task")]
        if os.path.isdir(f"/proc/{server_pid}/task")
        else []
    )
    cpu = {_last_cpu("self")}
    saved = {tid: os.sched_getaffinity(tid) for tid in [0, *threads]}
    try:
        for tid in saved:
            os.sched_setaffinity(tid, cpu)
        yield
    finally:
        for tid, mask in saved.items():
            with suppress(OSError):  # (a thread that ended meanwhile)
                os.sched_setaffinity(tid, mask)


def _placement(server_pid: int) -> str:
    """``same`` if the server and the load generator last ran on one CPU, else ``different``.

    A sequential stdio round trip hands the CPU back and forth between the two processes; on the
    2-core KVM guest of the committed figures that costs far more across two vCPUs than on one
    (``benchmarks/README.md``), so every sequential run records where the two ended up.
    """
    try:
        return "same" if _last_cpu(server_pid) == _last_cpu("self") else "different"
    except OSError:
        return "unknown"


@contextmanager
def cpus_of_their_own(server_pid: int) -> Iterator[None]:
    """The load generator on the CPU it is on, every thread of the server on another one, for the
    block: neither competes with the other for a core.  Unpinned, the scheduler moves the
    server's threads onto the load generator's core and back; Node's threads paid for it in CPU
    per request where trio's did not (RESULTS.md, issue #43).  With fewer than two CPUs to
    choose from, or no affinity to set, nothing changes."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(allowed) < 2:
        yield
        return
    mine = _last_cpu("self")
    mine = mine if mine in allowed else allowed[0]
    other = next(cpu for cpu in allowed if cpu != mine)
    with one_cpu(server_pid):  # (saves and restores every affinity it changes)
        for tid in os.listdir(f"/proc/{server_pid}/task"):
            with suppress(OSError):
                os.sched_setaffinity(int(tid), {other})
        os.sched_setaffinity(0, {mine})
        yield


def run_http(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """One client and 64 clients on every HTTP server as the scheduler places the processes; then
    64 clients on some of them with the server and the load generator on CPUs of their own."""
    from benchmarks import loadgen

    keys = ["ours", "ours_httptools", "ours_hypercorn", "sdk", "sdk_sse", "ts"]
    keys += ["trivial_h11", "trivial_httptools", "trivial_hypercorn"]
    if mode.full:
        keys += ["fastmcp", "sdk_high"]
    keys = available(keys, table, "http")
    seq_keys = keys if mode.full else available(["ours", "sdk", "ts", "trivial_h11"], table, "http")
    out: dict[str, Any] = {}
    with http_servers(keys, table) as servers:
        warm_up_http(servers, mode.warmup_calls)
        runs: dict[str, list[Any]] = {k: [] for k in seq_keys}
        for key in rounds(seq_keys, mode.repeats):
            target, pid = servers[key]
            runs[key].append(loadgen.http_calls(target, mode.http_duration, clients=1, server_pid=pid))
        out["sequential"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  HTTP sequential: { {k: round(v['rate']) for k, v in out['sequential'].items()} }")
        runs = {k: [] for k in keys}
        for key in rounds(keys, mode.repeats):
            target, pid = servers[key]
            runs[key].append(
                loadgen.http_calls(target, mode.http_duration, clients=HTTP_CLIENTS, server_pid=pid)
            )
        out["concurrent"] = {k: summarize(v) for k, v in runs.items()}
        log(f"  HTTP x{HTTP_CLIENTS}: { {k: round(v['rate']) for k, v in out['concurrent'].items()} }")
        split = ["ours", "ours_httptools", "ts"]
        split += ["sdk", "trivial_h11", "trivial_httptools"] if mode.full else []
        split = [k for k in split if k in servers]
        runs = {k: [] for k in split}
        for key in rounds(split, mode.repeats):
            target, pid = servers[key]
            with cpus_of_their_own(pid):
                measured = loadgen.http_calls(
                    target, mode.http_duration, clients=HTTP_CLIENTS, server_pid=pid
                )
            runs[key].append(measured)
        out["concurrent_split"] = {k: summarize(v) for k, v in runs.items()}
        shown = {k: round(v["rate"]) for k, v in out["concurrent_split"].items()}
        log(f"  HTTP x{HTTP_CLIENTS}, CPUs of their own: {shown}")
    return out


def run_harness_check(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """The load generator against trivial HTTP JSON servers (``CHECK_PEERS``: node:http and
    two Python ones), warmed and measured as the HTTP workload measures the MCP servers: what
    the harness itself costs per request (its own CPU time per call), and the rate at which it
    stops being able to tell two servers apart."""
    from benchmarks import loadgen

    keys = available(CHECK_PEERS, table, "http")
    out: dict[str, Any] = {}
    with http_servers(keys, table) as servers:
        warm_up_http(servers, mode.warmup_calls)
        for name, clients in (("concurrent", HTTP_CLIENTS), ("sequential", 1)):
            runs: dict[str, list[Any]] = {k: [] for k in keys}
            for key in rounds(keys, mode.repeats):
                target, pid = servers[key]
                measured = loadgen.http_calls(target, mode.http_duration, clients=clients, server_pid=pid)
                runs[key].append(measured)
            out[name] = {k: summarize(v) for k, v in runs.items()}
            shown = {k: (round(v["rate"]), round(v.get("client_cpu_us", 0), 1)) for k, v in out[name].items()}
            log(f"  harness check x{clients} (req/s, load generator µs/call): {shown}")
    return out


def run_memory(table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """RSS growth of the server process per idle session, over ``mode.sessions`` sessions."""
    from benchmarks import loadgen

    full = ["sdk_sse", "sdk_high", "fastmcp", "ours_hypercorn"] if mode.full else []
    keys = available(["ours", "sdk", "ts", *full], table, "http")
    out: dict[str, Any] = {}
    with http_servers(keys, table) as servers:
        for key in keys:
            target, pid = servers[key]
            loadgen.open_idle_sessions(target, 50)  # warm up: imports, caches, first arenas
            time.sleep(0.3)
            before = loadgen.rss_bytes(pid)
            opened = loadgen.open_idle_sessions(target, mode.sessions)
            time.sleep(0.5)
            after = loadgen.rss_bytes(pid)
            out[key] = {
                "kib_per_session": (after - before) / opened / 1024,
                "rss_before_mib": before / 2**20,
                "rss_after_mib": after / 2**20,
                "sessions": opened,
            }
    log(f"  memory KiB/session: { {k: round(v['kib_per_session'], 1) for k, v in out.items()} }")
    return out


def run_cold_start(python: str, table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    from benchmarks import loadgen

    keys = available(["ours", "sdk", "ts"] + (["fastmcp", "sdk_high"] if mode.full else []), table, "stdio")
    samples: dict[str, list[float]] = {k: [] for k in keys}
    for key in rounds(keys, mode.cold_repeats):
        samples[key].append(loadgen.cold_start(table[key].stdio or [], cwd=str(ROOT)))
    cold = {k: {"seconds": median(v), "runs": [round(x, 3) for x in v]} for k, v in samples.items()}
    modules = {
        "python (no import)": "pass",
        "mcp_trio.server": "import mcp_trio.server",
        "mcp.server.lowlevel": "import mcp.server.lowlevel",
    }
    if mode.full:
        modules["trio"] = "import trio"
        modules["mcp.server.mcpserver"] = "import mcp.server.mcpserver"
        modules["fastmcp"] = "import fastmcp"
    times: dict[str, list[float]] = {k: [] for k in modules}
    for key in rounds(list(modules), mode.cold_repeats):
        start = time.perf_counter()
        subprocess.run([python, "-c", modules[key]], check=True, cwd=str(ROOT))
        times[key].append(time.perf_counter() - start)
    imports = {k: {"seconds": median(v), "runs": [round(x, 3) for x in v]} for k, v in times.items()}
    log(f"  cold start s: { {k: round(v['seconds'], 3) for k, v in cold.items()} }")
    log(f"  import s: { {k: round(v['seconds'], 3) for k, v in imports.items()} }")
    return {"cold_start": cold, "import": imports}


def run_own_clients(python: str, table: dict[str, Peer], mode: Mode) -> dict[str, Any]:
    """Each implementation's client against its own server (sequential calls)."""
    pairs = {k: k for k in ["ours", "sdk", "fastmcp", "ts"] if table[k].own_client and table[k].stdio}
    transports = ["stdio", "http"] if mode.full else ["stdio"]
    out: dict[str, Any] = {t: {} for t in transports}
    duration = str(mode.duration)
    for transport in transports:
        samples: dict[str, list[dict[str, float]]] = {k: [] for k in pairs}
        with ExitStack() as stack:
            targets: dict[str, list[str]] = {}
            if transport == "http":
                servers = stack.enter_context(http_servers(list(pairs.values()), table))
                targets = {k: [servers[pairs[k]][0].url] for k in pairs}
            else:
                targets = {k: ["--", *(table[pairs[k]].stdio or [])] for k in pairs}
            for key in rounds(list(pairs), max(1, mode.repeats - (0 if mode.full else 2))):
                argv = [*(table[key].own_client or []), transport, duration, *targets[key]]
                result = subprocess.run(
                    argv, cwd=str(ROOT), check=True, capture_output=True, text=True, timeout=120
                )
                samples[key].append(json.loads(result.stdout.strip().splitlines()[-1]))
        out[transport] = {
            k: {
                "rate": median([s["calls"] / s["elapsed"] for s in v]),
                "p50_ms": median([s["p50_ms"] for s in v]),
                "p99_ms": median([s["p99_ms"] for s in v]),
            }
            for k, v in samples.items()
        }
        log(f"  own clients {transport}: { {k: round(v['rate']) for k, v in out[transport].items()} }")
    return out
