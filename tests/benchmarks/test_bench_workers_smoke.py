"""benchmarks/bench_workers.py runs every configuration end to end, briefly: mcp-trio with its
sessions in memory and in a Redis store (a real redis-server, started by the benchmark) at 1 and
2 workers, mcp-trio stateless, and the official SDK's stateless mode under uvicorn workers;
and it reports the ratios of what it measured."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks import bench_workers
from benchmarks.bench_workers import Config, compare, configurations
from tools.redis_server import redis_server_path

pytestmark = [pytest.mark.slow, pytest.mark.perf]

BRIEF = [
    "--duration",
    "0.3",
    "--warmup",
    "0.1",
    "--clients",
    "4",
    "--workers",
    "2",
    "--json",
    "--sdk-python",
    sys.executable,
]


def _run(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, object]:
    assert bench_workers.main([*BRIEF, *extra]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_sessions_in_memory_and_in_redis_at_1_and_2_workers_and_the_sdk(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # (each session called over 2 connections: with 2 workers its requests land on both)
    report = _run(capsys, "--redis-server", redis_server_path(), "--connections-per-session", "2")
    assert report["connections_per_session"] == 2
    rows = report["configs"]
    assert isinstance(rows, dict)
    assert list(rows) == ["memory-1", "redis-1", "redis-2", "sdk-1", "sdk-2"]
    assert all(row["rate"] > 0 and row["ratio"] > 0 for row in rows.values())
    assert rows["memory-1"]["ratio"] == rows["sdk-1"]["ratio"] == 1.0
    # the CPU per call of the server's processes, and of redis-server for the Redis store
    assert all(0 < row["cpu_us_per_call"] < 1e5 for row in rows.values())
    assert rows["redis-1"]["redis_cpu_us_per_call"] is not None
    assert rows["memory-1"]["redis_cpu_us_per_call"] is None
    assert set(report["store_cost"]) == {"rate", "server_cpu", "server_and_redis_cpu"}  # type: ignore[call-overload]
    assert report["versus_sdk"]["2"]["ours"] == "mcp-trio 2 workers --store redis"  # type: ignore[index]


def test_stateless_at_1_and_2_workers_and_the_sdk(capsys: pytest.CaptureFixture[str]) -> None:
    report = _run(capsys, "--stateless")
    assert report["connections_per_session"] == 1
    rows = report["configs"]
    assert isinstance(rows, dict)
    assert list(rows) == ["stateless-1", "stateless-2", "sdk-1", "sdk-2"]
    assert all(row["rate"] > 0 for row in rows.values())
    assert rows["stateless-1"]["ratio"] == 1.0
    assert "store_cost" not in report
    assert set(report["versus_sdk"]) == {"1", "2"}  # type: ignore[call-overload]


def test_the_configurations_and_the_ratios() -> None:
    keys = [c.key for c in configurations([4, 2])]
    assert keys == ["memory-1", "redis-1", "redis-2", "redis-4", "sdk-1", "sdk-2", "sdk-4"]
    assert [c.key for c in configurations([2], stateless=True, sdk=False)] == ["stateless-1", "stateless-2"]
    assert Config("mcp-trio", "redis", 2).label == "mcp-trio 2 workers --store redis"
    rows = {
        "memory-1": {"server": "mcp-trio", "workers": 1, "rate": 1000.0, "cpu_us_per_call": 100.0},
        "redis-1": {"server": "mcp-trio", "workers": 1, "rate": 800.0, "cpu_us_per_call": 120.0},
        "redis-2": {"server": "mcp-trio", "workers": 2, "rate": 1600.0, "cpu_us_per_call": None},
        "sdk-2": {"server": "sdk", "workers": 2, "rate": 400.0, "cpu_us_per_call": None},
        "sdk-1": {"server": "sdk", "workers": 1, "rate": 500.0, "cpu_us_per_call": 300.0},
    }
    for key, row in rows.items():
        row.update(label=key, redis_cpu_us_per_call=30.0 if key == "redis-1" else None)
    report = compare(rows)  # type: ignore[arg-type]
    assert [rows[k]["ratio"] for k in rows] == [1.0, 0.8, 1.6, 0.8, 1.0]
    assert report["store_cost"] == {"rate": 0.8, "server_cpu": 1.2, "server_and_redis_cpu": 1.5}
    assert report["versus_sdk"] == {
        "2": {"ours": "redis-2", "ratio": 4.0},
        "1": {"ours": "redis-1", "ratio": 1.6},
    }
