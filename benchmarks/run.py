"""Run the benchmark suite: mcp-trio against the official Python and TypeScript SDKs and FastMCP.

Usage (from the project root)::

    python3 -m benchmarks.run            # quick mode (under two minutes once installed)
    python3 -m benchmarks.run --full     # longer runs, every peer in every workload
    python3 -m benchmarks.run --check-peer   # what the load generator costs per request

It creates (once) a virtual environment with the pinned peers of ``benchmarks/requirements.txt`` and
this checkout (editable), by default in ``~/.cache/mcp-trio-bench/venv`` (``--venv`` or
``$MCP_TRIO_BENCH_VENV`` to change it), re-runs itself inside it, installs (once) Node and the
pinned TypeScript SDK next to it (``_run_node``), starts every server, measures, and writes
``RESULTS.md``, ``ratios.png`` and the raw figures in ``results.json`` into a folder of its own,
``benchmarks/results/<UTC date and time>/`` (ignored by git). ``--update`` writes them over the
committed ``benchmarks/RESULTS.md``, ``benchmarks/ratios.png`` and ``benchmarks/results.json``
instead; it refuses a partial run (``--only``), so the committed figures always come from one whole
run.

Every figure is the median of ``repeats`` runs; the servers of a workload
run side by side and the repeats go round them in turn, so a change in the
machine's load hits them all alike.  Ratios compare figures of the same run.
The load generator (``loadgen.py``) speaks raw JSON-RPC to every server.

This module is the command line and the order of the workloads; the rest is in private modules, one
job each: ``_run_common`` (paths, modes, helpers), ``_run_env`` (the virtual environment, the
machine and the versions), ``_run_node`` (Node and the TypeScript SDK), ``_run_servers`` (the peers
and starting them), ``_run_workloads`` (the measurements), ``_run_targets`` (the ratios wanted) and
``_run_report`` (``RESULTS.md`` and the chart).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import _run_node, _run_servers
from benchmarks._run_common import (
    ANALYSIS_MARKER,
    CHART,
    DEFAULT_VENV,
    FULL,
    QUICK,
    RESULTS_DIR,
    RESULTS_JSON,
    RESULTS_MD,
    ROOT,
    Mode,
    cpu_ticks,
    loadavg,
    log,
    steal_share,
)
from benchmarks._run_env import _in_venv, ensure_venv, machine, versions
from benchmarks._run_report import _kept_analysis, _x, harness_lines, render_markdown, write_chart
from benchmarks._run_servers import peers
from benchmarks._run_targets import targets
from benchmarks._run_workloads import (
    run_codec,
    run_cold_start,
    run_harness_check,
    run_http,
    run_memory,
    run_own_clients,
    run_stdio,
)

COMMITTED = (RESULTS_MD, RESULTS_JSON, CHART)


def run_suite(python: str, mode: Mode, only: set[str] | None) -> dict[str, Any]:
    ts = _run_node.ensure_ts_sdk()
    table = peers(python, ts)
    started = time.perf_counter()
    ticks = cpu_ticks()
    results: dict[str, Any] = {
        "meta": {
            "mode": mode.name,
            "repeats": mode.repeats,
            "duration": mode.duration,
            "cold_repeats": mode.cold_repeats,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "versions": {
                **versions(),
                "node": ts.node_version if ts else "not installed",
                "@modelcontextprotocol/sdk (TypeScript)": ts.sdk_version if ts else "not installed",
            },
            "warmup_calls": mode.warmup_calls,
            "load_before": loadavg(),
        },
        "errors": {},
    }
    workloads: list[tuple[str, Callable[[], Any]]] = [
        ("startup", lambda: run_cold_start(python, table, mode)),
        ("codec", lambda: run_codec(python, mode)),
        ("stdio", lambda: run_stdio(table, mode)),
        ("http", lambda: run_http(table, mode)),
        ("memory", lambda: run_memory(table, mode)),
        ("own_clients", lambda: run_own_clients(python, table, mode)),
        ("harness", lambda: run_harness_check(table, mode)),
    ]
    for name, workload in workloads:
        if only and name not in only:
            continue
        log(f"{name} ...")
        try:
            results[name] = workload()
        except Exception as exc:  # noqa: BLE001 - record it, go on with the others
            traceback.print_exc()
            results["errors"][name] = f"{type(exc).__name__}: {exc}"
    results["meta"]["load_after"] = loadavg()
    results["meta"]["steal"] = steal_share(ticks, cpu_ticks())
    results["meta"]["elapsed_s"] = time.perf_counter() - started
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="the default: short runs (< 2 min)")
    group.add_argument("--full", action="store_true", help="longer runs, every peer (< 20 min)")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(os.environ.get("MCP_TRIO_BENCH_VENV", DEFAULT_VENV)),
        help=f"the benchmark environment (default {DEFAULT_VENV})",
    )
    parser.add_argument(
        "--only",
        help="comma-separated workloads: startup, codec, stdio, http, memory, own_clients, harness",
    )
    parser.add_argument(
        "--check-peer",
        action="store_true",
        help="the harness check alone (--only harness): trivial Node and Python HTTP JSON servers "
        "through the load generator, with its own CPU time per request",
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the report")
    parser.add_argument(
        "--update",
        action="store_true",
        help="write over the committed benchmarks/RESULTS.md, results.json and ratios.png "
        "(a whole run only, not with --only)",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        help=f"where a run's own folder goes without --update (default {RESULTS_DIR.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--from-json",
        type=Path,
        nargs="?",
        const=RESULTS_JSON,
        help="measure nothing: write RESULTS.md and ratios.png again from a results.json "
        "(default: the committed one)",
    )
    args = parser.parse_args(argv)
    if args.check_peer:
        if args.only or args.update:
            parser.error("--check-peer runs the harness check alone: not with --only or --update")
        args.only = "harness"
    if args.update and args.only:
        parser.error("--update rewrites the committed results: it needs a whole run, not --only")
    venv = args.venv.expanduser().resolve()
    _run_servers.LOGS = venv.parent / "logs"
    _run_node.CACHE = venv.parent / "node"
    if not _in_venv(venv):
        python = ensure_venv(venv)
        os.chdir(ROOT)
        forwarded = list(sys.argv[1:] if argv is None else argv)
        os.execv(str(python), [str(python), "-m", "benchmarks.run", *forwarded])
    os.chdir(ROOT)
    if args.from_json:
        results = json.loads(args.from_json.read_text())
    else:
        mode = FULL if args.full else QUICK
        only = set(args.only.split(",")) if args.only else None
        log(f"mode {mode.name}; python {sys.executable}; load {loadavg()}")
        results = run_suite(sys.executable, mode, only)
        if only:
            results["meta"]["only"] = sorted(only)
        if args.no_write:
            print(json.dumps(results, indent=1, default=str))
            return 0
    if args.update and results["meta"].get("only"):
        partial = ",".join(results["meta"]["only"])
        log(f"{args.from_json} holds a partial run ({partial}): not written")
        return 2
    written = write_results(results, COMMITTED if args.update else run_folder(args.results_dir))
    log("wrote " + ", ".join(_shown(path) for path in written))
    for target in targets(results):
        if target.met is None and results["meta"].get("only"):
            continue
        mark = {True: "met", False: "MISSED", None: "not measured"}[target.met]
        print(f"  {mark:>12}  {target.name}: {_x(target.value)} (wanted {target.wanted})")
    for line in harness_lines(results):
        print(line)
    return 0


def run_folder(results_dir: Path) -> tuple[Path, Path, Path]:
    """``RESULTS.md``, ``results.json`` and ``ratios.png`` in a new folder under ``results_dir``."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    folder = results_dir / stamp
    n = 1
    while folder.exists():
        n += 1
        folder = results_dir / f"{stamp}-{n}"
    folder.mkdir(parents=True)
    return folder / RESULTS_MD.name, folder / RESULTS_JSON.name, folder / CHART.name


def write_results(results: dict[str, Any], paths: tuple[Path, Path, Path]) -> list[Path]:
    """Write the report, the raw figures and the chart; the hand-written analysis comes along.

    The analysis is the section after the marker of the committed ``RESULTS.md``. Returns the
    files written (the chart only with matplotlib installed).
    """
    markdown, raw, chart = paths
    raw.write_text(json.dumps(results, indent=1, default=str) + "\n")
    report = render_markdown(results, peers(sys.executable))
    kept = _kept_analysis()
    markdown.write_text(report + "\n" + ANALYSIS_MARKER + "\n\n" + kept + ("\n" if kept else ""))
    return [markdown, raw] + ([chart] if write_chart(results, chart) else [])


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


if __name__ == "__main__":
    sys.exit(main())
