"""Benchmark suite: the targets: each ratio wanted, computed from the results, and if it is met.

A ratio whose figures are missing (a workload not run or failed) is "not measured".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass
class Target:
    name: str
    wanted: str
    value: float | None
    goal: float
    higher_is_better: bool = True

    @property
    def met(self) -> bool | None:
        if self.value is None or math.isnan(self.value):
            return None
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal


def _get(results: dict[str, Any], *path: str) -> Any:
    value: Any = results
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0 or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def _against_ts(door: str, rate: float | None, cpu: float | None, conc: Any) -> list[Target]:
    """The two HTTP targets of ``door`` against the TypeScript SDK: req/s and server CPU per request."""
    return [
        Target(f"HTTP ×64, {door} front door vs TypeScript SDK", "≥ 1.5×", _ratio(rate, conc("ts")), 1.5),
        Target(
            f"HTTP ×64 server CPU per request, {door} front door vs TypeScript SDK",
            "≤ 0.5×",
            _ratio(cpu, conc("ts", "server_cpu_us")),
            0.5,
            higher_is_better=False,
        ),
    ]


def targets(results: dict[str, Any]) -> list[Target]:
    r = results
    seq = lambda k: _get(r, "stdio", "sequential", k, "rate")  # noqa: E731
    pipe = lambda k: _get(r, "stdio", "pipelined", k, "rate")  # noqa: E731
    conc = lambda k, f="rate": _get(r, "http", "concurrent", k, f)  # noqa: E731
    sdk_modes = [k for k in ("sdk", "sdk_sse") if conc(k) is not None]
    best_sdk = max(sdk_modes, key=lambda k: conc(k)) if sdk_modes else None
    mem = lambda k: _get(r, "memory", k, "kib_per_session")  # noqa: E731
    cold = lambda k: _get(r, "startup", "cold_start", k, "seconds")  # noqa: E731
    return [
        Target("stdio sequential vs SDK low-level", "≥ 10×", _ratio(seq("ours"), seq("sdk")), 10),
        Target("stdio sequential vs TypeScript SDK", "≥ 3×", _ratio(seq("ours"), seq("ts")), 3),
        Target(
            "stdio sequential vs raw trio line echo",
            "≥ 0.5×",
            _ratio(seq("ours"), seq("raw_trio")),
            0.5,
        ),
        Target(
            "stdio pipelined (256 in flight) vs SDK low-level",
            "≥ 20×",
            _ratio(pipe("ours"), pipe("sdk")),
            20,
        ),
        Target(
            f"HTTP ×64, h11 front door vs SDK best mode ({best_sdk})",
            "≥ 2×",
            _ratio(conc("ours"), conc(best_sdk) if best_sdk else None),
            2,
        ),
        *(
            target
            for door, key in (("h11", "ours"), ("httptools", "ours_httptools"))
            for target in _against_ts(door, conc(key), conc(key, "server_cpu_us"), conc)
        ),
        Target(
            "HTTP ×64, h11 front door vs bare h11-over-trio",
            "≥ 0.8×",
            _ratio(conc("ours"), conc("trivial_h11")),
            0.8,
        ),
        Target(
            "HTTP ×64, hypercorn front door vs trivial app on hypercorn",
            "≥ 0.9×",
            _ratio(conc("ours_hypercorn"), conc("trivial_hypercorn")),
            0.9,
        ),
        Target(
            f"HTTP ×64 p99 latency, h11 front door vs SDK ({best_sdk})",
            "≤ 0.5×",
            _ratio(conc("ours", "p99_ms"), conc(best_sdk, "p99_ms") if best_sdk else None),
            0.5,
            higher_is_better=False,
        ),
        Target(
            "memory per idle HTTP session vs SDK (JSON mode)",
            "≤ 0.25×",
            _ratio(mem("ours"), mem("sdk")),
            0.25,
            higher_is_better=False,
        ),
        Target("cold start, SDK low-level / ours", "≥ 4×", _ratio(cold("sdk"), cold("ours")), 4),
        Target(
            "codec, full wire path vs SDK (geometric mean)",
            "≥ 10×",
            _get(r, "codec", "geomean_ratio"),
            10,
        ),
    ]
