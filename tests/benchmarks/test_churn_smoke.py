"""benchmarks/churn.py runs: the client is timed alone and during the attack, and the attack
says what it did."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf


def test_the_churn_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.churn", "--leavers", "60", "--slowloris", "20", "--seconds", "1"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    assert lines["door"] == "h11"
    for key in ("alone", "during"):
        assert lines[key].startswith("p50 ") and " calls)" in lines[key], lines[key]
    attack = json.loads(lines["attack"])
    assert attack["left"] == 60 and attack["slowloris opened"] == 20
