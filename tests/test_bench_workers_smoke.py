"""benchmarks/bench_workers.py still runs: echo calls/s with 1 and 2 workers, and the ratio."""

from __future__ import annotations

import json

import pytest

from benchmarks import bench_workers


def test_the_workers_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_workers.main(["--duration", "0.3", "--clients", "4", "--workers", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["clients"] == 4 and set(report["workers"]) == {"1", "2"}
    assert report["workers"]["1"]["ratio"] == 1.0
    assert all(row["rate"] > 0 for row in report["workers"].values())
