"""benchmarks/compare.py measures two revisions side by side and reports each workload's ratio."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests._support.paths import ROOT

pytestmark = pytest.mark.perf


def test_two_revisions_side_by_side() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.compare", "HEAD", "HEAD", "--rounds", "1", "--seconds", "0.5"]
        + ["--only", "stdio"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| stdio")]
    assert [row[0].strip() for row in rows] == ["stdio sequential (us/call)", "stdio pipelined (us/call)"]
    for row in rows:
        base, new, ratio = (float(cell) for cell in row[1:4])
        # (the figures are rounded)
        assert base > 0 and new > 0 and ratio == pytest.approx(new / base, rel=0.01)
    worktrees = subprocess.run(["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True).stdout
    assert "mcp-trio-compare" not in worktrees  # (removed at the end)
