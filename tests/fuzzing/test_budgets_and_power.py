"""The fuzzer's budgets and artefacts (--time for every campaign, exit 2 read as an error,
SARIF relative to the repository, Ctrl-C while shrinking) and its power (the corpus of known-bad
inputs, one process across examples, one finding per cause with its payload)."""

from __future__ import annotations

import io
import json
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from mcp_trio._cli import main
from mcp_trio.fuzzing import FuzzConfig, StdioTarget, run
from mcp_trio.fuzzing import oracles as orc
from mcp_trio.fuzzing._findings import CampaignStats, Finding, Hunt, load_transcript
from mcp_trio.fuzzing._reports import sarif
from mcp_trio.fuzzing._server_campaign import server_hunt
from mcp_trio.fuzzing.runner import _search, replay
from mcp_trio.fuzzing.strategies import known_bad
from tests._support.paths import ROOT

TOY = ROOT / "tests" / "programs" / "fuzz_toy_server.py"


def toy(mode: str) -> StdioTarget:
    return StdioTarget([sys.executable, str(TOY), mode])


# ------------------------------------------------------------------ budgets


def test_stateful_keeps_to_its_time_budget() -> None:
    # before, stateful looked at the budget between rounds only: 20 runs of 12 steps with a
    # process per session went on for a minute and more at --time 10
    cfg = FuzzConfig(toy("good"), campaigns=["stateful"], max_examples=None, time_budget=3, timeout=2)
    started = time.monotonic()
    [stats] = run(cfg)
    took = time.monotonic() - started
    assert not stats.aborted and stats.examples >= 1
    # (the step under way may finish: a new session's handshake, the close of the last one)
    assert stats.seconds < 3 + 2 * 2 + 2 and took < 12, (stats.seconds, took)


def test_the_progress_line_beats_while_nothing_new_happens() -> None:
    from mcp_trio._cli._fuzz import _Progress
    from mcp_trio.fuzzing._findings import Status

    stream = io.StringIO()
    progress = _Progress(stream, every=0.1)
    progress.start()
    try:
        progress.status(Status("2025-11-25", "stateful", "replaying", 3, 10, 0))
        time.sleep(0.6)  # one slow replay: no new status comes
    finally:
        progress.finish()
    lines = [line for line in stream.getvalue().splitlines() if "replaying" in line]
    assert len(lines) >= 2, lines  # the status, and the heartbeat drew it again
    assert lines[0].endswith("0 findings, 0 s")


def test_exit_2_reads_as_an_error_in_the_summary_the_report_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, junit, sarif_path = tmp_path / "r", tmp_path / "junit.xml", tmp_path / "out.sarif"
    argv = ["fuzz", "--stdio", str(tmp_path / "no-such-server"), "--out", str(out)]
    status = main([*argv, "--junit", str(junit), "--sarif", str(sarif_path)])
    printed = capsys.readouterr().out
    assert status == 2
    assert "passed." not in printed and "ERROR: the target cannot start" in printed
    assert (out / "summary.txt").read_text() == printed
    report = json.loads((out / "report.json").read_text())
    assert report["outcome"] == "error" and report["failed"] is True
    assert "no-such-server" in report["error"]
    root = ET.parse(junit).getroot()
    assert root.get("errors") == "1" and int(root.get("tests", "0")) >= 1
    error = root.find("testsuite/testcase/error")
    assert error is not None and "the target cannot start" in (error.get("message") or "")
    [invocation] = json.loads(sarif_path.read_text())["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False


def test_sarif_locations_are_relative_to_the_repository(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    inside = tmp_path / "fuzz-results" / "finding-1.json"
    outside = Path("/tmp") / "elsewhere" / "finding-2.json"
    stats = CampaignStats("2025-11-25", "invalid")
    for path in (inside, outside):
        violation = orc.Violation("alive", "the peer exited (status 1)", "exited")
        stats.findings.append(Finding("2025-11-25", "invalid", violation, {"case": []}, path))
    log = sarif(FuzzConfig(toy("good")), [stats], root=tmp_path)
    [result] = log["runs"][0]["results"]
    locations = [loc["physicalLocation"]["artifactLocation"] for loc in result["locations"]]
    assert locations[0] == {"uri": "fuzz-results/finding-1.json", "uriBaseId": "SRCROOT"}
    assert locations[1] == {"uri": outside.resolve().as_uri()}
    assert log["runs"][0]["originalUriBaseIds"]["SRCROOT"]["uri"] == tmp_path.resolve().as_uri() + "/"


def _interrupting(hunt: Hunt, at: str) -> Hunt:
    """``hunt`` with a Ctrl-C pressed once a violation is being shrinked (``at="shrinking"``: the
    next example; ``"replay"``: the replay of the smallest case)."""
    seen: list[int] = []

    def execute(case: Any) -> tuple[list[bytes], list[str], list[orc.Violation]]:
        if seen and at == "shrinking":
            raise KeyboardInterrupt
        payloads, notes, violations = hunt.execute(case)
        if violations:
            seen.append(1)
        return payloads, notes, violations

    def replay_case(payloads: list[bytes], notes: list[str]) -> tuple[dict[str, Any], list[orc.Violation]]:
        raise KeyboardInterrupt

    return Hunt(
        hunt.strategy,
        execute,
        replay_case if at == "replay" else hunt.replay,
        hunt.reset,
        sketch=hunt.sketch,
    )


@pytest.mark.parametrize("at", ["shrinking", "replay"])
def test_ctrl_c_while_shrinking_keeps_the_finding_being_shrunk(tmp_path: Path, at: str) -> None:
    cfg = FuzzConfig(toy("junk"), campaigns=["valid"], max_examples=50, timeout=2, out_dir=tmp_path)
    stats = CampaignStats("2025-11-25", "valid")
    hunt = server_hunt(cfg, "2025-11-25", "valid", stats)
    try:
        with pytest.raises(KeyboardInterrupt):
            _search(cfg, "2025-11-25", "valid", stats, _interrupting(hunt, at), time.monotonic())
    finally:
        hunt.reset()
    [finding] = stats.findings
    assert (
        finding.violation.key == "stdout:junk" and "interrupted while shrinking" in finding.violation.message
    )
    assert finding.path is not None
    saved = load_transcript(finding.path)
    assert saved["interrupted"].startswith("Ctrl-C while shrinking") and saved["case"]
    assert "tools/list" in finding.payload()
    # the case kept replays: the junk line comes before the tools/list answer
    assert "stdout:junk" in {v.key for v in replay(finding.path)[1]}


# -------------------------------------------------------------------- power


def test_the_corpus_holds_every_malformed_shape_once() -> None:
    cases = known_bad("2025-11-25")
    sent = [item.raw if item.raw is not None else item.obj for case in cases for item in case]
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for shape in (
        {**ping, "params": True},
        {**ping, "jsonrpc": "1.0"},
        {**ping, "id": None},
        [],
        [{**ping, "id": 1}, {**ping, "id": 2}],
        b"{",
    ):
        assert shape in sent, shape
    notes = [item.note for case in cases for item in case]
    for note in ("parse_error", "invalid_utf8", "deep_nesting", "lone_surrogate", "empty_batch", "batch"):
        assert note in notes
    assert len({json.dumps(s, default=repr) for s in sent}) == len(sent) - 1  # (the reused id twice)


def test_a_server_that_drops_malformed_input_is_fuzzed_fast_on_one_process(tmp_path: Path) -> None:
    """The SDK servers over stdio drop unparseable and invalid input without a word: each such case
    used to wait the whole timeout and start a new process (5 examples in 25 s).  Now the corpus
    reaches every shape within a short budget, on one process, and each cause is one finding."""
    cfg = FuzzConfig(
        toy("drops-invalid"),
        campaigns=["invalid"],
        max_examples=None,
        time_budget=12,
        timeout=2,
        shrink_time=2,
        out_dir=tmp_path,
        skip_probes=frozenset({"deep_nesting"}),  # (a Python json.loads dies on it: a restart)
    )
    [stats] = run(cfg)
    assert stats.examples >= len(known_bad("2025-11-25")) - 1, stats.examples
    assert stats.sessions == 1
    keys = [f.violation.key for f in stats.findings]
    assert "error-codes:missing--32700" in keys and "error-codes:missing--32600" in keys
    assert len(keys) == len(set(keys))
    parse = next(f for f in stats.findings if f.violation.key == "error-codes:missing--32700")
    assert parse.violation.severity == "violation"  # (confirmed by a replay with the whole timeout)
    summary = (tmp_path / "summary.txt").read_text()
    assert f"payload: {parse.payload()}" in summary
    report = json.loads((tmp_path / "report.json").read_text())
    [entry] = [f for f in report["campaigns"][0]["findings"] if f["key"] == parse.violation.key]
    assert entry["payload"] == parse.payload() and entry["payload"]


def test_one_cause_is_one_finding_with_its_symptoms_listed(tmp_path: Path) -> None:
    # the toy exits on a line that is not JSON: the parse error's missing answer, the exit and the
    # ping behind it are one cause; the finding is the exit, the others are listed with it
    cfg = FuzzConfig(
        toy("crashes"), campaigns=["invalid"], max_examples=1, timeout=2, shrink_time=2, out_dir=tmp_path
    )
    [campaign] = run(cfg)
    crashes = [f for f in campaign.findings if f.violation.key == "alive:exited"]
    assert len(crashes) == 1
    assert "error-codes:missing--32700" in crashes[0].also
    assert not [f for f in campaign.findings if f.violation.key == "error-codes:missing--32700"]


def test_ctrl_c_while_stateful_replays_keeps_its_smallest_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mcp_trio.fuzzing.stateful as stateful

    def interrupted(*args: Any) -> Any:
        raise KeyboardInterrupt  # (pressed while the smallest failing run is replayed)

    monkeypatch.setattr(stateful, "run_steps", interrupted)
    cfg = FuzzConfig(
        toy("ignores-version"),
        campaigns=["stateful"],
        max_examples=30,
        timeout=2,
        shrink_time=2,
        out_dir=tmp_path,
    )
    stats = CampaignStats("2025-11-25", "stateful")
    with pytest.raises(KeyboardInterrupt):
        stateful.run_stateful(cfg, "2025-11-25", stats)
    [finding] = stats.findings
    assert finding.violation.key == "version-negotiation:not-same" and finding.path is not None
    saved = load_transcript(finding.path)
    assert saved["interrupted"].startswith("Ctrl-C while shrinking") and saved["steps"]
    assert "initialize" in finding.payload()
