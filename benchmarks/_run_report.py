"""Benchmark suite: the report: ``RESULTS.md`` and the chart of the ratios (``ratios.png``).

``RESULTS.md`` has the targets, a table per workload, the machine and the versions; the section
after :data:`ANALYSIS_MARKER` is written by hand and kept across runs (:func:`_kept_analysis`).
The chart needs matplotlib and is skipped without it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks._run_common import ANALYSIS_MARKER, HTTP_CLIENTS, PIPELINE_DEPTH, RESULTS_MD
from benchmarks._run_servers import Peer
from benchmarks._run_targets import targets


def _fmt(value: Any, digits: int = 0) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _x(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}×"


def render_markdown(results: dict[str, Any], table: dict[str, Peer]) -> str:
    meta = results["meta"]
    label = {k: p.label for k, p in table.items()}
    lines = [
        "# Benchmark results",
        "",
        f"Written by `python -m benchmarks.run{' --full' if meta['mode'] == 'full' else ''}` on "
        f"{meta['date']} ({meta['mode']} mode: every figure is the median of {meta['repeats']} "
        f"runs of {meta['duration']} s; cold starts and imports of {meta['cold_repeats']}). "
        "Ratios compare figures of this same run."
        + (
            f" Every server answered {meta['warmup_calls']:,} calls after it started, before its "
            "first measured run (the same for every peer), and each run's first 0.2 s are not "
            "counted."
            if meta.get("warmup_calls")
            else ""
        ),
        "",
        f"- Machine: {meta['machine'].get('cpu', '?')}, {meta['machine']['cores']} cores, "
        f"{meta['machine'].get('memory_gib', '?')} GiB; {meta['machine']['platform']}; "
        f"Python {meta['machine']['python']}. The load generator runs on the same machine.",
        f"- Load average (1, 5, 15 min) before: {meta['load_before']}, after: {meta['load_after']}"
        " (other work on the machine, e.g. test suites, shares the two cores)."
        + (
            f" CPU time the host took for other guests over the run (`steal`): {meta['steal']:.1%}."
            if meta.get("steal") is not None
            else ""
        ),
        "- Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        f"- Took {meta['elapsed_s']:.0f} s.",
        "",
        "## Targets",
        "",
        # the documentation site includes the table between these markers (docs/guide/benchmarks.md)
        "<!-- --8<-- [start:targets] -->",
        "| target | wanted | measured | run by run | |",
        "|---|---|---|---|---|",
    ]
    for target in targets(results):
        mark = {True: "met", False: "**missed**", None: "not measured"}[target.met]
        ranged = f"{_x(target.spread[0])} to {_x(target.spread[1])}" if target.spread else ""
        lines.append(f"| {target.name} | {target.wanted} | {_x(target.value)} | {ranged} | {mark} |")
    lines += ["<!-- --8<-- [end:targets] -->", "", "![ratios](ratios.png)", ""]

    def throughput_table(title: str, data: dict[str, Any] | None, unit: str, note: str = "") -> None:
        if not data:
            return
        lines.extend([f"## {title}", ""])
        if note:
            lines.extend([note, ""])
        cpu = any("server_cpu_us" in row for row in data.values())
        client = any("client_cpu_us" in row for row in data.values())
        lines.append(
            f"| server | {unit} | p50 ms | p99 ms |{' server CPU µs/call |' if cpu else ''}"
            f"{' load generator CPU µs/call |' if client else ''} runs |"
        )
        lines.append(f"|---|---:|---:|---:|{'---:|' if cpu else ''}{'---:|' if client else ''}---|")
        for key, row in data.items():
            digits = 1 if row["rate"] < 100 else 0
            cpu_cell = f" {_with_spread(row, 'server_cpu')} |" if cpu else ""
            cpu_cell += f" {_fmt(row.get('client_cpu_us'), 1)} |" if client else ""
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['rate'], digits)} | {_fmt(row['p50_ms'], 2)} "
                f"| {_fmt(row['p99_ms'], 2)} |{cpu_cell}"
                f" {_runs(row, digits)} |"
            )
        lines.append("")

    stdio = results.get("stdio") or {}
    cpu_note = (
        " Server CPU: user + system time of the server's process alone (`/proc/PID/stat`) over the "
        "measured phase, per call, median (lowest to highest run); the load generator's own, per "
        "call, beside it."
    )
    one_cpu_note = (
        " Here the server (every thread) and the load generator are pinned to one CPU, every peer "
        "alike: the rate is what a call costs the two processes together on one core."
    )
    placed = (
        'One `tools/call` of `echo("hello")` at a time, answer checked. After each run: whether '
        "the server and the load generator last ran on the same CPU or on different ones."
    )
    if "sequential_one_cpu" in stdio:
        throughput_table(
            "stdio, sequential tools/call",
            stdio.get("sequential"),
            "calls/s",
            placed + " The scheduler places the two processes." + cpu_note,
        )
        throughput_table(
            "stdio, sequential tools/call, one CPU",
            stdio.get("sequential_one_cpu"),
            "calls/s",
            placed + one_cpu_note,
        )
    else:  # (results from before the variants: every sequential run pinned)
        throughput_table("stdio, sequential tools/call", stdio.get("sequential"), "calls/s", placed)
    throughput_table(
        f"stdio, pipelined ({PIPELINE_DEPTH} in flight)",
        stdio.get("pipelined"),
        "calls/s",
        "Latency here is mostly queueing.",
    )
    throughput_table(
        f"stdio, pipelined ({PIPELINE_DEPTH} in flight), one CPU",
        stdio.get("pipelined_one_cpu"),
        "calls/s",
        "Latency here is mostly queueing." + one_cpu_note,
    )
    throughput_table(
        "stdio, 1 MiB payload",
        stdio.get("payload_1mib"),
        "calls/s",
        "`echo` of 1 MiB of text and back, one at a time.",
    )
    http = results.get("http") or {}
    throughput_table(
        "Streamable HTTP, one client",
        http.get("sequential"),
        "req/s",
        "One session, keep-alive, one `tools/call` at a time.",
    )
    throughput_table(
        f"Streamable HTTP, {HTTP_CLIENTS} concurrent clients",
        http.get("concurrent"),
        "req/s",
        f"{HTTP_CLIENTS} clients, each with its own session and connection, "
        "calling back to back. SDK servers run on uvicorn (its default server) in "
        "JSON mode unless marked SSE; the TypeScript SDK on node:http, in JSON mode. Server CPU: "
        "user + system time of the server's process alone (`/proc/PID/stat`) while the clients "
        "call, per call answered, median (lowest to highest run); the load generator's own beside "
        "it.",
    )
    throughput_table(
        f"Streamable HTTP, {HTTP_CLIENTS} concurrent clients, CPUs of their own",
        http.get("concurrent_split"),
        "req/s",
        "The same, with every thread of the server on one CPU and the load generator on another, "
        "so that neither competes with the other for a core (on the 2-core machine, all of it).",
    )
    harness = results.get("harness") or {}
    throughput_table(
        f"Harness check: trivial JSON servers, {HTTP_CLIENTS} clients",
        harness.get("concurrent"),
        "req/s",
        "`python -m benchmarks.run --check-peer`: the same load generator against servers that "
        "answer each request with a fixed JSON-RPC result and do nothing else (`node:http`, and "
        "two Python ones on trio). The load generator's CPU per call is what the harness itself "
        "costs the machine for each request it makes; these rates are the most it can tell apart.",
    )
    throughput_table(
        "Harness check: trivial JSON servers, one client",
        harness.get("sequential"),
        "req/s",
        "The same, one call at a time.",
    )

    memory = results.get("memory")
    if memory:
        lines += [
            "## Memory per idle HTTP session",
            "",
            "RSS of the server process before and after opening "
            f"{memory[next(iter(memory))]['sessions']} "
            "sessions (initialize + initialized, then idle), divided by the count.",
            "",
            "| server | KiB per session | RSS before MiB | RSS after MiB |",
            "|---|---:|---:|---:|",
        ]
        for key, row in memory.items():
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['kib_per_session'], 1)} | "
                f"{_fmt(row['rss_before_mib'], 1)} | {_fmt(row['rss_after_mib'], 1)} |"
            )
        lines.append("")

    startup = results.get("startup")
    if startup:
        lines += [
            "## Cold start and import time",
            "",
            "Cold start: spawn of the stdio server until its `initialize` answer arrives. "
            'Import: wall time of `python -c "import X"` (the interpreter\'s own start '
            "included; see the first row).",
            "",
            "| server | cold start s | runs |",
            "|---|---:|---|",
        ]
        for key, row in startup["cold_start"].items():
            lines.append(
                f"| {label.get(key, key)} | {_fmt(row['seconds'], 3)} | "
                f"{', '.join(_fmt(x, 3) for x in row['runs'])} |"
            )
        lines += ["", "| import | s | runs |", "|---|---:|---|"]
        for key, row in startup["import"].items():
            lines.append(
                f"| `{key}` | {_fmt(row['seconds'], 3)} | {', '.join(_fmt(x, 3) for x in row['runs'])} |"
            )
        lines.append("")

    codec = results.get("codec")
    if codec:
        lines += [
            "## Codec: full wire path",
            "",
            "Decode = parse the JSON-RPC envelope and validate the payload into typed objects; "
            "encode = typed object to JSON-RPC bytes (see `wire_codec.py`). Microseconds per "
            "message, decode + encode.",
            "",
            "| revision | message | bytes | ours µs | SDK µs | SDK / ours |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for row in codec["rows"]:
            lines.append(
                f"| {row['revision']} | {row['message']} | {row['size']} | "
                f"{_fmt(row['ours_us'], 1)} | {_fmt(row['sdk_us'], 1)} | "
                f"{_fmt(row['ratio'], 1)} |"
            )
        lines += [
            "",
            f"Geometric mean of the ratios: {codec['geomean_ratio']:.1f}×; lowest "
            f"{codec['min_ratio']:.1f}× ({codec['compared']} messages the SDK models).",
            "",
        ]

    own = results.get("own_clients")
    if own:
        lines += [
            "## Each implementation's own client against its own server",
            "",
            "Sequential `tools/call` through the client library users would use: "
            "`mcp_trio.client`, the SDK's `mcp.Client` (handshake mode), `fastmcp.Client`, the "
            "TypeScript SDK's `Client` (on Node).",
            "",
            "| transport | client → server | calls/s | p50 ms | p99 ms |",
            "|---|---|---:|---:|---:|",
        ]
        names = {
            "ours": "mcp-trio → mcp-trio",
            "sdk": "SDK → SDK low-level",
            "fastmcp": "FastMCP → FastMCP",
            "ts": "TypeScript SDK → TypeScript SDK low-level",
        }
        for transport, rows in own.items():
            for key, row in rows.items():
                lines.append(
                    f"| {transport} | {names[key]} | {_fmt(row['rate'])} | "
                    f"{_fmt(row['p50_ms'], 2)} | {_fmt(row['p99_ms'], 2)} |"
                )
        lines.append("")

    errors = results.get("errors")
    if errors:
        lines += ["## Workloads that failed", ""]
        lines += [f"- {name}: `{message}`" for name, message in errors.items()]
        lines.append("")
    return "\n".join(lines)


def _with_spread(row: dict[str, Any], name: str) -> str:
    """``row``'s median ``<name>_us`` with its runs' lowest and highest, ``median (low–high)``."""
    value = _fmt(row.get(f"{name}_us"), 1)
    runs = row.get(f"{name}_runs") or []
    return f"{value} ({min(runs):,.1f}–{max(runs):,.1f})" if len(runs) > 1 else value


def harness_lines(results: dict[str, Any]) -> list[str]:
    """The harness check's figures as lines to print (none when it did not run)."""
    harness = results.get("harness") or {}
    lines = []
    for name, rows in harness.items():
        for key, row in rows.items():
            lines.append(
                f"  harness check, {name}: {key}: {row['rate']:,.0f} req/s, server CPU "
                f"{_with_spread(row, 'server_cpu')} µs/call, load generator CPU "
                f"{_fmt(row.get('client_cpu_us'), 1)} µs/call"
            )
    return lines


def _runs(row: dict[str, Any], digits: int) -> str:
    """Each run's rate, with the CPU placement of server and load generator where recorded."""
    rates = [_fmt(x, digits) for x in row.get("runs", [])]
    placement = row.get("placement") or []
    if len(placement) == len(rates):
        rates = [f"{rate} ({where})" for rate, where in zip(rates, placement, strict=True)]
    return ", ".join(rates)


def write_chart(results: dict[str, Any], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = [t for t in targets(results) if t.value is not None]
    if not rows:
        return False
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(rows) + 1.5))
    names = [t.name + ("" if t.higher_is_better else " (lower is better)") for t in rows][::-1]
    values = [t.value for t in rows][::-1]
    goals = [t.goal for t in rows][::-1]
    colors = ["#2e7d32" if t.met else "#c62828" for t in rows][::-1]
    ax.barh(names, values, color=colors)
    for i, (value, goal) in enumerate(zip(values, goals, strict=True)):
        ax.plot([goal, goal], [i - 0.4, i + 0.4], color="black", linewidth=2)
        ax.text(
            value * 1.04,
            i,
            f"{value:.2f}×",
            va="center",
            fontsize=8,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 1},
        )
    ax.set_xscale("log")
    ax.set_xlabel("ratio (log scale); black tick = target; green = met, red = missed")
    ax.set_title(f"mcp-trio ratios, {results['meta']['date']} ({results['meta']['mode']} mode)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def _kept_analysis() -> str:
    if not RESULTS_MD.exists():
        return ""
    text = RESULTS_MD.read_text()
    index = text.find(ANALYSIS_MARKER)
    return "" if index < 0 else text[index + len(ANALYSIS_MARKER) :].strip("\n")
