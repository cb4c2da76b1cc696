"""The benchmark harness's own pieces (``python -m benchmarks.run``): every peer warmed alike,
counted in calls; the server's CPU per call read from its process alone, beside the load
generator's own; the spread of the runs in the targets; the stdio tables' one-CPU variants; the
harness check (``--check-peer``).

Real processes throughout: a stdio server that burns a known CPU time per request, the trivial
HTTP JSON responder of the harness check, ``mcp-trio serve`` itself.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks import loadgen, run
from benchmarks._run_common import FULL, QUICK, RESULTS_JSON
from benchmarks._run_report import harness_lines, render_markdown
from benchmarks._run_servers import peers
from benchmarks._run_targets import _paired, targets
from benchmarks._run_workloads import summarize
from tests._support.paths import ROOT

#: A line echo (checked by id) that spends ``BURN`` seconds of CPU time on every line first.
BURNER = """
import os, sys, time
BURN = float(sys.argv[1])
out = sys.stdout.buffer
for line in sys.stdin.buffer:
    start = time.process_time()
    while time.process_time() - start < BURN:
        pass
    out.write(line)
    out.flush()
"""


@pytest.fixture
def burner() -> Iterator[loadgen.StdioServer]:
    server = loadgen.StdioServer([sys.executable, "-c", BURNER, "0.002"], cwd=str(ROOT))
    try:
        yield server
    finally:
        server.close()


def test_the_servers_cpu_per_call_is_its_process_alone(burner: loadgen.StdioServer) -> None:
    """A server that burns 2 ms of CPU per request measures about 2 ms per call; the load
    generator's own CPU per call is reported apart, and is far below it."""
    for measured in (
        loadgen.stdio_sequential(burner, 0.4, check="id", warmup=0.05),
        loadgen.stdio_pipelined(burner, 0.4, depth=8, check="id"),
    ):
        assert measured.calls > 10
        assert measured.cpu_per_call is not None and measured.client_cpu_per_call is not None
        # (CPU time is counted in clock ticks of 10 ms: a few of them either way over the run)
        assert 0.0015 <= measured.cpu_per_call <= 0.01, measured.cpu_per_call
        assert measured.client_cpu_per_call < measured.cpu_per_call / 2, measured.client_cpu_per_call


def test_a_warm_up_is_counted_in_calls_and_every_answer_checked(burner: loadgen.StdioServer) -> None:
    first = burner.next_id()
    loadgen.stdio_warm_up(burner, 40, check="id")
    assert burner.next_id() == first + 41  # 40 requests, one after the other
    with pytest.raises(loadgen.LoadError, match="has no result"):  # (a line echo is no MCP answer)
        loadgen.stdio_warm_up(burner, 1)


@pytest.fixture
def trivial_http() -> Iterator[tuple[loadgen.HttpTarget, int]]:
    port = loadgen.free_port()
    argv = peers(sys.executable)["trivial_h11"].http(port)  # type: ignore[misc]
    process = subprocess.Popen(argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        loadgen.wait_for_port("127.0.0.1", port, 30, lambda: process.poll() is None)
        yield loadgen.HttpTarget("127.0.0.1", port), process.pid
    finally:
        process.terminate()
        process.wait(10)


def test_http_warm_up_and_the_load_generators_own_cost(trivial_http: tuple[loadgen.HttpTarget, int]) -> None:
    target, pid = trivial_http
    before = loadgen.http_calls(target, 0.0, clients=1, warmup=0.0, server_pid=pid)  # (a session)
    assert before.calls == 0
    loadgen.http_warm_up(target, 300, clients=8)
    measured = loadgen.http_calls(target, 0.3, clients=4, warmup=0.05, server_pid=pid)
    assert measured.calls > 0
    assert measured.cpu_per_call is not None and 0 < measured.cpu_per_call < 0.05
    assert measured.client_cpu_per_call is not None and 0 < measured.client_cpu_per_call < 0.05
    row = summarize([measured, measured])
    assert row["client_cpu_runs"] == [round(measured.client_cpu_per_call * 1e6, 1)] * 2
    assert row["server_cpu_us"] == pytest.approx(measured.cpu_per_call * 1e6)


def test_every_mode_warms_with_thousands_of_calls() -> None:
    assert QUICK.warmup_calls >= 1_000 and FULL.warmup_calls >= 10_000


def _results() -> dict[str, Any]:
    """The committed results, with runs whose ratios differ from run to run, both stdio
    variants and a harness check."""
    results = copy.deepcopy(json.loads(RESULTS_JSON.read_text()))
    results["http"].pop("concurrent_split", None)  # (the TS targets read the 64-client table then)
    row = lambda runs, cpu: {  # noqa: E731
        "rate": sorted(runs)[len(runs) // 2],
        "p50_ms": 1.0,
        "p99_ms": 2.0,
        "runs": runs,
        "server_cpu_us": sorted(cpu)[len(cpu) // 2],
        "server_cpu_runs": cpu,
        "client_cpu_us": 20.0,
        "client_cpu_runs": [20.0, 20.0, 20.0],
    }
    results["http"]["concurrent"]["ours_httptools"] = row([6000.0, 7000.0, 8000.0], [100.0, 90.0, 80.0])
    results["http"]["concurrent"]["ts"] = row([5000.0, 7000.0, 6400.0], [120.0, 110.0, 130.0])
    stdio = results["stdio"]
    stdio["sequential_one_cpu"] = copy.deepcopy(stdio["sequential"])
    stdio["sequential_one_cpu"]["ours"]["rate"] = 12345.0
    stdio["pipelined_one_cpu"] = copy.deepcopy(stdio["pipelined"])
    results["harness"] = {
        "concurrent": {"trivial_node": row([30000.0, 31000.0, 29000.0], [17.0, 18.0, 16.0])},
        "sequential": {"trivial_node": row([3000.0, 3100.0, 2900.0], [40.0, 41.0, 39.0])},
    }
    results["meta"]["warmup_calls"] = 10_000
    return results


def test_the_targets_give_the_run_by_run_range() -> None:
    found = {t.name: t for t in targets(_results())}
    rate = found["HTTP ×64, httptools front door vs TypeScript SDK"]
    assert rate.value == pytest.approx(7000 / 6400)
    assert rate.spread == pytest.approx((1.0, 1.25))  # 7000/7000 .. 8000/6400: not faster every run
    cpu = found["HTTP ×64 server CPU per request, httptools front door vs TypeScript SDK"]
    assert cpu.spread == pytest.approx((80 / 130, 100 / 120))
    # the sequential stdio targets are the one-CPU variant's
    sequential = found["stdio sequential (one CPU) vs SDK low-level"]
    assert sequential.value == pytest.approx(
        12345.0 / _results()["stdio"]["sequential_one_cpu"]["sdk"]["rate"]
    )
    assert _paired([1.0, 2.0], [1.0]) is None and _paired(None, [1.0]) is None


def test_the_ts_targets_read_the_table_where_each_process_has_a_cpu_of_its_own() -> None:
    results = _results()
    concurrent = results["http"]["concurrent"]
    results["http"]["concurrent_split"] = {
        "ts": {**concurrent["ts"], "server_cpu_runs": [80.0, 75.0, 85.0], "server_cpu_us": 80.0},
        "ours_httptools": concurrent["ours_httptools"],
        "ours": concurrent["ours"],
    }
    found = {t.name: t for t in targets(results)}
    cpu = found["HTTP ×64 (CPUs of their own) server CPU per request, httptools front door vs TypeScript SDK"]
    assert cpu.value == pytest.approx(90.0 / 80.0) and cpu.met is False
    assert cpu.spread == pytest.approx((80 / 85, 100 / 80))
    assert "HTTP ×64, httptools front door vs TypeScript SDK" not in found
    assert "## Streamable HTTP, 64 concurrent clients, CPUs of their own\n" in render_markdown(
        results, peers(sys.executable)
    )


def test_the_report_shows_both_stdio_variants_the_spread_and_the_harness_check() -> None:
    results = _results()
    report = render_markdown(results, peers(sys.executable))
    assert "Every server answered 10,000 calls after it started" in report
    for title in (
        "## stdio, sequential tools/call\n",
        "## stdio, sequential tools/call, one CPU\n",
        "## stdio, pipelined (256 in flight), one CPU\n",
        "## Harness check: trivial JSON servers, 64 clients\n",
    ):
        assert title in report
    assert "| target | wanted | measured | run by run | |" in report
    assert "| 1.09× | 1.00× to 1.25× | **missed** |" in report
    assert "| 90.0 (80.0–100.0) | 20.0 |" in report  # server CPU median (runs), harness CPU
    assert "| trivial JSON on bare node:http (harness check) | 30,000 |" in report
    (line, *_) = harness_lines(results)
    assert "trivial_node: 30,000 req/s, server CPU 17.0 (16.0–18.0) µs/call" in line
    assert "load generator CPU 20.0 µs/call" in line


@pytest.fixture
def suite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[set[str] | None]:
    """Fakes the measurements (the results above); records each run's ``only``."""
    calls: list[set[str] | None] = []

    def fake_run_suite(python: str, mode: Any, only: set[str] | None) -> dict[str, Any]:
        calls.append(only)
        results = _results()
        return {k: v for k, v in results.items() if not only or k in only or k in ("meta", "errors")}

    monkeypatch.setattr(run, "run_suite", fake_run_suite)
    monkeypatch.setattr(run, "_in_venv", lambda venv: True)
    monkeypatch.chdir(tmp_path)
    return calls


def test_check_peer_runs_the_harness_check_alone(
    suite: list[set[str] | None], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run.main(["--check-peer", "--results-dir", str(tmp_path / "r")]) == 0
    assert suite == [{"harness"}]
    printed = capsys.readouterr().out
    assert "harness check, concurrent: trivial_node: 30,000 req/s" in printed
    assert "not measured" not in printed  # (the targets of a partial run are left out)
    (folder,) = (tmp_path / "r").iterdir()
    assert "## Harness check" in (folder / "RESULTS.md").read_text()
    for refused in (["--check-peer", "--update"], ["--check-peer", "--only", "http"]):
        with pytest.raises(SystemExit) as exited:
            run.main(refused)
        assert exited.value.code == 2
    assert suite == [{"harness"}]  # refused before measuring anything


def test_the_run_records_the_hosts_steal_time() -> None:
    from benchmarks._run_common import cpu_ticks, steal_share

    ticks = cpu_ticks()
    assert ticks is not None and ticks[0] > ticks[1] >= 0  # (Linux: /proc/stat)
    assert steal_share((100, 10), (200, 30)) == pytest.approx(0.2)
    assert steal_share(None, ticks) is None and steal_share(ticks, ticks) is None
    results = _results()
    results["meta"]["steal"] = 0.031
    assert "(`steal`): 3.1%." in render_markdown(results, peers(sys.executable))


def test_the_one_cpu_variant_pins_the_server_and_the_load_generator_then_lets_go() -> None:
    import os

    from benchmarks._run_workloads import one_cpu

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        before = os.sched_getaffinity(child.pid), os.sched_getaffinity(0)
        with one_cpu(child.pid):
            (cpu,) = os.sched_getaffinity(0)
            assert os.sched_getaffinity(child.pid) == {cpu}
        assert (os.sched_getaffinity(child.pid), os.sched_getaffinity(0)) == before
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)


def test_cpus_of_their_own_puts_the_server_and_the_load_generator_apart_then_lets_go() -> None:
    import os

    from benchmarks._run_workloads import cpus_of_their_own

    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("this test needs two CPUs to place the processes on")
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        before = os.sched_getaffinity(child.pid), os.sched_getaffinity(0)
        with cpus_of_their_own(child.pid):
            (mine,) = os.sched_getaffinity(0)
            (its,) = os.sched_getaffinity(child.pid)
            assert mine != its
        assert (os.sched_getaffinity(child.pid), os.sched_getaffinity(0)) == before
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
