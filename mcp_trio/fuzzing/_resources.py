"""The resource growth oracle: the resident memory (RSS) and open file descriptors of a target
that runs as a local process, sampled from ``/proc/<pid>`` (Linux) after the first example of a
process (its warm-up), every few seconds while the campaign runs and at its end.  Growth past
:attr:`~._findings.FuzzConfig.max_rss_growth` (MB) or ``max_fd_growth`` becomes a finding
(``resources:rss-growth`` / ``resources:fd-growth``, a note: no sentence of the specification
bounds a peer's memory); where ``/proc`` is missing nothing is sampled and the stats say why.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from . import oracles as orc

__all__ = ["ResourceWatch", "sample"]

_MB = 1024 * 1024


def sample(pid: int) -> tuple[int, int] | None:
    """(RSS in bytes, open file descriptors) of process ``pid``, or None when it cannot be read
    (gone, not Linux, not ours)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), None)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError, IndexError):
        return None
    return None if rss is None else (rss, fds)


@dataclass
class _Process:
    pid: int
    started: float
    first: tuple[int, int]
    last: tuple[int, int]
    samples: int = 1

    def growth(self) -> tuple[int, int]:
        return self.last[0] - self.first[0], self.last[1] - self.first[1]

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "seconds": round(time.monotonic() - self.started, 1),
            "samples": self.samples,
            "rss_mb": [round(self.first[0] / _MB, 1), round(self.last[0] / _MB, 1)],
            "fds": [self.first[1], self.last[1]],
        }


@dataclass
class ResourceWatch:
    """Samples the processes a campaign talks to (:meth:`see` after each example, :meth:`end`
    at the end) and judges their growth (:meth:`violations`)."""

    max_rss_mb: float = 200.0
    max_fds: int = 100
    every: float = 2.0  # seconds between samples of one process
    current: _Process | None = None
    worst: dict[str, _Process] = field(default_factory=dict)  # "rss" / "fds" -> its process
    unavailable: str | None = None
    _next: float = 0.0

    def see(self, pid: int | None, force: bool = False) -> None:
        """Sample ``pid`` (None: no local process) if it is new, the interval is up, or ``force``."""
        if pid is None or self.unavailable:
            return
        now = time.monotonic()
        if self.current is not None and self.current.pid == pid and not force and now < self._next:
            return
        got = sample(pid)
        self._next = now + self.every
        if got is None:
            if self.current is None and not sys.platform.startswith("linux"):
                self.unavailable = f"resource growth not watched: no /proc on {sys.platform}"
            return
        if self.current is None or self.current.pid != pid:
            self.current = _Process(pid, now, got, got)  # the baseline, after the warm-up example
            return
        self.current.last = got
        self.current.samples += 1
        for i, name in enumerate(("rss", "fds")):
            if name not in self.worst or self.current.growth()[i] >= self.worst[name].growth()[i]:
                self.worst[name] = self.current

    def end(self, pid: int | None) -> None:
        """The last sample of the campaign."""
        self.see(pid, force=True)

    def violations(self) -> list[orc.Violation]:
        """A note for each of RSS and descriptors that grew past its threshold in one process."""
        out = []
        rss = self.worst.get("rss")
        if rss is not None and rss.growth()[0] > self.max_rss_mb * _MB:
            out.append(
                orc.Violation(
                    "resources",
                    f"the target's RSS grew by {rss.growth()[0] / _MB:.1f} MB (from {rss.first[0] / _MB:.1f} "
                    f"to {rss.last[0] / _MB:.1f} MB, threshold {self.max_rss_mb:g} MB) over "
                    f"{rss.samples} samples of process {rss.pid}",
                    "rss-growth",
                )
            )
        fds = self.worst.get("fds")
        if fds is not None and fds.growth()[1] > self.max_fds:
            out.append(
                orc.Violation(
                    "resources",
                    f"the target's open file descriptors grew by {fds.growth()[1]} (from {fds.first[1]} "
                    f"to {fds.last[1]}, threshold {self.max_fds}) over {fds.samples} samples of process "
                    f"{fds.pid}",
                    "fd-growth",
                )
            )
        return out

    def to_json(self) -> dict[str, Any]:
        """What the campaign's stats show: the processes with the largest growth, or why none."""
        if self.unavailable:
            return {"watched": False, "why": self.unavailable}
        if not self.worst:
            return {"watched": False, "why": "no local process ran long enough to be sampled twice"}
        return {"watched": True, **{k: p.to_json() for k, p in self.worst.items()}}
