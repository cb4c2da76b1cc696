"""benchmarks/bench_proxy.py runs: every configuration answers (the proxies and the relay
floors, the C one where a C compiler is found), each row says what it adds to the direct one,
and the stdio proxy relays its calls."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf


def test_the_proxy_benchmark_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench_proxy", "--quick", "--json"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = {r["config"]: r for r in json.loads(done.stdout)["rows"]}
    floors = ["stdio trio relay", "stdio thread relay", "stdio copy relay"]
    if shutil.which("cc", path="/usr/bin:/bin") or shutil.which("gcc", path="/usr/bin:/bin"):
        floors.append("stdio C copy relay")
    else:
        assert "no C compiler on the PATH" in done.stderr
    assert list(rows) == [
        "stdio direct",
        "stdio proxy",
        "stdio proxy (sessions)",
        *floors,
        "http direct",
        "http proxy",
    ]
    assert all(r["p50_us"] > 0 and r["cpu_us"] > 0 and r["own_cpu_us"] > 0 for r in rows.values())
    for config in ("stdio proxy", "stdio proxy (sessions)", *floors, "http proxy"):
        through, direct = rows[config], rows[f"{config.split()[0]} direct"]
        assert through["added_p50_us"] == pytest.approx(through["p50_us"] - direct["p50_us"])
        assert through["added_cpu_us"] == pytest.approx(through["cpu_us"] - direct["cpu_us"])
    # (the stdio relay is on: the proxy's own CPU is about a quarter of what its sessions cost)
    assert rows["stdio proxy"]["own_cpu_us"] < rows["stdio proxy (sessions)"]["own_cpu_us"] / 2
