"""``mcp-trio fuzz --client CMD --client-transport stdio``: the client launches a relay as its
stdio server, which connects back to the fuzzing server; the same plans and oracles as over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_trio._cli import main
from mcp_trio.fuzzing import ClientTarget, FuzzConfig, replay, run
from mcp_trio.fuzzing import client as C
from tests._support.fuzzing_views import CLIENT_STEP, client_campaign_argv
from tests._support.paths import ROOT

OWN_CLIENT = str(ROOT / "fuzz" / "targets" / "mcp_trio_client.py")
BROKEN = str(Path(__file__).with_name("broken_stdio_client.py"))


def test_the_server_command_is_appended_or_replaces_a_placeholder() -> None:
    relay = ["python3", "/x/_relay.py", "4242"]
    assert ClientTarget("client --stdio", transport="stdio").launch_argv(relay) == [
        "client",
        "--stdio",
        *relay,
    ]
    placed = ClientTarget(["client", "--server", "{server}", "-v"], transport="stdio").launch_argv(relay)
    assert placed == ["client", "--server", "python3 /x/_relay.py 4242", "-v"]
    assert ClientTarget("client {server} -v").launch_argv(["http://h/mcp"]) == [
        "client",
        "http://h/mcp",
        "-v",
    ]
    with pytest.raises(ValueError):
        ClientTarget("client", transport="pigeon")


@pytest.mark.parametrize("revision", ["2025-11-25", "2025-03-26"])
def test_a_good_run_of_our_client_over_stdio_passes_every_oracle(revision: str) -> None:
    target = ClientTarget([sys.executable, OWN_CLIENT, "--stdio"], transport="stdio")
    result = C.run_plan(target, revision, {"answers": {}, "steps": [CLIENT_STEP]}, timeout=3, run_time=20)
    assert C.check_client(result, 20) == [], result.output
    assert result.transport == "stdio" and not result.log.posts  # no HTTP at all
    roots = next(m for m, _ in result.log.client_messages if isinstance(m, dict) and m.get("id") == 10_001)
    assert roots["result"]["roots"][0]["uri"] == "file:///tmp"
    unknown = next(m for m, _ in result.log.client_messages if isinstance(m, dict) and m.get("id") == 10_002)
    assert unknown["error"]["code"] == -32601
    methods = [m.get("method") for m, _ in result.log.client_messages if isinstance(m, dict)]
    assert {"initialize", "tools/call", "ping"} <= set(methods)
    assert result.log.events[-1]["dir"] == "eof"  # the client closed its server's stdin


def test_our_client_over_stdio_in_2026_07_28() -> None:
    target = ClientTarget([sys.executable, OWN_CLIENT, "--stdio"], transport="stdio")
    result = C.run_plan(target, "2026-07-28", {"answers": {}, "steps": []}, timeout=3, run_time=20)
    assert C.check_client(result, 20) == [], result.output
    assert result.log.negotiated == "2026-07-28"
    assert not any(
        m.get("method") == "initialize" for m, _ in result.log.client_messages if isinstance(m, dict)
    )


def test_a_batch_in_2025_03_26_is_answered_with_one_array() -> None:
    target = ClientTarget([sys.executable, BROKEN, "batch"], transport="stdio")
    result = C.run_plan(target, "2025-03-26", {"answers": {}, "steps": []}, timeout=3, run_time=20)
    assert result.exit_code == 0, result.output  # it got both answers in one array
    assert C.check_client(result, 20) == []
    # the same batch in a revision without batches is refused (so this client waits in vain), and reported
    result = C.run_plan(target, "2025-11-25", {"answers": {}, "steps": []}, timeout=1, run_time=3)
    assert {"valid-message:batch", "alive:hang"} <= {v.key for v in C.check_client(result, 3)}


@pytest.mark.slow
def test_a_stdio_client_that_answers_twice_is_caught_and_the_finding_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = FuzzConfig(
        ClientTarget([sys.executable, BROKEN, "twice"], transport="stdio"),
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
    [finding] = [f for f in stats.findings if f.violation.key == "one-response:extra"]
    saved = json.loads(finding.path.read_text())  # type: ignore[union-attr]
    assert saved["target"] == {
        "kind": "client",
        "command": [sys.executable, BROKEN, "twice"],
        "transport": "stdio",
    }
    _, violations = replay(finding.path)  # type: ignore[arg-type]
    assert "one-response:extra" in {v.key for v in violations}
    assert main(["fuzz", "replay", str(finding.path)]) == 1
    assert "reproduced" in capsys.readouterr().err
    assert main(["fuzz", "replay", str(finding.path), "--client", f"{sys.executable} {BROKEN} good"]) == 0


@pytest.mark.slow
@pytest.mark.fuzz
def test_client_campaign_against_our_own_stdio_client_finds_nothing(tmp_path: Path) -> None:
    client = f"{sys.executable} {OWN_CLIENT} --stdio"
    options = ("--client-transport", "stdio")
    argv = client_campaign_argv(client, str(tmp_path), *options, examples=8, seed=5)
    assert main(argv) == 0, (tmp_path / "summary.txt").read_text()
    report = json.loads((tmp_path / "report.json").read_text())
    [campaign] = report["campaigns"]
    assert campaign["campaign"] == "client" and not campaign["findings"]
    assert campaign["sessions"] - campaign["corpus"] == 8  # (after the corpus, a run each)
