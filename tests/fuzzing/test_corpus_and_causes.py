"""The client campaigns' corpus of known-bad plans, the abandoned-requests probe counting what it
really left in flight, and one finding per cause across cases and campaigns."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from mcp_trio.fuzzing import ClientTarget, FuzzConfig, HttpTarget, Session, StdioTarget, _http_probes, run
from mcp_trio.fuzzing import oracles as orc
from mcp_trio.fuzzing._findings import CampaignStats, Finding, grouped, summary
from mcp_trio.fuzzing._http_probes import ABANDON_PROBE, _http_case
from mcp_trio.fuzzing._plans import (
    ANSWER_KINDS,
    ERROR_CODES,
    JUNK_EVENTS,
    UNKNOWN_METHODS,
    capability_corpus,
    known_bad_plans,
)
from mcp_trio.fuzzing._reports import write_ci_reports
from mcp_trio.fuzzing.client import plan_kinds
from mcp_trio.fuzzing.strategies import NOT_OBJECTS, PARAMS_MUTATIONS, known_bad
from tests._support.fuzzing import sse_server
from tests._support.paths import ROOT

BROKEN = str(Path(__file__).with_name("broken_client.py"))
TOY = ROOT / "tests" / "programs" / "fuzz_toy_server.py"
R = "2025-11-25"


def broken(mode: str) -> ClientTarget:
    return ClientTarget([sys.executable, BROKEN, mode])


# ------------------------------------------------------------- client corpus


def _shapes(plans: list[dict[str, object]]) -> list[str]:
    """One name per shape of each plan: a step's note and method, or an answer's kind and detail."""
    out = []
    for plan in plans:
        for step in plan["steps"]:  # type: ignore[attr-defined]
            for inj in step:
                out.append(f"{inj['note']} {json.dumps(inj['message'], sort_keys=True)}")
        answers = plan["answers"]
        assert isinstance(answers, dict)
        if answers:  # (every method the client may call is answered with the same kind)
            assert len({a["kind"] for given in answers.values() for a in given}) == 1
            out.append(json.dumps(answers, sort_keys=True))
    return out


def test_the_client_corpus_holds_every_malformed_shape_once() -> None:
    plans = known_bad_plans("2025-11-25")
    shapes = _shapes(plans)
    assert len(shapes) == len(plans) == len(set(shapes))  # one shape a plan, each once
    assert json.loads(json.dumps(plans)) == plans  # (plain JSON: a transcript holds it)
    steps = [inj for plan in plans for step in plan["steps"] for inj in step]
    unknown = [inj["message"]["method"] for inj in steps if inj["note"] == "unknown_method"]
    assert unknown == list(UNKNOWN_METHODS)
    requests = [inj for inj in steps if inj["note"].startswith("params:") and "id" in inj["message"]]
    notifications = [inj for inj in steps if inj["note"].startswith("params:") and "id" not in inj["message"]]
    for injections in (requests, notifications):
        assert {inj["note"] for inj in injections} == {f"params:{m}" for m in PARAMS_MUTATIONS}
    assert [r["message"]["params"] for r in requests if r["note"] == "params:params_not_object"] == list(
        NOT_OBJECTS
    )
    answers = [a for plan in plans for given in plan["answers"].values() for a in given]
    assert {a["kind"] for a in answers} == set(ANSWER_KINDS) - {"result"}  # (a valid result is no bad shape)
    assert {a["text"] for a in answers if a["kind"] == "junk-event"} == set(JUNK_EVENTS)
    assert {a["error"]["code"] for a in answers if a["kind"] == "error"} == set(ERROR_CODES)
    assert {a["note"] for a in answers if a["kind"] == "mutated"} >= {"params_not_object", "wrong_type"}
    # 2026-07-28 sends no server-to-client requests: notifications and answers only
    stateless = known_bad_plans("2026-07-28")
    assert all("id" not in inj["message"] for plan in stateless for step in plan["steps"] for inj in step)
    assert len(_shapes(stateless)) == len(set(_shapes(stateless)))


def test_a_client_campaign_runs_its_corpus_first(tmp_path: Path) -> None:
    # a client that answers every request, even of a method no client has: no generated plan is
    # run at all (max_examples 0), and the corpus' unknown methods find it
    only_unknown = {"params", "mutated", "error", "duplicate", "unknown-id", "junk-event"}
    only_unknown |= {"batch", "empty_batch", "bad_id", "request_without_id"}
    cfg = FuzzConfig(
        broken("obliging"),
        revisions=["2025-11-25"],
        campaigns=["client"],
        max_examples=0,
        timeout=1,
        run_time=10,
        shrink_time=1,
        skip_probes=frozenset(only_unknown),
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    assert stats.corpus == stats.examples == len(UNKNOWN_METHODS)
    [finding] = stats.findings
    assert finding.violation.key == "error-codes:result-instead-of--32601"
    assert '"method":"nope"' in finding.payload()  # the first unknown method, shown
    assert not only_unknown & plan_kinds(json.loads(finding.path.read_text())["plan"])  # type: ignore[union-attr]


def test_a_client_capabilities_campaign_runs_its_corpus_first() -> None:
    cfg = FuzzConfig(
        broken("obliging"),  # (it declares roots only and answers everything with a result)
        revisions=["2025-11-25"],
        campaigns=["capabilities"],
        max_examples=0,
        timeout=1,
        run_time=10,
        shrink_time=1,
    )
    [stats] = run(cfg)
    assert stats.corpus == len(capability_corpus("2025-11-25")) > 0
    assert "capabilities:result-instead-of-error" in {f.violation.key for f in stats.findings}


# ------------------------------------------------------ abandoned requests


def _abandon(mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[list[orc.Violation], str]:
    """The abandoned-requests probe against ``sse_server.py MODE``: its violations and its note.
    (Its time cap raised: on a loaded machine 3 s may end it before it has left 64 in flight;
    what is tested here is what it counts.)"""
    monkeypatch.setattr(_http_probes, "ABANDON_TIME", 30.0)
    with sse_server(mode) as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=2)
        try:
            found = _http_case(session, ABANDON_PROBE)
            [note] = [e["text"] for e in session.conn.events if e.get("text", "").startswith("left ")]
        finally:
            session.close()
    return found, note


def test_a_leak_behind_a_rate_limit_that_refuses_half_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # every second request of a burst is refused at once and batches are refused: 100 POSTs
    # used to leave some 50 requests in progress, short of the 64 that fill the server, and the
    # ping after them was answered.  Counting only what was left in flight, the probe goes on
    # until the server is full.
    [v], note = _abandon("limit-half", monkeypatch)
    assert v.key == "alive:left-in-progress" and "HTTP 429" in v.message
    left = int(note.split()[1])
    assert left >= 64 and "refused at once" in note, note
    assert f"left {left} requests in flight" in v.message


def test_a_correct_server_that_refuses_half_of_a_burst_is_not_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the refusals and the answers came back before the client left: not left in flight
    found, note = _abandon("good-half", monkeypatch)
    assert found == [], found
    refused = re.search(r"(\d+) refused at once", note)
    assert refused is not None and int(refused.group(1)) > 0, note
    answered = re.search(r"(\d+) answered before the client left", note)
    assert answered is not None and int(answered.group(1)) > 0, note
    # (an answer later than the 50 ms a connection stays open counts as in flight: the ping
    # after them, answered, says nothing is left in progress)


# -------------------------------------------------------- one cause, one finding


def test_the_cases_of_one_cause_are_one_finding_listing_them(tmp_path: Path) -> None:
    # a server that drops every malformed request without a word: the five bad ids of the corpus
    # are one cause (no -32600 with id null), one finding that shows the first case's payload and
    # lists the others, in every report; before, the four after the first were dropped unseen
    kept = {"wrong_jsonrpc", "bad_id"}
    notes = {item.note.split(":")[0] for case in known_bad(R) for item in case}
    junit, sarif_path = tmp_path / "junit.xml", tmp_path / "out.sarif"
    cfg = FuzzConfig(
        StdioTarget([sys.executable, str(TOY), "drops-invalid"]),
        revisions=[R],
        campaigns=["invalid"],
        max_examples=0,
        timeout=1,
        shrink_time=1,
        skip_probes=frozenset(notes - kept),
        out_dir=tmp_path / "out",
    )
    stats = run(cfg)
    write_ci_reports(cfg, stats, junit, sarif_path)
    [campaign] = stats
    assert campaign.corpus == 8
    [finding] = [f for f in campaign.findings if f.violation.key == "error-codes:missing--32600"]
    assert len(finding.examples) >= 3, finding.examples
    assert finding.payload() not in finding.examples and len(set(finding.examples)) == len(finding.examples)
    assert [e.split('"id":')[1].split(",")[0] for e in finding.examples] == ["true", "1.5", "{}", "[]"]
    # the wrong jsonrpc members (the id readable, so no answer at all): one other cause
    [envelope] = [f for f in campaign.findings if f.violation.key == "one-response:missing"]
    assert '"jsonrpc":"1.0"' in envelope.payload() and len(envelope.examples) == 2
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    [entry] = [g for g in report["findings"] if g["key"] == finding.violation.key]
    assert [e["payload"] for e in entry["examples"]] == finding.examples
    assert entry["payload"] == finding.payload()
    [own] = [f for f in report["campaigns"][0]["findings"] if f["key"] == finding.violation.key]
    assert own["examples"] == finding.examples
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert summary.count(f"! {finding.violation.key} ") == 1
    assert f"same cause ({R} invalid): {finding.examples[0]}" in summary
    [result] = [
        r
        for r in json.loads(sarif_path.read_text())["runs"][0]["results"]
        if r["message"]["text"].startswith(finding.violation.key)
    ]
    assert result["properties"]["examples"] == entry["examples"]
    assert f"{len(finding.examples)} more cases of the same cause" in result["message"]["text"]
    failure = next(
        case.find("failure")
        for case in ET.parse(junit).getroot().iter("testcase")
        if case.get("name") == finding.violation.key
    )
    assert failure is not None and f"payload: {finding.payload()}" in (failure.text or "")
    assert f"same cause ({R} invalid): {finding.examples[0]}" in (failure.text or "")


def _finding(revision: str, campaign: str, severity: str, payload: str) -> tuple[CampaignStats, Finding]:
    stats = CampaignStats(revision, campaign)
    violation = orc.Violation("error-codes", "no error -32600", "missing--32600", severity=severity)
    finding = Finding(revision, campaign, violation, {"case": [{"text": payload, "note": "bad_id"}]})
    stats.findings.append(finding)
    return stats, finding


def test_findings_of_one_cause_across_revisions_and_campaigns_are_one_and_a_flaky_one_is_kept() -> None:
    a, _ = _finding("2025-06-18", "invalid", "flaky", '{"id":null}')
    b, found = _finding(R, "invalid", "violation", '{"jsonrpc":"1.0"}')
    found.add_example('{"id":true}')
    c, _ = _finding(R, "valid", "violation", '{"id":1.5}')
    [group] = grouped([a, b, c])
    assert group["severity"] == "violation" and group["payload"] == '{"jsonrpc":"1.0"}'
    assert group["revisions"] == ["2025-06-18", R] and group["campaigns"] == ["invalid", "valid"]
    assert group["examples"] == [
        {"payload": '{"id":null}', "revision": "2025-06-18", "campaign": "invalid", "flaky": True},
        {"payload": '{"id":true}', "revision": R, "campaign": "invalid"},
        {"payload": '{"id":1.5}', "revision": R, "campaign": "valid"},
    ]
    # the flaky one alone stays a flaky finding; it never fails the run
    [alone] = grouped([a])
    assert alone["severity"] == "flaky" and alone["examples"] == []
    text = summary(FuzzConfig(broken("good")), [a, b, c])
    assert text.count("error-codes:missing--32600 [") == 1
    assert 'same cause (2025-06-18 invalid, flaky): {"id":null}' in text
