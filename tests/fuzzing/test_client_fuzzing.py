"""``mcp-trio fuzz --client``: the fuzzing server, the client-side oracles, replay of client findings,
a bounded campaign against our own client that must find nothing, and a broken client that is caught."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio._cli import main
from mcp_trio.fuzzing import ClientTarget, FuzzConfig, replay, run
from mcp_trio.fuzzing import client as C
from mcp_trio.fuzzing.strategies import client_methods
from mcp_trio.types import _versions
from tests._support.fuzzing_views import CLIENT_STEP, client_campaign_argv
from tests._support.paths import ROOT

OWN_CLIENT = str(ROOT / "fuzz" / "targets" / "mcp_trio_client.py")
BROKEN = str(Path(__file__).with_name("broken_client.py"))
HANDSHAKE = [v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]


def test_the_default_answers_decode_as_the_method_results() -> None:
    for revision in HANDSHAKE:
        for method in client_methods(revision, "request"):
            spec = _versions.methods_for(revision)[method]
            if spec.results:
                msgspec.json.decode(
                    json.dumps(C.default_result(revision, method)).encode(), type=spec.results[0]
                )


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(HANDSHAKE).flatmap(lambda r: st.tuples(st.just(r), C.plans(r))))
def test_plans_are_plain_json_for_transcripts(case: tuple[str, dict[str, object]]) -> None:
    revision, plan = case
    assert json.loads(json.dumps(plan)) == plan
    methods = set(_versions.methods_for(revision))
    for step in plan["steps"]:  # type: ignore[union-attr]
        for inj in step:
            message = inj["message"]
            members = message if isinstance(message, list) else [message]
            assert inj["note"] in ("batch", "empty_batch") or not isinstance(message, list)
            for member in members:
                assert inj["note"] == "unknown_method" or member["method"] in methods


def test_a_good_run_of_our_client_passes_every_oracle() -> None:
    plan = {
        "answers": {},
        "steps": [CLIENT_STEP],
    }
    result = C.run_plan(
        ClientTarget([sys.executable, OWN_CLIENT]), "2025-11-25", plan, timeout=3, run_time=20
    )
    assert C.check_client(result, 20) == [], result.output
    roots = next(
        msg
        for msg in (m for m, _ in result.log.client_messages)
        if isinstance(msg, dict) and msg.get("id") == 10_001
    )
    assert roots["result"]["roots"][0]["uri"] == "file:///tmp"
    assert {p["method"] for p in result.log.posts} >= {"POST", "DELETE"}


@pytest.mark.slow
@pytest.mark.fuzz
def test_client_campaign_against_our_own_client_finds_nothing(tmp_path: Path) -> None:
    argv = client_campaign_argv(f"{sys.executable} {OWN_CLIENT}", str(tmp_path), examples=12, seed=3)
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    [campaign] = report["campaigns"]
    assert campaign["campaign"] == "client" and campaign["examples"] - campaign["corpus"] == 12
    assert campaign["corpus"] > 0 and campaign["sessions"] == campaign["examples"]  # (the corpus first)
    assert not campaign["findings"] and "client-http" in report["oracles"]


@pytest.mark.slow
def test_a_client_that_answers_twice_is_caught_and_the_finding_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, BROKEN, "twice"]),
        revisions=["2025-11-25"],
        campaigns=["client"],
        max_examples=5,
        timeout=1,
        run_time=15,
        shrink_time=3,
        max_findings=1,
        out_dir=tmp_path,
    )
    [stats] = run(cfg)
    # (the corpus runs whole: a result for ping's params "params" is a finding too, a deviation)
    [finding] = [f for f in stats.findings if f.violation.key == "one-response:extra"]
    assert stats.capped
    saved = json.loads(finding.path.read_text())  # type: ignore[union-attr]
    assert saved["campaign"] == "client" and saved["target"]["kind"] == "client" and "plan" in saved
    assert saved["finding"]["spec"]
    _, violations = replay(finding.path)  # type: ignore[arg-type]
    assert "one-response:extra" in {v.key for v in violations}
    # the command reproduces it too, and the same plan against a correct client does not
    assert main(["fuzz", "replay", str(finding.path)]) == 1
    assert "reproduced" in capsys.readouterr().err
    assert main(["fuzz", "replay", str(finding.path), "--client", f"{sys.executable} {BROKEN} good"]) == 0
    assert "stopped at 1 findings" in (tmp_path / "summary.txt").read_text()


def test_a_client_that_never_starts_a_session_is_reported(tmp_path: Path) -> None:
    target = ClientTarget([sys.executable, "-c", "import sys; sys.exit(3)"])
    result = C.run_plan(target, "2025-11-25", {"answers": {}, "steps": []}, timeout=1, run_time=10)
    keys = {v.key for v in C.check_client(result, 10)}
    assert keys == {"alive:exit-status", "alive:no-initialize"}


def test_a_hanging_client_is_stopped_and_reported() -> None:
    target = ClientTarget([sys.executable, "-c", "import time; time.sleep(60)"])
    result = C.run_plan(target, "2025-11-25", {"answers": {}, "steps": []}, timeout=1, run_time=1)
    assert result.hung and "alive:hang" in {v.key for v in C.check_client(result, 1)}


def test_server_campaigns_and_client_targets_do_not_mix(tmp_path: Path) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, OWN_CLIENT]),
        revisions=["2025-11-25", "2026-07-28"],
        campaigns=["valid", "client"],
        max_examples=1,
        time_budget=2,  # (the client corpus is cut short: a process per case)
        out_dir=tmp_path,
    )
    stats = run(cfg)
    skipped = [(s.revision, s.campaign) for s in stats if s.skipped]
    assert skipped == [("2025-11-25", "valid"), ("2026-07-28", "valid")]  # (both revisions are served)
    assert "skipped" in (tmp_path / "summary.txt").read_text()


def test_skip_leaves_a_kind_of_probe_out_of_client_plans() -> None:
    from mcp_trio.fuzzing.runner import CampaignStats

    cfg = FuzzConfig(
        ClientTarget([sys.executable, OWN_CLIENT]), skip_probes=frozenset({"params@ping", "mutated"})
    )
    hunt = C.client_hunt(cfg, "2025-11-25", CampaignStats("2025-11-25", "client"))

    @settings(max_examples=30, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(hunt.strategy)
    def check(plan: dict[str, object]) -> None:
        assert not C.plan_kinds(plan) & {"params@ping", "mutated"}
        pings = [
            i
            for step in plan["steps"]  # type: ignore[union-attr]
            for i in step
            if isinstance(i["message"], dict) and i["message"].get("method") == "ping"
        ]
        assert all(not i["note"].startswith("params") for i in pings)

    check()


@pytest.mark.parametrize("params", ["x", {"_meta": 1.5}])
def test_our_client_refuses_a_ping_with_invalid_params(params: object) -> None:
    plan = {
        "answers": {},
        "steps": [
            [
                {
                    "note": "params:wrong_type",
                    "message": {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": params},
                }
            ]
        ],
    }
    result = C.run_plan(
        ClientTarget([sys.executable, OWN_CLIENT]), "2025-11-25", plan, timeout=3, run_time=20
    )
    assert C.check_client(result, 20) == []
