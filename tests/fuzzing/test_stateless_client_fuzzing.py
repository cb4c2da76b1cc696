"""``mcp-trio fuzz --client`` in 2026-07-28: no handshake, ``server/discover``, the ``_meta`` of
every request and the request headers of Streamable HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_trio._cli import main
from mcp_trio.fuzzing import ClientTarget, FuzzConfig, run
from mcp_trio.fuzzing import client as C
from tests._support.fuzzing_views import client_campaign_argv

HERE = Path(__file__).resolve().parent
BROKEN_CLIENT = str(HERE / "broken_client.py")
OWN_CLIENT = str(HERE.parents[1] / "fuzz" / "targets" / "mcp_trio_client.py")
R = "2026-07-28"
LOG_STEP = {
    "note": "valid",
    "message": {
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "data": "fuzz"},
    },
}


def test_a_stateless_client_is_served_and_judged() -> None:
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "stateless"]),
        R,
        {"answers": {}, "steps": [[LOG_STEP]]},
        timeout=2,
        run_time=15,
    )
    assert result.exit_code == 0, result.output
    assert result.log.negotiated == R and result.log.session_id is None
    assert [p["message"]["method"] for p in result.log.posts] == ["server/discover", "tools/list"]
    discover = json.loads(next(e["text"] for e in result.log.events if e["dir"] == "send"))
    assert discover["result"]["supportedVersions"] == [R]
    assert C.check_client(result, 15) == []


def test_a_stateless_client_without_the_method_header_is_caught() -> None:
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "stateless-no-method"]),
        R,
        {"answers": {}, "steps": []},
        timeout=2,
        run_time=15,
    )
    violations = C.check_client(result, 15)
    assert {v.key for v in violations} == {"client-http:headers"}
    assert all("Mcp-Method header is missing" in v.message for v in violations)


def test_a_request_without_its_meta_is_refused_and_the_client_never_started() -> None:
    # a handshake client asked for 2026-07-28: its initialize names no version in _meta
    result = C.run_plan(
        ClientTarget([sys.executable, BROKEN_CLIENT, "good"]),
        R,
        {"answers": {}, "steps": []},
        timeout=2,
        run_time=15,
    )
    assert result.exit_code != 0 and result.log.negotiated is None
    assert "alive:no-request" in {v.key for v in C.check_client(result, 15)}
    assert C._speaks_another_revision(result)


def test_a_client_that_does_not_speak_the_stateless_revision_is_skipped(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, BROKEN_CLIENT, "good"]),
        revisions=[R],
        campaigns=["client"],
        max_examples=3,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    assert stats.skipped is not None and "does not speak 2026-07-28" in stats.skipped and not stats.findings


def test_our_client_speaks_the_stateless_revision_to_the_fuzzing_server() -> None:
    result = C.run_plan(
        ClientTarget([sys.executable, OWN_CLIENT]),
        R,
        {"answers": {}, "steps": [[LOG_STEP]]},
        timeout=3,
        run_time=20,
    )
    assert result.exit_code == 0, result.output
    methods = [p["message"]["method"] for p in result.log.posts if isinstance(p.get("message"), dict)]
    assert methods[0] == "server/discover" and "tools/call" in methods
    assert C.check_client(result, 20) == []


def test_our_client_sends_no_response_for_a_junk_event_in_the_stateless_revision() -> None:
    plan = {"answers": {"tools/list": [{"kind": "junk-event", "text": "not json"}]}, "steps": []}
    result = C.run_plan(ClientTarget([sys.executable, OWN_CLIENT]), R, plan, timeout=3, run_time=20)
    assert C.check_client(result, 20) == []


@pytest.mark.slow
@pytest.mark.fuzz
def test_client_campaign_against_our_own_client_in_the_stateless_revision_finds_nothing(
    tmp_path: Path,
) -> None:
    client = f"{sys.executable} {OWN_CLIENT}"
    argv = client_campaign_argv(client, str(tmp_path), "--revision", R, examples=8, seed=3)
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    [campaign] = report["campaigns"]
    assert campaign["examples"] - campaign["corpus"] == 8 and not campaign["findings"]
