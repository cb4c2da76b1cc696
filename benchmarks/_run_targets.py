"""Benchmark suite: the targets: each ratio wanted, computed from the results, and if it is met.

A ratio is of two medians; beside it, the lowest and highest ratio of the two figures run by run
(the repeats go round the servers in turn, so the n-th runs of two servers are neighbours in
time): a claim holds for every run only when that whole range is on its side.  A ratio whose
figures are missing (a workload not run or failed) is "not measured".
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
    #: The lowest and highest run-by-run ratio, where each run's figures were kept.
    spread: tuple[float, float] | None = None

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


def _paired(a: Any, b: Any) -> tuple[float, float] | None:
    """The lowest and highest of ``a[i] / b[i]`` over two rows' runs (None without them)."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b) or not a:
        return None
    ratios = [x / y for x, y in zip(a, b, strict=True) if y]
    return (min(ratios), max(ratios)) if ratios else None


def _against_ts(door: str, key: str, conc: Any, split: bool) -> list[Target]:
    """The two HTTP targets of ``door`` (its results' ``key``) against the TypeScript SDK: req/s
    and server CPU per request, from the table with the server and the load generator on CPUs
    of their own where the run has it (``split``): sharing cores with the load generator cost
    Node more CPU per request than it cost trio (RESULTS.md, issue #43)."""
    where = " (CPUs of their own)" if split else ""
    return [
        Target(
            f"HTTP ×64{where}, {door} front door vs TypeScript SDK",
            "≥ 1.5×",
            _ratio(conc(key), conc("ts")),
            1.5,
            spread=_paired(conc(key, "runs"), conc("ts", "runs")),
        ),
        Target(
            f"HTTP ×64{where} server CPU per request, {door} front door vs TypeScript SDK",
            "≤ 0.5×",
            _ratio(conc(key, "server_cpu_us"), conc("ts", "server_cpu_us")),
            0.5,
            higher_is_better=False,
            spread=_paired(conc(key, "server_cpu_runs"), conc("ts", "server_cpu_runs")),
        ),
    ]


def targets(results: dict[str, Any]) -> list[Target]:
    r = results
    # the sequential stdio targets: pinned to one CPU (results before that variant: "sequential")
    one_cpu = "sequential_one_cpu" if _get(r, "stdio", "sequential_one_cpu") else "sequential"
    seq = lambda k, f="rate": _get(r, "stdio", one_cpu, k, f)  # noqa: E731
    pipe = lambda k, f="rate": _get(r, "stdio", "pipelined", k, f)  # noqa: E731
    conc = lambda k, f="rate": _get(r, "http", "concurrent", k, f)  # noqa: E731
    split = bool(_get(r, "http", "concurrent_split", "ts"))
    against_ts = lambda k, f="rate": _get(r, "http", "concurrent_split" if split else "concurrent", k, f)  # noqa: E731
    sdk_modes = [k for k in ("sdk", "sdk_sse") if conc(k) is not None]
    best_sdk = max(sdk_modes, key=lambda k: conc(k)) if sdk_modes else None
    mem = lambda k: _get(r, "memory", k, "kib_per_session")  # noqa: E731
    cold = lambda k: _get(r, "startup", "cold_start", k, "seconds")  # noqa: E731
    cold_runs = lambda k: _get(r, "startup", "cold_start", k, "runs")  # noqa: E731
    return [
        Target(
            "stdio sequential (one CPU) vs SDK low-level",
            "≥ 10×",
            _ratio(seq("ours"), seq("sdk")),
            10,
            spread=_paired(seq("ours", "runs"), seq("sdk", "runs")),
        ),
        Target(
            "stdio sequential (one CPU) vs TypeScript SDK",
            "≥ 3×",
            _ratio(seq("ours"), seq("ts")),
            3,
            spread=_paired(seq("ours", "runs"), seq("ts", "runs")),
        ),
        Target(
            "stdio sequential (one CPU) vs raw trio line echo",
            "≥ 0.5×",
            _ratio(seq("ours"), seq("raw_trio")),
            0.5,
            spread=_paired(seq("ours", "runs"), seq("raw_trio", "runs")),
        ),
        Target(
            "stdio pipelined (256 in flight) vs SDK low-level",
            "≥ 20×",
            _ratio(pipe("ours"), pipe("sdk")),
            20,
            spread=_paired(pipe("ours", "runs"), pipe("sdk", "runs")),
        ),
        Target(
            f"HTTP ×64, h11 front door vs SDK best mode ({best_sdk})",
            "≥ 2×",
            _ratio(conc("ours"), conc(best_sdk) if best_sdk else None),
            2,
            spread=_paired(conc("ours", "runs"), conc(best_sdk, "runs")) if best_sdk else None,
        ),
        *(
            target
            for door, key in (("h11", "ours"), ("httptools", "ours_httptools"))
            for target in _against_ts(door, key, against_ts, split)
        ),
        Target(
            "HTTP ×64, h11 front door vs bare h11-over-trio",
            "≥ 0.8×",
            _ratio(conc("ours"), conc("trivial_h11")),
            0.8,
            spread=_paired(conc("ours", "runs"), conc("trivial_h11", "runs")),
        ),
        Target(
            "HTTP ×64, hypercorn front door vs trivial app on hypercorn",
            "≥ 0.9×",
            _ratio(conc("ours_hypercorn"), conc("trivial_hypercorn")),
            0.9,
            spread=_paired(conc("ours_hypercorn", "runs"), conc("trivial_hypercorn", "runs")),
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
        Target(
            "cold start, SDK low-level / ours",
            "≥ 4×",
            _ratio(cold("sdk"), cold("ours")),
            4,
            spread=_paired(cold_runs("sdk"), cold_runs("ours")),
        ),
        Target(
            "codec, full wire path vs SDK (geometric mean)",
            "≥ 10×",
            _get(r, "codec", "geomean_ratio"),
            10,
        ),
    ]
