"""Findings graded by the exact rule they break (MUST -> violation, SHOULD -> deviation, judgement
-> note), the same decoder in a campaign and its replay, flaky findings kept, deduplication, and
the run as CI sees it: exit statuses, Ctrl-C, --time, --strict, JUnit XML and SARIF, progress."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import pytest

from mcp_trio._cli import main
from mcp_trio.fuzzing import (
    RULES,
    FuzzConfig,
    HttpTarget,
    StdioTarget,
    TargetFailed,
    Violation,
    classify,
    run,
)
from mcp_trio.fuzzing import driver as drv
from mcp_trio.fuzzing import oracles as orc
from mcp_trio.fuzzing._findings import (
    CampaignStats,
    Finding,
    grouped,
    keep_if_replayed,
    load_transcript,
    violations_found,
    within_budget,
)
from mcp_trio.fuzzing._http_probes import ABANDON_PROBE, _http_case
from mcp_trio.fuzzing.runner import Session, replay
from tests._support.fuzzing import sse_server
from tests._support.fuzzing_views import case_view
from tests._support.paths import ROOT

TOY = str(ROOT / "tests" / "programs" / "fuzz_toy_server.py")
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def toy(mode: str) -> StdioTarget:
    return StdioTarget([sys.executable, TOY, mode])


def view(
    revision: str, payloads: list[bytes], answers: list[dict[str, Any]], transport: str = "stdio"
) -> Any:
    return case_view(revision, payloads, answers, transport)


# ------------------------------------------------------------ the rules


def test_every_rule_cites_a_keyworded_sentence_and_its_document_per_revision() -> None:
    for rule in RULES.values():
        assert rule.level in ("MUST", "SHOULD", "judgement")
        if rule.level != "judgement" and rule.id != "error-code":  # (a code's meaning: no keyword)
            assert rule.level in rule.text, rule.id
        cite = rule.cite("2025-06-18")
        assert cite["document"].startswith(("docs/specification/2025-06-18/", "JSON-RPC 2.0"))
    assert RULES["ping"].cite("2026-07-28")["document"].startswith("JSON-RPC 2.0")  # no ping there
    origin = RULES["http-origin"]
    assert "403" in origin.cite("2025-11-25")["text"] and "403" not in origin.cite("2025-06-18")["text"]
    assert origin.cite("2026-07-28")["document"].endswith("basic/transports/streamable-http.mdx")


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_an_error_without_an_id_for_unreadable_input_is_what_recent_revisions_ask(revision: str) -> None:
    answer = {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}
    assert orc.check(view(revision, [b"{nope"], [answer])) == []
    null = {**answer, "id": None}  # JSON-RPC's null is not flagged either
    assert orc.check(view(revision, [b"{nope"], [null])) == []


@pytest.mark.parametrize("revision", ["2024-11-05", "2025-03-26", "2025-06-18"])
def test_earlier_revisions_want_the_null_id_of_json_rpc(revision: str) -> None:
    answer = {"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}}
    found = orc.check(view(revision, [b"{nope"], [answer]))
    keys = {v.key for v in found}
    assert "error-codes:null-id" in keys
    [null_id] = [v for v in found if v.key == "error-codes:null-id"]
    assert null_id.severity == "violation" and null_id.rule == "error-null-id"
    cite = null_id.to_json(revision)["cites"]
    assert cite["level"] == "MUST" and "it MUST be Null" in cite["text"]
    assert orc.check(view(revision, [b"{nope"], [{**answer, "id": None}])) == []


def test_a_toy_that_leaves_the_id_out_passes_in_2025_11_25() -> None:
    session = Session(toy("no-id"), "2025-11-25", timeout=3)
    try:
        assert session.run_case([b"{nope", b"[]"]).violations == []
    finally:
        session.close()


def test_internal_error_for_an_unknown_method_is_a_deviation_not_a_violation() -> None:
    session = Session(toy("internal-error"), "2025-11-25", timeout=3)
    try:
        [v] = session.run_case([b'{"jsonrpc":"2.0","id":7,"method":"no/such"}']).violations
    finally:
        session.close()
    assert v.key == "error-codes:want--32601" and v.severity == "deviation" and v.rule == "error-code"
    assert (
        v.to_json("2025-11-25")["cites"]["document"]
        == "JSON-RPC 2.0 (https://www.jsonrpc.org/specification), section 5.1"
    )
    stats = [CampaignStats("2025-11-25", "invalid", findings=[Finding("2025-11-25", "invalid", v, {})])]
    assert not violations_found(stats) and violations_found(stats, strict=True)


def test_missing_answers_stay_violations_and_a_reused_id_is_at_most_a_deviation() -> None:
    request = b'{"jsonrpc":"2.0","id":"a","method":"ping"}'
    missing = orc.check(view("2025-11-25", [request], []))
    assert [(v.key, v.severity) for v in missing] == [("one-response:missing", "violation")]
    one = [{"jsonrpc": "2.0", "id": "a", "result": {}}]
    over_http = orc.check(view("2025-11-25", [request, request], one, transport="http"))
    assert [(v.key, v.severity) for v in over_http] == [("one-response:reused-id-stream", "deviation")]
    assert "SHOULD eventually include" in over_http[0].to_json("2025-11-25")["cites"]["text"]
    over_stdio = orc.check(view("2025-11-25", [request, request], one))
    assert [(v.key, v.severity) for v in over_stdio] == [("one-response:reused-id", "note")]


# ------------------------------------------------- same decoder everywhere


def test_deep_nesting_reads_the_same_whatever_the_recursion_limit() -> None:
    deep = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * 1500 + b"]" * 1500 + b"}}"
    shallow = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * 300 + b"]" * 300 + b"}}"
    old = sys.getrecursionlimit()
    seen = []
    try:
        for limit in (1000, 2017, 5000):  # replay, a hypothesis test, anything
            sys.setrecursionlimit(limit)
            e, s = classify(deep, "2025-11-25"), classify(shallow, "2025-11-25")
            seen.append((e.lenient, e.null_allowed, s.lenient, sorted(s.ids)))
            with pytest.raises(RecursionError):
                drv.loads(deep)
    finally:
        sys.setrecursionlimit(old)
    assert seen == [(True, 1, False, ["1"])] * 3
    assert drv.loads(b'["[[[[", {"a": "]]]"}]') == ["[[[[", {"a": "]]]"}]  # brackets in strings


# ------------------------------------------------- flaky, dedup, budget


def test_a_candidate_that_does_not_replay_is_kept_as_flaky_with_its_payload(tmp_path: Path) -> None:
    cfg = FuzzConfig(toy("good"), out_dir=tmp_path)
    stats = CampaignStats("2025-11-25", "invalid")
    case = {"case": [{"text": '{"jsonrpc":"2.0","id":1,"method":"ping"}', "note": "x"}]}
    transcript = {"format": "mcp-trio-fuzz-transcript/2", "revision": "2025-11-25", **case}
    keep_if_replayed(cfg, stats, "2025-11-25", "invalid", "one-response:missing", [], 1, lambda: transcript)
    [finding] = stats.findings
    assert finding.violation.severity == "flaky" and finding.violation.rule == "reply"
    assert finding.path is not None
    saved = load_transcript(finding.path)
    assert saved["case"] == case["case"] and saved["finding"]["severity"] == "flaky"
    assert stats.not_reproduced == [
        {"key": "one-response:missing", "payloads": 1, "transcript": str(finding.path)}
    ]
    assert not violations_found([stats], strict=True)  # a flaky finding fails nothing


def test_findings_are_deduplicated_by_rule_and_behaviour_across_revisions() -> None:
    def finding(revision: str, key: str) -> Finding:
        oracle, _, detail = key.partition(":")
        return Finding(
            revision, "invalid", Violation(oracle, f"{key} seen", detail), {}, Path(f"{revision}.json")
        )

    stats = [
        CampaignStats("2025-06-18", "invalid", findings=[finding("2025-06-18", "one-response:missing")]),
        CampaignStats(
            "2025-11-25",
            "invalid",
            findings=[finding("2025-11-25", "one-response:missing"), finding("2025-11-25", "stdout:junk")],
        ),
    ]
    groups = grouped(stats)
    assert [(g["key"], g["revisions"]) for g in groups] == [
        ("one-response:missing", ["2025-06-18", "2025-11-25"]),
        ("stdout:junk", ["2025-11-25"]),
    ]
    assert groups[0]["transcripts"] == ["2025-06-18.json", "2025-11-25.json"]
    assert groups[0]["cites"]["rule"] == "reply"


def test_time_is_wall_time_and_not_an_example_count() -> None:
    cfg = FuzzConfig(toy("good"), max_examples=None, time_budget=60)
    stats = CampaignStats("2025-11-25", "valid", examples=100_000)
    assert within_budget(cfg, stats, time.monotonic())
    assert not within_budget(cfg, stats, time.monotonic() - 61)
    both = FuzzConfig(toy("good"), max_examples=5, time_budget=60)
    assert not within_budget(both, CampaignStats("2025-11-25", "valid", examples=5), time.monotonic())


def test_a_time_budget_runs_rounds_until_the_time_is_up(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        toy("good"), campaigns=["valid"], max_examples=None, time_budget=3, timeout=2, out_dir=tmp_path
    )
    started = time.monotonic()
    [stats] = run(cfg)
    took = time.monotonic() - started
    # A round is 25 examples: a run that stopped after its first round would end before the budget
    # on any machine that runs 25 examples in less than 3 s, however loaded (it did 100-200 there).
    assert 3 <= stats.seconds < 8 and took < 15, (stats.examples, stats.seconds)
    assert stats.examples >= 1 and stats.messages >= stats.examples


# ------------------------------------------------------------ the command


def test_a_target_that_cannot_start_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["fuzz", "--stdio", str(tmp_path / "no-such-server"), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert status == 2 and "the target cannot start" in err and "no-such-server" in err
    with pytest.raises(TargetFailed, match="exited with status 3"):
        run(FuzzConfig(StdioTarget([sys.executable, "-c", "import sys; sys.exit(3)"]), timeout=2))


def test_a_target_that_dies_mid_run_exits_2_not_with_findings(tmp_path: Path) -> None:
    """The first session starts; every later one exits at once (a marker file says which)."""
    marker = tmp_path / "started"
    script = tmp_path / "once.py"
    script.write_text(
        "import os, runpy, sys\n"
        f"marker = {str(marker)!r}\n"
        "if os.path.exists(marker):\n    sys.exit(4)\n"
        "open(marker, 'w').close()\n"
        f"sys.argv = [{TOY!r}, 'crashes']\n"
        f"runpy.run_path({TOY!r}, run_name='__main__')\n"
    )
    out = tmp_path / "r"
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_trio._cli", "fuzz", "--stdio", f"{sys.executable} {script}"]
        + ["--campaign", "invalid", "--max-examples", "40", "--timeout", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "exited with status 4" in proc.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["campaigns"][0]["campaign"] == "invalid"  # the partial report is written


def test_ctrl_c_writes_the_partial_report_and_exits_130(tmp_path: Path) -> None:
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcp_trio._cli", "fuzz", "--stdio", f"{sys.executable} {TOY} good"]
        + ["--campaign", "valid", "--time", "120", "--timeout", "2", "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        lines = []
        while time.monotonic() < deadline:  # the first status line comes with the first example
            line = proc.stderr.readline()
            lines.append(line)
            if "generating" in line or not line:
                break
        assert "generating" in lines[-1], "".join(lines)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "INTERRUPTED (Ctrl-C)" in stdout
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"] and report["campaigns"][0]["interrupted"]
    assert report["campaigns"][0]["examples"] >= 1


def test_junit_and_sarif_outputs_and_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", "--stdio", f"{sys.executable} {TOY} answers-notifications", "--campaign", "valid"]
    argv += ["--max-examples", "30", "--timeout", "2", "--shrink-time", "3", "--max-findings", "1"]
    junit, sarif = tmp_path / "junit.xml", tmp_path / "out.sarif"
    status = main([*argv, "--out", str(tmp_path / "r"), "--junit", str(junit), "--sarif", str(sarif)])
    assert status == 1, capsys.readouterr()
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and int(root.get("failures", "0")) >= 1
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "2025-11-25 valid" and int(suite.get("tests", "0")) == len(
        suite.findall("testcase")
    )
    failure = suite.find("testcase/failure")
    assert failure is not None and failure.get("type") == "violation"
    assert "MUST NOT send a response" in (failure.text or "") and "mcp-trio fuzz replay" in (
        failure.text or ""
    )

    log = json.loads(sarif.read_text())
    # the SARIF 2.1.0 required members: sarifLog.version and runs; run.tool; tool.driver;
    # driver.name; result.message (with text); reportingDescriptor.id; artifactLocation in locations
    assert log["version"] == "2.1.0" and log["$schema"].endswith("sarif-2.1.0.json")
    [sarif_run] = log["runs"]
    driver = sarif_run["tool"]["driver"]
    assert isinstance(driver["name"], str) and driver["name"]
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(set(rule_ids)) == len(rule_ids) and all(isinstance(i, str) for i in rule_ids)
    assert all(isinstance(r["shortDescription"]["text"], str) for r in driver["rules"])
    assert sarif_run["results"]
    for result in sarif_run["results"]:
        assert isinstance(result["message"]["text"], str) and result["ruleId"] in rule_ids
        assert result["level"] in ("none", "note", "warning", "error")
        for loc in result.get("locations", []):
            assert isinstance(loc["physicalLocation"]["artifactLocation"]["uri"], str)
    assert any(
        r["level"] == "error" and r["ruleId"] == "no-reply-to-notification" for r in sarif_run["results"]
    )


def test_deviations_fail_only_with_strict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["fuzz", "--stdio", f"{sys.executable} {TOY} internal-error", "--campaign", "invalid"]
    # (the toy, a Python json.loads, dies on the corpus' 1,000-deep request: not this test's point)
    argv += [
        "--skip",
        "deep_nesting",
        "--max-examples",
        "30",
        "--timeout",
        "2",
        "--shrink-time",
        "2",
        "--max-findings",
        "1",
    ]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    summary = capsys.readouterr().out
    assert "[deviation]" in summary and "failing only with --strict" in summary and "passed." in summary
    assert "rule (SHOULD): JSON-RPC 2.0" in summary
    assert main([*argv, "--out", str(tmp_path / "b"), "--strict"]) == 1
    assert "FAILED." in capsys.readouterr().out


def test_progress_is_redrawn_on_a_terminal_and_plain_lines_otherwise() -> None:
    from mcp_trio._cli._fuzz import _Progress
    from mcp_trio.fuzzing._findings import Status

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    plain, tty = io.StringIO(), Tty()
    for stream in (plain, tty):
        progress = _Progress(stream, every=60)
        progress.status(Status("2025-11-25", "invalid", "generating", 1, 3, 0))
        progress.status(Status("2025-11-25", "invalid", "generating", 2, 6, 0))  # within the period
        progress.status(Status("2025-11-25", "invalid", "shrinking", 9, 40, 0))  # a new phase: shown
        progress.event("2025-11-25 invalid: FINDING x")
    lines = plain.getvalue().splitlines()
    assert lines == [
        "mcp-trio fuzz: 2025-11-25 invalid: generating, 1 examples, 3 messages sent, 0 findings, 0 s",
        "mcp-trio fuzz: 2025-11-25 invalid: shrinking, 9 examples, 40 messages sent, 0 findings, 0 s",
        "mcp-trio fuzz: 2025-11-25 invalid: FINDING x",
    ]
    drawn = tty.getvalue()
    assert drawn.count("\r\x1b[K") == 3 and "\n" not in drawn.replace("FINDING x\n", "")


# ------------------------------------------------- the saved findings


SAVED = sorted((ROOT / "fuzz" / "findings").glob("*/*.json"))


def rejudge(data: dict[str, Any]) -> list[Violation]:
    """Judge a saved stdio transcript's replay again from its recorded events, with today's oracles."""
    payloads = [drv.decode_bytes(c) for c in data["case"]]
    events = data["events"]
    start = next(i for i, e in enumerate(events) if e["dir"] == "send" and drv.decode_bytes(e) == payloads[0])
    before = [drv.loads(drv.decode_bytes(e)) for e in events[:start] if e["dir"] == "recv"]
    # (the transcript's exit_code is the one after the fuzzer closed the session)
    answers = [drv.loads(drv.decode_bytes(e)) for e in events[start:] if e["dir"] == "recv"]
    probe = json.loads(drv.decode_bytes([e for e in events[start:] if e["dir"] == "send"][-1]))
    case = case_view(
        data["negotiated"],
        payloads,
        answers,
        probe_id=probe["id"],
        probe_answered=any(a.get("id") == probe["id"] for a in answers),
        previously_answered={orc.idkey(m.get("id")) for m in before if isinstance(m, dict)},
        timeout=data["timeout"],
    )
    return orc.check(case)


@pytest.mark.parametrize("path", SAVED, ids=[f"{p.parent.name}/{p.stem}" for p in SAVED])
def test_saved_findings_load_graded_and_the_stdio_ones_still_hold(path: Path) -> None:
    """Every kept transcript loads (/1 files upgraded: graded, citing their rule); the recorded
    replay of each stdio server finding still shows its key under today's oracles."""
    data = load_transcript(path)
    finding = data["finding"]
    assert data["format"] == "mcp-trio-fuzz-transcript/2" and finding["cites"]["text"]
    assert finding["severity"] in ("violation", "deviation", "note")
    if data["target"]["kind"] == "stdio" and data["campaign"] not in ("client", "stateful"):
        found = {v.key: v for v in rejudge(data)}
        if path.stem.endswith("invalid-utf8-answered"):  # a lenient reading is a note since these ran
            assert found["error-codes:utf8-accepted"].severity == "note"
        else:
            assert finding["key"] in found and found[finding["key"]].severity == finding["severity"]


def test_an_old_transcript_of_a_reused_id_is_rekeyed_on_load(tmp_path: Path) -> None:
    saved = ROOT / "fuzz/findings/server-everything-2026.8.31/2025-11-25-http-duplicate-id-empty-stream.json"
    old = json.loads(saved.read_text())  # as the /1 format had it: keyed as a missing answer, no cites
    old["format"] = "mcp-trio-fuzz-transcript/1"
    old["finding"] = {"oracle": "one-response", "key": "one-response:missing", "severity": "violation"}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    finding = load_transcript(path)["finding"]
    assert (finding["key"], finding["severity"], finding["cites"]["level"]) == (
        "one-response:reused-id-stream",
        "deviation",
        "SHOULD",
    )


# ------------------------------------------------- streams and sessions


def test_a_response_stream_that_does_not_end_is_a_deviation() -> None:
    with sse_server("open") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=3)
        try:
            started = time.monotonic()
            found = session.run_case([b'{"jsonrpc":"2.0","id":"q","method":"tools/list"}']).violations
            took = time.monotonic() - started
        finally:
            session.close()
    assert [(v.key, v.severity, v.rule) for v in found] == [
        ("one-response:stream-never-ends", "deviation", "stream-ends")
    ]
    assert took < 4  # the grace period, not the timeout, bounds the wait


def test_a_wedged_session_is_found_by_the_request_after_the_case() -> None:
    with sse_server("wedge") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            assert session.run_case([b'{"jsonrpc":"2.0","id":"q","method":"tools/list"}']).violations == []
            found = session.run_case([b'[{"jsonrpc":"2.0","id":"r","method":"ping"}]']).violations
        finally:
            session.close()
    [wedged] = [v for v in found if v.key == "alive:wedged"]
    assert wedged.severity == "violation" and "HTTP 200 without an answer" in wedged.message
    with sse_server("good") as url:  # the same case against a server that keeps going: nothing
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            assert session.run_case([b'[{"jsonrpc":"2.0","id":"r","method":"ping"}]']).violations == []
        finally:
            session.close()


def test_requests_left_in_progress_are_found_and_the_finding_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with sse_server("limit") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            assert session.run_case([]).violations == []  # (a ping answered before)
            found = _http_case(session, ABANDON_PROBE)
        finally:
            session.close()
        [v] = found
        assert (v.key, v.severity, v.rule) == ("alive:left-in-progress", "violation", "ping")
        # counted: what the server did not refuse or answer before the client left (it takes 64)
        assert _left_in_flight(v.message) >= 64 and "refused at once" in v.message
        assert "HTTP 429" in v.message
        cfg = FuzzConfig(
            HttpTarget(url),
            revisions=["2025-11-25"],
            campaigns=["http"],
            max_examples=1,
            timeout=2,
            shrink_time=2,
            out_dir=tmp_path,
        )
        [stats] = run(cfg)
        [finding] = [f for f in stats.findings if f.violation.key == "alive:left-in-progress"]
        assert finding.violation.severity == "violation" and finding.path is not None
        saved = json.loads(finding.path.read_text())
        assert [c["note"] for c in saved["case"]] == [ABANDON_PROBE]
        assert finding.violation.key in {v.key for v in replay(finding.path)[1]}
        assert main(["fuzz", "replay", str(finding.path)]) == 1
        assert "reproduced" in capsys.readouterr().err
    with sse_server("good") as url:  # the same probe against a server that forgets them: nothing
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            assert _http_case(session, ABANDON_PROBE) == []
        finally:
            session.close()


def test_the_abandoned_requests_counted_are_those_a_correct_server_takes() -> None:
    # a server that refuses batches (as 2025-11-25 servers must) and keeps 64 abandoned single
    # requests in progress: the probe leaves more than 64 singles, so the leak shows
    with sse_server("limit-singles") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            found = _http_case(session, ABANDON_PROBE)
        finally:
            session.close()
    [v] = found
    assert v.key == "alive:left-in-progress" and _left_in_flight(v.message) >= 64


def test_the_abandoned_requests_probe_keeps_to_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import mcp_trio.fuzzing._http_probes as probes

    monkeypatch.setattr(probes, "ABANDON_TIME", 0.0)  # no time at all: it says it stopped short
    with sse_server("good") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            started = time.monotonic()
            assert _http_case(session, ABANDON_PROBE) == []
            took = time.monotonic() - started
            [note] = [e["text"] for e in session.conn.events if e.get("text", "").startswith("left ")]
        finally:
            session.close()
    assert note.startswith("left 0 requests in flight") and "stopped after 0 s" in note and took < 3
    assert note.endswith("nothing left in progress to judge")


def _left_in_flight(message: str) -> int:
    """How many requests the abandoned-requests probe says it left in flight."""
    found = re.search(r"left (\d+) requests? in flight", message)
    assert found is not None, message
    return int(found.group(1))


def test_an_answer_nested_past_the_limit_is_not_taken_for_junk() -> None:
    conn = drv.Connection()
    deep = b'{"jsonrpc":"2.0","id":1,"result":{"a":' + b"[" * 500 + b"]" * 500 + b"}}"
    conn._got(deep)
    conn._got(b"debug: hello")
    assert conn.junk == [b"debug: hello"] and len(conn.received) == 2


def test_shrinking_stops_when_the_wall_time_is_up(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        toy("answers-notifications"),
        campaigns=["valid"],
        max_examples=None,
        time_budget=2,
        shrink_time=300,
        timeout=2,
        max_findings=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    assert stats.findings and stats.findings[0].violation.severity == "violation"
    assert stats.seconds < 2 + 10  # the time budget, the replay of the best case so far, no more


# ------------------------------------------- each finding under the rule it breaks (#41)


def test_a_double_answer_is_an_extra_response_not_an_answer_to_a_notification() -> None:
    session = Session(toy("answers-twice"), "2025-11-25", timeout=3)
    try:
        found = session.run_case([b'{"jsonrpc":"2.0","id":"t","method":"tools/list"}']).violations
        found += session.run_case([b'{"jsonrpc":"2.0","id":"u","method":"tools/list"}']).violations
    finally:
        session.close()
    assert found and {(v.key, v.rule, v.severity) for v in found} == {
        ("one-response:extra", "one-reply", "violation")
    }
    # (the second answers to the handshake's requests and to the pings after each case included)


def test_an_answer_to_an_id_never_sent_is_cited_as_an_unasked_response() -> None:
    request = b'{"jsonrpc":"2.0","id":"a","method":"ping"}'
    answers = [{"jsonrpc": "2.0", "id": "a", "result": {}}, {"jsonrpc": "2.0", "id": "zz", "result": {}}]
    [v] = orc.check(view("2025-11-25", [request], answers))
    assert (v.key, v.rule, v.severity) == (
        "no-response-to-notification:unknown-id",
        "unasked-response",
        "violation",
    )
    assert "esponses MUST include the same ID as the request" in v.to_json("2025-11-25")["cites"]["text"]


def test_a_malformed_response_is_reported_as_malformed_not_as_missing() -> None:
    request = b'{"jsonrpc":"2.0","id":"a","method":"ping"}'
    both = {"jsonrpc": "2.0", "id": "a", "result": {}, "error": {"code": "x", "message": "m"}}
    string_code = {"jsonrpc": "2.0", "id": "a", "error": {"code": "-32601", "message": "m"}}
    for answer in (both, string_code):
        found = orc.check(view("2025-11-25", [request], [answer]))
        assert [(v.key, v.rule) for v in found] == [("valid-response:envelope", "response-envelope")], found
    twice = orc.check(view("2025-11-25", [request], [both, {"jsonrpc": "2.0", "id": "a", "result": {}}]))
    assert {v.key for v in twice} == {"valid-response:envelope", "one-response:extra"}
    assert [v.key for v in orc.check(view("2025-11-25", [request], []))] == ["one-response:missing"]


def test_lenient_handling_of_invalid_input_has_one_grade_for_servers_and_clients() -> None:
    from mcp_trio.fuzzing import _client_oracles as C
    from mcp_trio.fuzzing._fuzz_server import ServerLog

    unknown = {"jsonrpc": "2.0", "id": "a", "method": "no/such"}
    result = {"jsonrpc": "2.0", "id": "a", "result": {}}
    [server] = orc.check(view("2025-11-25", [json.dumps(unknown).encode()], [result]))
    log = ServerLog(negotiated="2025-11-25")
    log.sent['"a"'] = {"method": "no/such", "note": "unknown_method", "message": unknown}
    log.answers['"a"'] = [result]
    [client] = C._check_answers(log, alive=True)
    for v in (server, client):
        assert (v.key, v.rule, v.severity) == (
            "error-codes:result-instead-of--32601",
            "lenient-input",
            "deviation",
        )
    log.answers['"a"'] = [{"jsonrpc": "2.0", "id": "a", "error": {"code": -32603, "message": "m"}}]
    [wrong_code] = C._check_answers(log, alive=True)
    assert (wrong_code.key, wrong_code.severity) == ("error-codes:want--32601", "deviation")


def test_an_unknown_session_id_answered_400_is_a_note_a_terminated_one_stays_a_must() -> None:
    with sse_server("sessions-400") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=3)
        try:
            [unknown] = _http_case(session, "unknown-session-id")
            [deleted] = _http_case(session, "delete-then-reuse")
        finally:
            session.close()
    assert (unknown.key, unknown.rule, unknown.severity) == (
        "http-session:unknown-session-id",
        "http-unknown-session",
        "note",
    )
    assert "never issued" in unknown.to_json("2025-11-25")["cites"]["text"]
    assert (deleted.key, deleted.rule, deleted.severity) == (
        "http-session:deleted-session",
        "http-ended-session",
        "violation",
    )
