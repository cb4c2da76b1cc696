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


QUICK = Mode(
    "quick",
    repeats=3,
    duration=0.5,
    http_duration=0.5,
    big_duration=0.4,
    cold_repeats=3,
    sessions=1000,
    full=False,
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
)

PIPELINE_DEPTH = 256
HTTP_CLIENTS = 64
BIG_TEXT = "".join(chr(0x61 + (i * 7) % 26) for i in range(1 << 20))  # 1 MiB of ASCII


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"
