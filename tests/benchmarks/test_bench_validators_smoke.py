"""benchmarks/bench_validators.py runs, and the two validators agree on its cases."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf

BENCH = ROOT / "benchmarks" / "bench_validators.py"


def test_the_validator_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    spec = importlib.util.spec_from_file_location("_bench_validators_under_test", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    assert module.main(["--quick", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {(r["schema"], r["operation"]) for r in rows} == {
        (schema, op)
        for schema in ("tool input", "nested output")
        for op in ("compile", "valid value", "first error")
    }
    assert all(r["jsonschema_rs_us"] > 0 and r["jsonschema_us"] > 0 for r in rows)
