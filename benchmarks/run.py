"""Run the benchmark suite: mcp-trio against the official Python SDK and FastMCP.

Usage (from the project root)::

    python3 -m benchmarks.run            # quick mode (under two minutes once installed)
    python3 -m benchmarks.run --full     # longer runs, every peer in every workload

It creates (once) a virtual environment with the pinned peers of
``benchmarks/requirements.txt`` and this checkout (editable), by default in
``~/.cache/mcp-trio-bench/venv`` (``--venv`` or ``$MCP_TRIO_BENCH_VENV`` to
change it), re-runs itself inside it, starts every server, measures, and
writes ``benchmarks/RESULTS.md``, ``benchmarks/ratios.png`` and the raw
figures in ``benchmarks/results.json``.

Every figure is the median of ``repeats`` runs; the servers of a workload
run side by side and the repeats go round them in turn, so a change in the
machine's load hits them all alike.  Ratios compare figures of the same run.
The load generator (``loadgen.py``) speaks raw JSON-RPC to every server.

This module is the command line and the order of the workloads; the rest is in private modules,
one job each: ``_run_common`` (paths, modes, helpers), ``_run_env`` (the virtual environment,
the machine and the versions), ``_run_servers`` (the peers and starting them), ``_run_workloads``
(the measurements), ``_run_targets`` (the ratios wanted) and ``_run_report`` (``RESULTS.md`` and
the chart).
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

from benchmarks import _run_servers
from benchmarks._run_common import (
    ANALYSIS_MARKER,
    CHART,
    DEFAULT_VENV,
    FULL,
    QUICK,
    RESULTS_JSON,
    RESULTS_MD,
    ROOT,
    Mode,
    loadavg,
    log,
)
from benchmarks._run_env import _in_venv, ensure_venv, machine, versions
from benchmarks._run_report import _kept_analysis, _x, render_markdown, write_chart
from benchmarks._run_servers import peers
from benchmarks._run_targets import targets
from benchmarks._run_workloads import (
    run_codec,
    run_cold_start,
    run_http,
    run_memory,
    run_own_clients,
    run_stdio,
)


def run_suite(python: str, mode: Mode, only: set[str] | None) -> dict[str, Any]:
    table = peers(python)
    started = time.perf_counter()
    results: dict[str, Any] = {
        "meta": {
            "mode": mode.name,
            "repeats": mode.repeats,
            "duration": mode.duration,
            "cold_repeats": mode.cold_repeats,
            "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": machine(),
            "versions": versions(),
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
    results["meta"]["elapsed_s"] = time.perf_counter() - started
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--quick", action="store_true", help="the default: short runs (< 2 min)")
    group.add_argument("--full", action="store_true", help="longer runs, every peer (< 15 min)")
    parser.add_argument(
        "--venv",
        type=Path,
        default=Path(os.environ.get("MCP_TRIO_BENCH_VENV", DEFAULT_VENV)),
        help=f"the benchmark environment (default {DEFAULT_VENV})",
    )
    parser.add_argument(
        "--only", help="comma-separated workloads: startup, codec, stdio, http, memory, own_clients"
    )
    parser.add_argument("--no-write", action="store_true", help="print, do not write the report")
    parser.add_argument(
        "--from-json",
        action="store_true",
        help="measure nothing: rewrite RESULTS.md and ratios.png from results.json",
    )
    args = parser.parse_args(argv)
    venv = args.venv.expanduser().resolve()
    _run_servers.LOGS = venv.parent / "logs"
    if not _in_venv(venv):
        python = ensure_venv(venv)
        os.chdir(ROOT)
        forwarded = list(sys.argv[1:] if argv is None else argv)
        os.execv(str(python), [str(python), "-m", "benchmarks.run", *forwarded])
    os.chdir(ROOT)
    if args.from_json:
        results = json.loads(RESULTS_JSON.read_text())
    else:
        mode = FULL if args.full else QUICK
        only = set(args.only.split(",")) if args.only else None
        log(f"mode {mode.name}; python {sys.executable}; load {loadavg()}")
        results = run_suite(sys.executable, mode, only)
        if args.no_write:
            print(json.dumps(results, indent=1, default=str))
            return 0
        RESULTS_JSON.write_text(json.dumps(results, indent=1, default=str) + "\n")
    report = render_markdown(results, peers(sys.executable))
    kept = _kept_analysis()
    RESULTS_MD.write_text(report + "\n" + ANALYSIS_MARKER + "\n\n" + kept + ("\n" if kept else ""))
    charted = write_chart(results, CHART)
    log(
        f"wrote {RESULTS_MD.relative_to(ROOT)}"
        + (f" and {CHART.relative_to(ROOT)}" if charted else "")
    )
    for target in targets(results):
        mark = {True: "met", False: "MISSED", None: "not measured"}[target.met]
        print(f"  {mark:>12}  {target.name}: {_x(target.value)} (wanted {target.wanted})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
