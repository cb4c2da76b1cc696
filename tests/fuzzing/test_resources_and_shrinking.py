"""The resource growth oracle (RSS and open descriptors of a local target, a note past a
threshold) and the second shrinking pass that drops the messages a finding does not need."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_trio._cli import main
from mcp_trio.fuzzing import FuzzConfig, StdioTarget, run
from mcp_trio.fuzzing._findings import CampaignStats, load_transcript
from mcp_trio.fuzzing._resources import ResourceWatch, sample
from mcp_trio.fuzzing._server_campaign import server_hunt
from mcp_trio.fuzzing.runner import drop_unneeded, replay
from tests._support.paths import ROOT

TOY = str(ROOT / "tests" / "programs" / "fuzz_toy_server.py")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc is Linux's")


def toy(mode: str) -> StdioTarget:
    return StdioTarget([sys.executable, TOY, mode])


def growth_run(mode: str, tmp_path: Path, **more: float) -> FuzzConfig:
    return FuzzConfig(
        toy(mode),
        campaigns=["valid"],
        max_examples=40,
        timeout=3,
        out_dir=tmp_path,
        **more,  # type: ignore[arg-type]
    )


@linux_only
def test_sample_reads_rss_and_descriptors_of_a_live_process() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        got = sample(proc.pid)
        assert got is not None and got[0] > 0 and got[1] >= 3
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(5)
    assert sample(proc.pid) is None  # gone: nothing to read, no error


@linux_only
def test_a_target_leaking_descriptors_is_noted_with_the_numbers(tmp_path: Path) -> None:
    [stats] = run(growth_run("leaks-fds", tmp_path, max_fd_growth=20))
    [finding] = [f for f in stats.findings if f.violation.oracle == "resources"]
    v = finding.violation
    assert v.key == "resources:fd-growth" and v.severity == "note" and v.rule == "resource-growth"
    assert "threshold 20" in v.message and "descriptors grew by" in v.message
    assert stats.resources is not None and stats.resources["watched"]
    first, last = stats.resources["fds"]["fds"]
    assert last - first > 20
    assert finding.path is not None
    saved = load_transcript(finding.path)
    assert saved["finding"]["cites"]["level"] == "judgement" and saved["resources"] == stats.resources
    with pytest.raises(ValueError, match="resource growth finding"):
        replay(finding.path)
    summary = (tmp_path / "summary.txt").read_text()
    assert "resources:fd-growth [note]" in summary and "open fds" in summary
    assert f"samples: {finding.path}" in summary and "fuzz replay" not in summary


@linux_only
def test_a_target_leaking_memory_is_noted_and_fails_no_run(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "fuzz",
            "--stdio",
            f"{sys.executable} {TOY} leaks-memory",
            "--campaign",
            "valid",
            "--max-examples",
            "30",
            "--timeout",
            "3",
            "--max-rss-growth",
            "20",
            "--strict",
            "--out",
            str(out),
        ]
    )
    report = json.loads((out / "report.json").read_text())
    keys = {f["key"]: f["severity"] for f in report["findings"]}
    assert keys == {"resources:rss-growth": "note"} and status == 0
    rss = report["campaigns"][0]["resources"]["rss"]["rss_mb"]
    assert rss[1] - rss[0] > 20


@linux_only
def test_a_clean_target_is_watched_and_not_noted(tmp_path: Path) -> None:
    [stats] = run(growth_run("good", tmp_path, max_fd_growth=5, max_rss_growth=20))
    assert not stats.findings
    assert stats.resources is not None and stats.resources["watched"]
    first, last = stats.resources["fds"]["fds"]
    assert last - first <= 5


def test_without_proc_nothing_is_sampled_and_the_stats_say_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    watch = ResourceWatch()
    watch.see(2**22 + 12345)  # no such process on any system
    assert watch.to_json() == {"watched": False, "why": "resource growth not watched: no /proc on darwin"}
    assert watch.violations() == []


# ------------------------------------------------------------ the second shrinking pass


def messages(*methods: str) -> list[bytes]:
    return [
        json.dumps({"jsonrpc": "2.0", "id": i + 100, "method": m}).encode() for i, m in enumerate(methods)
    ]


def test_unrelated_messages_around_the_trigger_are_dropped() -> None:
    cfg = FuzzConfig(toy("junk"), timeout=3)
    stats = CampaignStats("2025-11-25", "valid")
    hunt = server_hunt(cfg, "2025-11-25", "valid", stats)
    try:
        case = messages("ping", "nothing/here", "tools/list", "ping", "other/thing")
        notes = ["a", "b", "trigger", "c", "d"]
        replayed = hunt.replay(case, notes)
        assert "stdout:junk" in {v.key for v in replayed[1]}
        left, transcript, violations = drop_unneeded(
            hunt, "stdout:junk", case, notes, replayed, time.monotonic() + 60
        )
    finally:
        hunt.reset()
    assert left == [case[2]]
    assert [c["note"] for c in transcript["case"]] == ["trigger"]
    assert "stdout:junk" in {v.key for v in violations}


def test_the_second_pass_stops_at_its_deadline() -> None:
    cfg = FuzzConfig(toy("junk"), timeout=3)
    hunt = server_hunt(cfg, "2025-11-25", "valid", CampaignStats("2025-11-25", "valid"))
    case = messages("ping", "tools/list")
    replayed = hunt.replay(case, [])
    left, transcript, _ = drop_unneeded(hunt, "stdout:junk", case, [], replayed, time.monotonic())
    assert left == case and transcript is replayed[0]


def test_a_campaign_saves_the_minimal_case(tmp_path: Path) -> None:
    [stats] = run(
        FuzzConfig(
            toy("junk"), campaigns=["valid"], max_examples=30, timeout=3, shrink_time=4, out_dir=tmp_path
        )
    )
    [finding] = [f for f in stats.findings if f.violation.key == "stdout:junk"]
    assert finding.path is not None
    saved = load_transcript(finding.path)
    [message] = [json.loads(c["text"]) for c in saved["case"]]
    assert message["method"] == "tools/list"
    assert replay(finding.path)[1][0].key == "stdout:junk"
