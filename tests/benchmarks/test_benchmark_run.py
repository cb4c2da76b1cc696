"""``python -m benchmarks.run``'s write path, without measuring anything.

A run writes into a folder of its own under ``benchmarks/results/``; only ``--update`` writes over
the committed ``RESULTS.md``, ``results.json`` and ``ratios.png``, and never for a partial run.
The suite itself is replaced by the committed figures, and the benchmark environment by this one.
"""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import run
from benchmarks._run_common import ANALYSIS_MARKER, CHART, RESULTS_JSON, RESULTS_MD

pytestmark = pytest.mark.perf

COMMITTED = (RESULTS_MD, RESULTS_JSON, CHART)


def _digests() -> dict[Path, str]:
    return {path: hashlib.sha256(path.read_bytes()).hexdigest() for path in COMMITTED}


@pytest.fixture
def suite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[set[str] | None]:
    """Fakes the measurements with the committed figures; records each run's ``only``."""
    committed = json.loads(RESULTS_JSON.read_text())
    calls: list[set[str] | None] = []

    def fake_run_suite(python: str, mode: Any, only: set[str] | None) -> dict[str, Any]:
        calls.append(only)
        results = copy.deepcopy(committed)
        if only:
            results = {k: v for k, v in results.items() if k in only or k in ("meta", "errors")}
        return results

    monkeypatch.setattr(run, "run_suite", fake_run_suite)
    monkeypatch.setattr(run, "_in_venv", lambda venv: True)
    monkeypatch.chdir(tmp_path)  # main() moves to the project root; this moves back after
    return calls


def test_a_run_writes_a_folder_of_its_own(suite: list[set[str] | None], tmp_path: Path) -> None:
    before = _digests()
    assert run.main(["--results-dir", str(tmp_path / "results")]) == 0
    assert _digests() == before
    (folder,) = (tmp_path / "results").iterdir()
    assert json.loads((folder / "results.json").read_text()) == json.loads(RESULTS_JSON.read_text())
    report = (folder / "RESULTS.md").read_text()
    assert report.startswith("# Benchmark results") and ANALYSIS_MARKER in report
    # the hand-written analysis comes along
    assert report.split(ANALYSIS_MARKER)[1] == RESULTS_MD.read_text().split(ANALYSIS_MARKER)[1]
    # a second run in the same second gets another folder
    assert run.main(["--results-dir", str(tmp_path / "results")]) == 0
    assert len(list((tmp_path / "results").iterdir())) == 2


def test_a_partial_run_never_touches_the_committed_results(
    suite: list[set[str] | None], tmp_path: Path
) -> None:
    before = _digests()
    assert run.main(["--only", "codec", "--results-dir", str(tmp_path / "r")]) == 0
    assert _digests() == before
    (folder,) = (tmp_path / "r").iterdir()
    assert json.loads((folder / "results.json").read_text())["meta"]["only"] == ["codec"]
    with pytest.raises(SystemExit) as refused:
        run.main(["--only", "codec", "--update"])
    assert refused.value.code == 2
    assert suite == [{"codec"}]  # refused before measuring anything
    # nor from a partial run's results.json
    partial = folder / "results.json"
    assert run.main(["--from-json", str(partial), "--update"]) == 2
    assert _digests() == before


def test_update_writes_the_committed_files(
    suite: list[set[str] | None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = (tmp_path / "RESULTS.md", tmp_path / "results.json", tmp_path / "ratios.png")
    monkeypatch.setattr(run, "COMMITTED", targets)
    before = _digests()
    assert run.main(["--update"]) == 0
    assert suite == [None]
    assert targets[0].read_text().startswith("# Benchmark results")
    assert json.loads(targets[1].read_text()) == json.loads(RESULTS_JSON.read_text())
    assert _digests() == before


def test_the_targets_table_is_marked_for_the_documentation() -> None:
    """docs/guide/benchmarks.md includes the committed table between these markers."""
    text = RESULTS_MD.read_text()
    table = text.split("<!-- --8<-- [start:targets] -->\n", 1)[1].split("<!-- --8<-- [end:targets] -->", 1)[0]
    rows = table.strip().splitlines()
    assert rows[0] == "| target | wanted | measured | run by run | |" and len(rows) > 2
    assert all(row.startswith("|") and row.endswith("|") for row in rows)
    page = (RESULTS_MD.parents[1] / "docs" / "guide" / "benchmarks.md").read_text()
    assert '--8<-- "benchmarks/RESULTS.md:targets"' in page


def test_a_sequential_stdio_run_records_where_server_and_client_ran() -> None:
    """Server and load generator on one CPU or on two: the figure depends on it (README)."""
    import os
    import subprocess
    import sys

    from benchmarks._run_report import _runs
    from benchmarks._run_workloads import _placement

    if len(os.sched_getaffinity(0)) < 2:
        pytest.fail("this test needs two CPUs to place the processes on")
    first, second = sorted(os.sched_getaffinity(0))[:2]
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {first})
    try:
        for cpu, expected in ((first, "same"), (second, "different")):
            child = subprocess.Popen(
                [sys.executable, "-c", "import sys; sys.stdin.read()"],
                stdin=subprocess.PIPE,
                preexec_fn=lambda cpu=cpu: os.sched_setaffinity(0, {cpu}),  # noqa: PLW1509
            )
            try:
                assert _placement(child.pid) == expected
            finally:
                assert child.stdin is not None
                child.stdin.close()
                child.wait(10)
    finally:
        os.sched_setaffinity(0, before)
    assert _placement(2**22 + 12345) == "unknown"  # no such process
    row = {"runs": [33012.4, 16700.0], "placement": ["same", "different"]}
    assert _runs(row, 0) == "33,012 (same), 16,700 (different)"
    assert _runs({"runs": [5.0]}, 1) == "5.0"
