"""mcp_trio.fuzzing and ``mcp-trio fuzz``: strategies, oracles, findings that replay, and a
bounded campaign against our own everything server (stdio and HTTP) that must find nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio._cli import main
from mcp_trio.fuzzing import FuzzConfig, HttpTarget, StdioTarget, classify, replay, run
from mcp_trio.fuzzing import strategies as S
from mcp_trio.fuzzing.runner import Session
from mcp_trio.types import _versions
from tests._support.paths import ROOT

TOY = str(ROOT / "tests" / "programs" / "fuzz_toy_server.py")
EVERYTHING = str(ROOT / "examples" / "everything.py")
FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


# ------------------------------------------------------------- strategies


@FAST
@given(st.data())
def test_valid_items_are_accepted_by_the_generated_types(data: st.DataObject) -> None:
    revision = data.draw(st.sampled_from(_versions.SUPPORTED_VERSIONS))
    item = data.draw(S.valid_items(revision))
    assert S.accepts(revision, item.obj), item.obj
    expect = classify(json.dumps(item.obj).encode(), revision)
    assert not expect.null_required  # nothing about it calls for an error
    assert all(x.codes is None for x in expect.ids.values())


ALL_METHODS = [(r, m) for r in _versions.SUPPORTED_VERSIONS for m in S.client_methods(r)]


def test_every_client_method_of_every_revision_has_a_strategy() -> None:
    assert len(ALL_METHODS) > 60 and ("2026-07-28", "server/discover") in ALL_METHODS

    @settings(
        max_examples=len(ALL_METHODS) * 3,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.sampled_from(ALL_METHODS).flatmap(lambda rm: st.tuples(st.just(rm), S.valid_message(*rm))))
    def check(case: tuple[tuple[str, str], dict[str, object]]) -> None:
        (revision, method), msg = case
        assert msg["method"] == method and S.accepts(revision, msg), (revision, method, msg)

    check()


REJECTED = {
    "wrong_jsonrpc",
    "bad_id",
    "method_not_a_string",
    "no_method",
    "parse_error",
    "invalid_utf8",
    "empty_batch",
    "not_an_object",
    "batch",
    "embedded_newline",
    "request_without_id",
    "notification_with_id",
    "unknown_method",
}


@FAST
@given(st.data())
def test_invalid_items_are_rejected_by_the_generated_types(data: st.DataObject) -> None:
    revision = data.draw(st.sampled_from(_versions.SUPPORTED_VERSIONS))
    for item in data.draw(S.invalid_items(revision)):
        kind = item.note.split(":")[0]
        if item.raw is not None and kind in REJECTED:
            # as stdio frames: no line of it is a message the types accept
            for line in item.raw.split(b"\n"):
                try:
                    value = json.loads(line.decode("utf-8"))
                except (UnicodeDecodeError, ValueError, RecursionError):
                    continue  # not even JSON
                assert not S.accepts(revision, value), item
        elif (
            kind == "bad_id" and isinstance(item.obj.get("id"), int) and not isinstance(item.obj["id"], bool)
        ):
            continue  # an integer beyond 2**53: the types take it, the oracles are lenient about it
        elif kind in REJECTED:
            assert not S.accepts(revision, item.obj), item


def test_classify_names_the_spec_error_codes() -> None:
    r = "2025-11-25"
    assert classify(b"{nope", r).null_required == [-32700]
    assert classify(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}', r).null_required == []
    assert classify(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}', r).utf8_in_string == 1
    assert classify(b'{"jsonrpc":"2.0","id":1,"method":"ping"\xff}', r).null_required == [-32700]
    assert classify(b'{"jsonrpc":"2.0","id":null,"method":"ping"}', r).null_required == [-32600]
    assert classify(b'{"jsonrpc":"2.0","id":true,"method":"ping"}', r).null_required == [-32600]
    assert classify(b'{"jsonrpc":"2.0","id":1,"method":"no/such"}', r).ids["1"].codes == {-32601}
    assert classify(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}', r).ids[
        "1"
    ].codes == {-32602, -32601}  # (a server that does not implement the method may say so first)
    assert classify(b'{"jsonrpc":"2.0","method":"tools/list"}', r).ids == {}  # a notification: no answer
    ok = classify(b'{"jsonrpc":"2.0","id":"a","method":"tools/list"}', r).ids['"a"']
    assert ok.count == 1 and ok.codes is None and ok.method == "tools/list"


# ---------------------------------------------------------------- oracles


def toy(mode: str) -> StdioTarget:
    return StdioTarget([sys.executable, TOY, mode])


def test_a_good_toy_server_passes_every_oracle() -> None:
    session = Session(toy("good"), "2025-11-25", timeout=3)
    try:
        for payloads in (
            [b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'],
            [b"{nope", b'{"jsonrpc":"2.0","method":"notifications/initialized"}'],
            [b'{"jsonrpc":"2.0","id":2,"method":"no/such"}'],
        ):
            assert session.run_case(payloads).violations == []
    finally:
        session.close()


@pytest.mark.parametrize(
    ("mode", "campaign", "oracle"),
    [
        ("answers-notifications", "valid", "no-response-to-notification"),
        ("crashes", "invalid", "alive"),
        ("junk", "valid", "stdout"),
    ],
)
def test_a_broken_toy_server_is_found_and_the_finding_replays(
    mode: str, campaign: str, oracle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = FuzzConfig(
        toy(mode),
        revisions=["2025-11-25"],
        campaigns=[campaign],
        max_examples=60,
        timeout=2,
        shrink_time=5,
        max_findings=2,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    found = [f for f in stats.findings if f.violation.oracle == oracle]
    assert found, f"{mode}: {oracle} not found in {stats.examples} examples: {stats.findings}"
    finding = found[0]
    assert finding.path is not None and finding.path.exists()
    saved = json.loads(finding.path.read_text())
    assert saved["format"] == "mcp-trio-fuzz-transcript/2"
    assert saved["finding"]["spec"]  # the rule names its spec text
    assert any(e["dir"] == "send" for e in saved["events"]) and saved["case"]
    assert len(saved["case"]) <= 3  # shrunk
    # the library replay and the command both reproduce it
    _, violations = replay(finding.path)
    assert finding.violation.key in {v.key for v in violations}
    assert main(["fuzz", "replay", str(finding.path)]) == 1
    assert "reproduced" in capsys.readouterr().err
    report = json.loads((tmp_path / "report.json").read_text())
    assert finding.violation.key in [f["key"] for f in report["campaigns"][0]["findings"]]
    assert f"{len(stats.findings)} finding(s)" in (tmp_path / "summary.txt").read_text()


# ------------------------------------------------------ our own server

# Probes that once found bugs in our own server are tested on their own below; the
# self-campaigns run every probe kind.
KNOWN_STDIO: list[str] = []
KNOWN_HTTP: list[str] = []


@pytest.mark.fuzz
def test_campaign_against_everything_over_stdio_finds_nothing(tmp_path: Path) -> None:
    argv = [
        "fuzz",
        "--stdio",
        f"{sys.executable} {EVERYTHING}",
        "--revision",
        "2025-11-25",
        "--revision",
        "2025-03-26",
        "--revision",
        "2026-07-28",
        "--campaign",
        "valid",
        "--campaign",
        "invalid",
        "--max-examples",
        "40",
        "--timeout",
        "3",
        "--seed",
        "1",
        "--out",
        str(tmp_path),
        *KNOWN_STDIO,
    ]
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["examples"] - c["corpus"] for c in report["campaigns"]] == [40] * 6  # (and the corpus)
    assert all(not c["findings"] for c in report["campaigns"])


@pytest.mark.fuzz
def test_lifecycle_campaign_against_everything_over_stdio_finds_nothing(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        StdioTarget([sys.executable, EVERYTHING]),
        revisions=["2025-06-18"],
        campaigns=["lifecycle"],
        max_examples=6,
        timeout=3,
    )
    [stats] = run(cfg)
    assert stats.examples == 6 and stats.sessions >= 6 and not stats.findings


@pytest.mark.fuzz
def test_campaign_against_everything_over_http_finds_nothing(everything_http: str, tmp_path: Path) -> None:
    argv = [
        "fuzz",
        "--http",
        everything_http,
        "--revision",
        "2025-11-25",
        "--revision",
        "2026-07-28",
        "--max-examples",
        "20",
        "--timeout",
        "3",
        "--seed",
        "2",
        "--out",
        str(tmp_path),
        *KNOWN_HTTP,
    ]
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    ran = [c for c in report["campaigns"] if not c.get("skipped")]
    # (capabilities: in 2026-07-28 the everything server advertises everything there is to violate)
    assert {c["campaign"] for c in ran} == {"valid", "invalid", "lifecycle", "capabilities", "http"}
    assert all(c["examples"] - c["corpus"] == 20 and not c["findings"] for c in ran)


def test_deep_nesting_does_not_kill_the_stdio_server() -> None:
    session = Session(StdioTarget([sys.executable, EVERYTHING]), "2025-11-25", timeout=3)
    try:
        result = session.run_case([S._deep(1000)])
    finally:
        session.close()
    assert result.violations == []


def test_invalid_utf8_in_meta_does_not_kill_the_stdio_server() -> None:
    session = Session(StdioTarget([sys.executable, EVERYTHING]), "2026-07-28", timeout=3)
    try:
        result = session.run_case(
            [b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"x":"\xff"}}}']
        )
    finally:
        session.close()
    assert result.violations == []


def test_invalid_utf8_gets_an_http_answer(everything_http: str) -> None:
    session = Session(HttpTarget(everything_http), "2025-11-25", timeout=3)
    try:
        result = session.run_case([b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}'])
    finally:
        session.close()
    assert result.violations == []


def test_invalid_utf8_inside_a_string_answered_leniently_is_a_note_not_a_violation() -> None:
    """RFC 8259 section 9 lets a parser accept it: answering it is recorded, not failed."""
    from mcp_trio.fuzzing.oracles import CaseView, check
    from tests._support.fuzzing_views import case_view

    payload = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"\xff"}}}'

    def view(answer: dict[str, object]) -> CaseView:
        return case_view("2025-11-25", [payload], [answer])

    [note] = check(view({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert note.severity == "note" and note.key == "error-codes:utf8-accepted"
    assert check(view({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}})) == []


# ------------------------------------------------- HTTP probes, stateful


@pytest.mark.parametrize(
    "probe",
    ["foreign-host", "wrong-method", "get-bad-last-event-id", "delete-then-reuse", "abandoned-requests"],
)
def test_the_http_probes_pass_against_our_server(everything_http: str, probe: str) -> None:
    from mcp_trio.fuzzing._http_probes import _http_case

    session = Session(HttpTarget(everything_http), "2025-11-25", timeout=3)
    try:
        first = session.conn.session_id
        assert _http_case(session, probe) == []
        assert session.run_case([]).violations == []  # (a new session after DELETE)
        if probe == "delete-then-reuse":
            assert session.conn.session_id not in (None, first)
            statuses = [ex.status for ex in session.conn.http if ex.method in ("DELETE", "POST")]
            assert 404 in statuses
    finally:
        session.close()


@pytest.mark.fuzz
def test_stateful_campaign_against_everything_over_http_finds_nothing(
    everything_http: str, tmp_path: Path
) -> None:
    argv = [
        "fuzz",
        "--http",
        everything_http,
        "--revision",
        "2025-11-25",
        "--revision",
        "2025-03-26",
        "--campaign",
        "stateful",
        "--max-examples",
        "10",
        "--timeout",
        "3",
        "--seed",
        "4",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    assert [c["campaign"] for c in report["campaigns"]] == ["stateful", "stateful"]
    assert all(c["examples"] >= 10 and not c["findings"] and "aborted" not in c for c in report["campaigns"])


@pytest.mark.slow
@pytest.mark.fuzz
def test_stateful_campaign_against_everything_over_stdio_finds_nothing() -> None:
    cfg = FuzzConfig(
        StdioTarget([sys.executable, EVERYTHING]),
        revisions=["2025-11-25"],
        campaigns=["stateful"],
        max_examples=4,
        timeout=3,
        seed=5,
    )
    [stats] = run(cfg)
    assert stats.examples >= 4 and stats.sessions >= 4 and not stats.findings and not stats.aborted


@pytest.mark.slow
def test_stateful_campaign_finds_a_broken_toy_and_the_steps_replay(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        toy("answers-notifications"),
        revisions=["2025-11-25"],
        campaigns=["stateful"],
        max_examples=10,
        timeout=2,
        shrink_time=3,
        max_findings=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    [finding] = stats.findings
    assert finding.violation.oracle == "no-response-to-notification"
    saved = json.loads(finding.path.read_text())  # type: ignore[union-attr]
    assert saved["campaign"] == "stateful" and saved["steps"][0]["rule"] == "initialize"
    assert main(["fuzz", "replay", str(finding.path)]) == 1


def test_version_negotiation_oracle_against_a_toy_that_always_answers_2025_11_25() -> None:
    from mcp_trio.fuzzing.stateful import run_steps

    def keys(mode: str, revision: str, version: str) -> set[str]:
        violations, _ = run_steps(
            toy(mode), revision, [{"rule": "initialize", "version": version, "capabilities": {}}], 3
        )
        return {v.key for v in violations}

    assert keys("good", "2025-11-25", "2025-11-25") == set()
    assert keys("good", "2025-11-25", "1999-01-01") == set()  # another version it supports: fine
    # it speaks only 2025-11-25, as far as anything it says shows: answering that is its right
    assert keys("good", "2025-06-18", "2025-06-18") == set()
    # this one answers 2025-11-25 to a version that does not exist, so it speaks it
    assert keys("ignores-version", "2024-11-05", "2025-11-25") == {"version-negotiation:not-same"}


def test_a_revision_the_server_does_not_speak_is_skipped_unless_asked() -> None:
    base = dict(revisions=["2025-06-18"], campaigns=["valid"], max_examples=2, timeout=3)
    [skipped] = run(FuzzConfig(toy("good"), **base))  # type: ignore[arg-type]
    assert skipped.skipped and "does not speak 2025-06-18" in skipped.skipped
    [forced] = run(FuzzConfig(toy("good"), all_revisions=True, **base))  # type: ignore[arg-type]
    assert not forced.skipped and forced.examples == 2


def test_an_aborted_campaign_is_visible_in_the_summary_and_the_report(tmp_path: Path) -> None:
    """A fuzzer error mid-campaign stops that campaign and says so; the next one still runs."""
    from mcp_trio.fuzzing import runner

    class Exploding(StdioTarget):
        def open(self):  # type: ignore[no-untyped-def]
            raise RuntimeError("no such terminal")

    cfg = FuzzConfig(
        Exploding([sys.executable, TOY]),
        revisions=["2025-11-25"],
        campaigns=["valid", "invalid"],
        max_examples=3,
        timeout=2,
        out_dir=tmp_path,
    )
    stats = run(cfg)
    assert [s.aborted for s in stats] == ["RuntimeError: no such terminal"] * 2
    summary = (tmp_path / "summary.txt").read_text()
    assert summary.count("ABORTED after 1 examples: RuntimeError: no such terminal") == 2
    assert json.loads((tmp_path / "report.json").read_text())["campaigns"][0]["aborted"]
    assert not runner.violations_found(stats)


@pytest.mark.interop
def test_sse_disconnect_then_resume_against_a_resumable_server() -> None:
    """The official SDK's resumable app (an event store) gives its events ids: the probe drops the
    stream after the priming event and gets the answer on the GET that resumes it."""
    from mcp_trio.fuzzing._http_probes import _http_case

    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "tests" / "programs" / "sdk_http_server.py")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None
        ports = json.loads(proc.stdout.readline())
        session = Session(HttpTarget(f"http://127.0.0.1:{ports['sse']}/mcp"), "2025-11-25", timeout=5)
        try:
            assert _http_case(session, "sse-disconnect-resume") == []
            notes = [e for e in session.conn.events if e["dir"] == "note"]
            assert notes and "disconnected after SSE event id" in notes[0]["text"]
            resumed = [ex for ex in session.conn.http if ex.method == "GET"]
            assert resumed and resumed[0].status == 200
            assert repr(dict(resumed[0].headers)["Last-Event-ID"]) in notes[0]["text"]
            assert any(
                r.http == resumed[0].index and r.message.get("id", "").startswith("fuzz-probe")
                for r in session.conn.received
                if isinstance(r.message, dict)
            )
        finally:
            session.close()
    finally:
        proc.terminate()
        proc.wait(5)
        proc.stdout.close()  # type: ignore[union-attr]
