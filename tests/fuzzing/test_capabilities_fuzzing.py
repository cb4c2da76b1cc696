"""The ``capabilities`` campaign: requests for capabilities the peer did not advertise, against
servers (stdio and HTTP) and clients (``--client``), and the batches of ``--client`` mode."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio._cli import main
from mcp_trio.fuzzing import ClientTarget, FuzzConfig, HttpTarget, StdioTarget, replay, run
from mcp_trio.fuzzing import client as C
from mcp_trio.fuzzing import oracles as O
from mcp_trio.fuzzing import strategies as S
from mcp_trio.fuzzing.runner import Session
from tests._support.fuzzing import EVERYTHING, serve_http

HERE = Path(__file__).resolve().parent
BROKEN_SERVER = str(HERE / "broken_server.py")
TOOLS_ONLY = str(HERE / "tools_only_server.py")
BROKEN_CLIENT = str(HERE / "broken_client.py")
OWN_CLIENT = str(HERE.parents[1] / "fuzz" / "targets" / "mcp_trio_client.py")
FAST = settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def broken(mode: str) -> StdioTarget:
    return StdioTarget([sys.executable, BROKEN_SERVER, mode])


# ------------------------------------------------------------- strategies


def test_what_a_tools_only_negotiation_rules_out() -> None:
    r = "2025-11-25"
    methods = S.unadvertised_methods(r, {"tools": {}}, {})
    for m in (
        "prompts/list",
        "prompts/get",
        "resources/read",
        "resources/subscribe",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/result",
        "tasks/list",
        "notifications/roots/list_changed",
    ):
        assert m in methods, m
    assert not {"tools/call", "tools/list", "ping", "initialize", "notifications/cancelled"} & set(methods)
    # a sub-capability: resources without subscribe rules out subscribe, not read
    partial = S.unadvertised_methods(r, {"resources": {"subscribe": False, "listChanged": True}}, {})
    assert "resources/subscribe" in partial and "resources/read" not in partial
    # the sender's side: a client that declares roots.listChanged may send its notification
    assert "notifications/roots/list_changed" not in S.unadvertised_methods(
        r, {}, {"roots": {"listChanged": True}}
    )
    assert S.gate(r, "tasks/get") == ("tasks",) and S.gate(r, "ping") is None
    # server to client: what a client that declared nothing must not be asked
    assert set(S.unadvertised_methods(r, {}, C.initialize_result(r)["capabilities"], direction="server")) == {
        "elicitation/create",
        "roots/list",
        "sampling/createMessage",
        "tasks/cancel",
        "tasks/get",
        "tasks/list",
        "tasks/result",
    }


@FAST
@given(
    st.sampled_from(["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]).flatmap(
        lambda r: st.tuples(st.just(r), S.capability_cases(r, S.unadvertised_methods(r, {"tools": {}}, {})))
    )
)
def test_capability_cases_are_valid_messages_of_unadvertised_methods(case: tuple[str, list[S.Item]]) -> None:
    revision, items = case
    ruled_out = S.unadvertised_methods(revision, {"tools": {}}, {})
    probes = [i for i in items if i.note.startswith("capability:")]
    assert 1 <= len(probes) <= 3 and len({i.obj["method"] for i in probes}) == len(probes)
    for item in items:
        assert S.accepts(revision, item.obj), item.obj
        if item in probes:
            assert item.note == f"capability:{item.obj['method']}" and item.obj["method"] in ruled_out


def test_the_capabilities_oracle_grades_answers_as_notes() -> None:
    ok = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no"}}
    assert O.judge_capability_answer("prompts/list", ok) is None
    assert (
        O.judge_capability_answer("tasks/get", {**ok, "error": {"code": -32602, "message": "no task"}})
        is None
    )
    result = O.judge_capability_answer("prompts/list", {"jsonrpc": "2.0", "id": 1, "result": {"prompts": []}})
    other = O.judge_capability_answer("prompts/list", {**ok, "error": {"code": -32603, "message": "x"}})
    assert result is not None and result.key == "capabilities:result-instead-of-error"
    assert other is not None and other.key == "capabilities:code"
    assert result.severity == other.severity == "note" and "negotiated" in result.to_json()["spec"]
    # judged only for messages the types accept, by method and the receiver's capabilities
    sent = [
        b'{"jsonrpc":"2.0","id":1,"method":"prompts/list"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":5}}',
    ]
    assert O.gated_requests("2025-11-25", sent, {"tools": {}}) == {"1": "prompts/list"}


# ---------------------------------------------------------------- servers


def test_a_server_that_refuses_with_method_not_found_is_clean() -> None:
    cfg = FuzzConfig(
        broken("good"),
        revisions=["2025-11-25", "2025-03-26"],
        campaigns=["capabilities"],
        max_examples=15,
        timeout=2,
    )
    stats = run(cfg)
    assert [(s.examples, s.sessions, s.findings, s.skipped) for s in stats] == [(15, 1, [], None)] * 2


def test_a_server_that_never_answers_an_unadvertised_request_is_caught_and_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = FuzzConfig(
        broken("silent"),
        revisions=["2025-11-25"],
        campaigns=["capabilities"],
        max_examples=4,
        timeout=0.5,
        shrink_time=2,
        max_findings=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    [finding] = stats.findings
    assert finding.violation.key == "one-response:missing" and finding.path is not None
    saved = json.loads(finding.path.read_text())
    assert saved["campaign"] == "capabilities" and saved["server_capabilities"] == {"tools": {}}
    assert len(saved["case"]) == 1 and saved["case"][0]["note"].startswith("capability:")
    _, violations = replay(finding.path)
    assert "one-response:missing" in {v.key for v in violations}
    assert main(["fuzz", "replay", str(finding.path)]) == 1
    assert "reproduced" in capsys.readouterr().err
    # the same case against a server that answers is clean
    assert (
        main(["fuzz", "replay", str(finding.path), "--stdio", f"{sys.executable} {BROKEN_SERVER} good"]) == 0
    )


def test_a_nonstandard_refusal_is_a_note_that_does_not_fail_the_run(tmp_path: Path) -> None:
    argv = [
        "fuzz",
        "--stdio",
        f"{sys.executable} {BROKEN_SERVER} internal-error",
        "--campaign",
        "capabilities",
        "--max-examples",
        "5",
        "--timeout",
        "2",
        "--shrink-time",
        "2",
        "--max-findings",
        "1",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0  # notes alone do not fail a run
    report = json.loads((tmp_path / "report.json").read_text())
    [finding] = report["campaigns"][0]["findings"]
    assert finding["key"] == "capabilities:code" and finding["severity"] == "note"
    assert "capabilities" in report["oracles"]
    _, violations = replay(finding["transcript"])
    assert "capabilities:code" in {v.key for v in violations}


@pytest.mark.fuzz
def test_capabilities_campaign_against_our_servers_over_stdio_finds_nothing() -> None:
    """The everything server advertises every capability but tasks' roots notification is left
    to violate; a server of ours with one tool still advertises all but tasks."""
    for script in (EVERYTHING, TOOLS_ONLY):
        cfg = FuzzConfig(
            StdioTarget([sys.executable, script]),
            revisions=["2025-11-25", "2025-03-26", "2026-07-28"],
            campaigns=["capabilities"],
            max_examples=15,
            timeout=3,
        )
        stats = run(cfg)
        assert [s.examples for s in stats[:2]] == [15, 15] and not any(s.findings for s in stats), script
        assert stats[2].skipped is not None and "nothing to violate" in stats[2].skipped


@pytest.mark.fuzz
def test_capabilities_campaign_against_everything_over_http_finds_nothing(everything_http: str) -> None:
    cfg = FuzzConfig(
        HttpTarget(everything_http),
        revisions=["2025-11-25", "2025-06-18"],
        campaigns=["capabilities"],
        max_examples=15,
        timeout=3,
    )
    stats = run(cfg)
    assert [(s.examples, s.findings) for s in stats] == [(15, [])] * 2


def test_our_tools_only_server_over_http_refuses_unadvertised_tasks(tmp_path: Path) -> None:
    with serve_http(TOOLS_ONLY, tmp_path / "stderr.txt") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=3)
        try:
            assert "tasks" not in session.server_capabilities
            session.judge_capabilities = True
            case = [
                b'{"jsonrpc":"2.0","id":"a","method":"tasks/list"}',
                b'{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}',
                b'{"jsonrpc":"2.0","id":"b","method":"tasks/get","params":{"taskId":"t"}}',
            ]
            assert session.run_case(case).violations == []
        finally:
            session.close()


# ---------------------------------------------------------------- clients


def test_a_client_that_declared_a_capability_is_not_asked_to_violate_it() -> None:
    plan = {
        "answers": {},
        "steps": [
            [
                {
                    "note": "capability:roots/list",
                    "message": {"jsonrpc": "2.0", "id": 1, "method": "roots/list"},
                },
                {
                    "note": "capability:sampling/createMessage",
                    "message": {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "sampling/createMessage",
                        "params": {"messages": [], "maxTokens": 1},
                    },
                },
            ]
        ],
    }
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "good"]), "2025-11-25", plan, timeout=2, run_time=15
    )
    assert result.log.client_capabilities == {"roots": {}}
    assert [e["note"] for e in result.log.events if e["dir"] == "skip"] == ["capability:roots/list"]
    assert [s["method"] for s in result.log.sent.values()] == ["sampling/createMessage", "ping"]
    assert C.check_client(result, 15) == []


@pytest.mark.slow
@pytest.mark.fuzz
def test_capabilities_campaign_against_our_bare_client_finds_nothing(tmp_path: Path) -> None:
    argv = [
        "fuzz",
        "--client",
        f"{sys.executable} {OWN_CLIENT} --bare",
        "--campaign",
        "capabilities",
        "--revision",
        "2025-11-25",
        "--revision",
        "2025-03-26",
        "--max-examples",
        "4",
        "--timeout",
        "3",
        "--run-time",
        "20",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    assert [(c["examples"] - c["corpus"], c["findings"]) for c in report["campaigns"]] == [(4, [])] * 2


@pytest.mark.slow
def test_a_client_that_obliges_undeclared_requests_is_noted_and_replays(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, BROKEN_CLIENT, "obliging"]),
        revisions=["2025-11-25"],
        campaigns=["capabilities"],
        max_examples=3,
        timeout=1,
        run_time=15,
        shrink_time=2,
        max_findings=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    [finding] = stats.findings
    assert (
        finding.violation.key == "capabilities:result-instead-of-error"
        and finding.violation.severity == "note"
    )
    saved = json.loads(finding.path.read_text())  # type: ignore[union-attr]
    assert saved["campaign"] == "capabilities" and saved["target"]["kind"] == "client"
    assert saved["client_capabilities"] == {"roots": {}}
    assert finding.path is not None
    _, violations = replay(finding.path)
    assert finding.violation.key in {v.key for v in violations}
    good = ClientTarget([sys.executable, BROKEN_CLIENT, "good"])
    _, violations = replay(finding.path, target=good)  # type: ignore[arg-type]
    assert violations == []


def test_client_capabilities_in_the_stateless_revision_are_refused_clearly(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, BROKEN_CLIENT, "stateless"]),
        revisions=["2026-07-28"],
        campaigns=["capabilities"],
        max_examples=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    assert stats.skipped is not None and "InputRequiredResult" in stats.skipped and stats.sessions == 0
    assert "InputRequiredResult" in (tmp_path / "summary.txt").read_text()


# ---------------------------------------------------------------- batches


def test_the_fuzzing_server_answers_each_request_of_a_2025_03_26_batch() -> None:
    plan = {
        "answers": {"ping": [{"kind": "error", "error": {"code": -32000, "message": "planned"}}]},
        "steps": [],
    }
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "batch"]), "2025-03-26", plan, timeout=2, run_time=15
    )
    assert result.exit_code == 0, result.output  # (the client exits 1 unless both requests were answered)
    answers = [json.loads(e["text"]) for e in result.log.events if e["dir"] == "send" and "text" in e]
    by_id = {a.get("id"): a for a in answers if "method" not in a}
    assert (
        "result" in by_id[2] and by_id[3]["error"]["message"] == "planned"
    )  # the plan applies inside batches
    assert C.check_client(result, 15) == []


def test_a_batch_in_a_revision_without_batches_is_refused_and_reported() -> None:
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "batch"]),
        "2025-11-25",
        {"answers": {}, "steps": []},
        timeout=2,
        run_time=15,
    )
    keys = {v.key for v in C.check_client(result, 15)}
    assert "valid-message:batch" in keys
    refused = [e for e in result.log.posts if e.get("refused_batch")]
    assert len(refused) == 1
