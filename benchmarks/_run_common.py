"""Benchmark suite: what every part shares: the paths, the modes and their settings, small helpers.

The modes are quick (the default) and full; the helpers log with the time, take a median (NaN
when there is nothing) and read the machine's load average.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DEFAULT_VENV = Path.home() / ".cache" / "mcp-trio-bench" / "venv"
REQUIREMENTS = HERE / "requirements.txt"
RESULTS_MD = HERE / "RESULTS.md"
RESULTS_JSON = HERE / "results.json"
CHART = HERE / "ratios.png"
RESULTS_DIR = HERE / "results"
ANALYSIS_MARKER = "<!-- Everything below this line is written by hand and kept by benchmarks/run.py. -->"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Mode:
    name: str
    repeats: int
    duration: float  # seconds per throughput run
    http_duration: float
    big_duration: float
    cold_repeats: int
    sessions: int
    full: bool
    #: Calls every server answers after it starts, before its first measured run, alike for
    #: every peer (Node's JIT compiles the hot paths of the TypeScript SDK after some
    #: thousands: measured cold, its server CPU per call was several times its warm figure).
    warmup_calls: int


QUICK = Mode(
    "quick",
    repeats=3,
    duration=0.5,
    http_duration=0.5,
    big_duration=0.4,
    cold_repeats=3,
    sessions=1000,
    full=False,
    warmup_calls=2_000,
)
FULL = Mode(
    "full",
    repeats=5,
    duration=2.0,
    http_duration=2.0,
    big_duration=1.5,
    cold_repeats=7,
    sessions=1000,
    full=True,
    warmup_calls=10_000,
)

PIPELINE_DEPTH = 256
HTTP_CLIENTS = 64
BIG_TEXT = "".join(chr(0x61 + (i * 7) % 26) for i in range(1 << 20))  # 1 MiB of ASCII


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: Sequence[float]) -> tuple[float, float] | None:
    """The lowest and the highest of ``values`` (None when there are none)."""
    return (min(values), max(values)) if values else None


def cpu_ticks() -> tuple[int, int] | None:
    """The machine's CPU time so far in clock ticks, all of it and the part a hypervisor
    took for other guests (``steal``, the first line of ``/proc/stat``); None where unknown."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    return (sum(fields[:8]), fields[7]) if len(fields) >= 8 else None


def steal_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of the machine's CPU time stolen by the host between two :func:`cpu_ticks`."""
    if before is None or after is None or after[0] <= before[0]:
        return None
    return (after[1] - before[1]) / (after[0] - before[0])


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"
