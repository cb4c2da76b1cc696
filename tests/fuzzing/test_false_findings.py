"""Findings the fuzzer must not make, each next to the real breach it must still report (issue
#41): a slow start is not a silence, a deeply nested request answered correctly over HTTP is not
a notification, a server that speaks only 2024-11-05 is not asked for 2025-11-25, a 2025-03-26
server owes nothing to a header its revision does not have."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from mcp_trio.fuzzing import FuzzConfig, HttpTarget, StdioTarget, Violation, run
from mcp_trio.fuzzing import oracles as orc
from mcp_trio.fuzzing._findings import CampaignStats
from mcp_trio.fuzzing._http_probes import _http_case
from mcp_trio.fuzzing.runner import Session
from tests._support.fuzzing import sse_server
from tests._support.fuzzing_views import case_view
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


# --------------------------- a deep request answered over HTTP is not a notification

DEEP = b"[" * 1000 + b"]" * 1000


def deep(message: bytes) -> bytes:
    """``message`` (a JSON object text) with a params member nested 1,000 levels deep."""
    return message[:-1] + b',"params":{"_meta":{"deep":' + DEEP + b"}}}"


def test_a_deep_request_answered_over_http_is_not_a_notification() -> None:
    with sse_server("good") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=3)
        try:
            result = session.run_case([deep(b'{"jsonrpc":"2.0","id":"deep","method":"ping"}')])
        finally:
            session.close()
    assert result.violations == []
    answered = [e for e in session.conn.events if e["dir"] == "recv" and '"deep"' in e.get("text", "")]
    assert answered  # (the server did read it and answer it)


def test_a_deep_notification_answered_with_200_is_still_flagged() -> None:
    with sse_server("notification-200") as url:
        session = Session(HttpTarget(url), "2025-11-25", timeout=3)
        try:
            found = session.run_case([deep(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')])
        finally:
            session.close()
    assert [(v.key, v.severity) for v in found.violations] == [
        ("http-status:200-for-notification", "violation")
    ]


# -------------------- MCP-Protocol-Version is not a 2025-03-26 header


def protocol_version_probe(revision: str) -> list[Violation]:
    with sse_server("good") as url:  # (it ignores MCP-Protocol-Version)
        session = Session(HttpTarget(url), revision, timeout=3)
        try:
            assert session.negotiated == revision
            return _http_case(session, "bad-protocol-version")
        finally:
            session.close()


def test_a_2025_03_26_server_that_ignores_the_protocol_version_header_is_not_flagged() -> None:
    assert protocol_version_probe("2025-03-26") == []


def test_a_2025_06_18_server_that_ignores_the_protocol_version_header_is_flagged() -> None:
    [found] = protocol_version_probe("2025-06-18")
    assert (found.key, found.severity) == ("http-session:bad-protocol-version", "violation")
    cite = found.to_json("2025-06-18")["cites"]
    assert cite["document"] == "docs/specification/2025-06-18/basic/transports.mdx"
    assert "MUST respond with 400 Bad Request" in cite["text"]


# ------------- 2026-07-28 has no GET stream: a 5xx to one is not its earlier revisions' MUST


def get_probe(revision: str) -> list[Violation]:
    with sse_server("good") as url:  # (no GET: 501 Not Implemented)
        session = Session(HttpTarget(url), revision, timeout=3)
        try:
            return _http_case(session, "get-bad-last-event-id")
        finally:
            session.close()


def test_a_5xx_to_a_get_in_2026_07_28_is_judged_by_that_revisions_text() -> None:
    [found] = get_probe("2026-07-28")
    assert (found.key, found.rule, found.severity) == ("http-status:5xx", "http-server-error", "note")
    cite = found.to_json("2026-07-28")["cites"]
    assert cite["document"] == "docs/specification/2026-07-28/basic/transports/streamable-http.mdx"


def test_a_5xx_to_a_get_in_2025_11_25_breaks_the_get_must() -> None:
    [found] = get_probe("2025-11-25")
    assert (found.key, found.rule, found.severity) == ("http-status:last-event-id", "http-get", "violation")
    assert "or else return HTTP 405 Method Not Allowed" in found.to_json("2025-11-25")["cites"]["text"]


@pytest.mark.parametrize("written", ["-0.0", "1.0"])
def test_an_integral_float_id_answered_as_the_integer_is_no_finding(written: str) -> None:
    # the TypeScript SDK reads -0.0 as the number 0 and answers with id 0: the same JSON number
    value = int(float(written))
    for method in ("ping", "notifications/progress"):  # (a notification's method, sent with an id)
        payload = f'{{"jsonrpc":"2.0","id":{written},"method":"{method}"}}'.encode()
        answered = {"jsonrpc": "2.0", "id": value, "result": {}}
        refused = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        for answers in ([answered], [refused], []):
            for transport in ("stdio", "http"):
                view = case_view("2025-11-25", [payload], answers, transport=transport)
                assert orc.check(view) == [], (method, answers, transport)
