"""benchmarks/fairness.py runs: the other session is timed alone and during the batches, and
every batch was answered whole."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf


def test_the_fairness_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.fairness", "--members", "200", "--seconds", "1"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["door"] == "h11"
    for key in ("alone", "during batches"):
        assert lines[key].startswith("p50 ") and " calls)" in lines[key], lines[key]
    count, _, rest = lines["batches"].partition(" of ")
    assert int(count) >= 1 and rest == "200 calls"
