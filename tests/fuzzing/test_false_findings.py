"""Findings the fuzzer must not make, each next to the real breach it must still report (issue
#41): a slow start is not a silence, a deeply nested request answered correctly over HTTP is not
a notification, a server that speaks only 2024-11-05 is not asked for 2025-11-25, a 2025-03-26
server owes nothing to a header its revision does not have."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp_trio.fuzzing import FuzzConfig, StdioTarget, run
from mcp_trio.fuzzing._findings import CampaignStats
from tests._support.paths import ROOT

TOY = str(ROOT / "tests" / "programs" / "fuzz_toy_server.py")


def keys(stats: list[CampaignStats]) -> set[str]:
    return {f.violation.key for s in stats for f in s.findings if f.violation.severity != "flaky"}


# ------------------------------------------------ a slow start is not a silence


def slow_toy(mode: str, delay: float) -> StdioTarget:
    env = {**os.environ, "FUZZ_TOY_START_DELAY": str(delay)}
    return StdioTarget([sys.executable, TOY, mode], env=env)


def lifecycle(target: StdioTarget, tmp_path: Path) -> list[CampaignStats]:
    cfg = FuzzConfig(
        target,
        revisions=["2025-11-25"],
        campaigns=["lifecycle"],
        max_examples=2,
        timeout=2,
        shrink_time=0,
        max_findings=1,
        out_dir=tmp_path,
    )
    return run(cfg)


def test_a_server_slower_to_start_than_the_timeout_is_not_silent_in_lifecycle(tmp_path: Path) -> None:
    [stats] = lifecycle(slow_toy("good", 4), tmp_path)
    assert stats.examples == 2 and stats.sessions >= 2
    assert keys([stats]) == set(), [f.violation.message for f in stats.findings]


def test_a_slow_server_that_never_answers_ping_is_still_flagged_in_lifecycle(tmp_path: Path) -> None:
    stats = lifecycle(slow_toy("no-ping", 4), tmp_path)
    assert "alive:no-ping-answer" in keys(stats)


# ------------------------------------- a server that speaks only 2024-11-05


def stateful(mode: str, revision: str, tmp_path: Path) -> CampaignStats:
    cfg = FuzzConfig(
        StdioTarget([sys.executable, TOY, mode]),
        revisions=[revision],
        campaigns=["stateful"],
        max_examples=30,
        timeout=2,
        shrink_time=2,
        max_findings=1,
        seed=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    return stats


def test_a_server_that_speaks_only_2024_11_05_is_not_asked_for_another_revision(tmp_path: Path) -> None:
    stats = stateful("speaks-2024", "2024-11-05", tmp_path)
    assert stats.examples >= 20 and not stats.skipped
    assert keys([stats]) == set(), [f.violation.message for f in stats.findings]
    other = stateful("speaks-2024", "2025-11-25", tmp_path / "other")
    assert other.skipped is not None and "does not speak 2025-11-25" in other.skipped
    assert not other.findings


def test_a_server_that_answers_another_version_than_one_it_speaks_is_flagged(tmp_path: Path) -> None:
    stats = stateful("ignores-version", "2024-11-05", tmp_path)
    [finding] = [f for f in stats.findings if f.violation.key == "version-negotiation:not-same"]
    assert finding.violation.severity == "violation"
    assert "which the server speaks (it answered 2025-11-25 to an initialize asking for '1999-01-01')" in (
        finding.violation.message
    )
