"""benchmarks/bench_middleware.py runs and reports every configuration against the one without."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf


def test_the_middleware_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/bench_middleware.py", "--quick", "--json"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = json.loads(done.stdout)["rows"]
    assert [r["middlewares"] for r in rows] == [0, 1, 5]
    assert rows[0]["ratio"] == 1.0
    assert all(r["calls_per_s"] > 0 and r["ratio"] > 0 for r in rows)
