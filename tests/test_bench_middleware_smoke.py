"""benchmarks/bench_middleware.py runs and reports every configuration against the one without."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_middleware.py"


def test_the_middleware_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("_bench_middleware_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--quick", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["middlewares"] for r in rows] == [0, 1, 5]
    assert rows[0]["ratio"] == 1.0
    assert all(r["calls_per_s"] > 0 and r["ratio"] > 0 for r in rows)
