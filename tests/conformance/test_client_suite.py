"""The acceptance test of the client: the official conformance suite's client mode (0.1.16)
runs ``examples/conformance_client.py`` against its mock servers, for every scenario that is
not about authorization."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.runner import run_client

ROOT = Path(__file__).resolve().parent.parent.parent
SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


@pytest.mark.slow
def test_client_scenarios_pass() -> None:
    command = [sys.executable, str(ROOT / "examples" / "conformance_client.py")]
    result = run_client(command, scenario=SCENARIOS, client_timeout=30, timeout=120)
    assert result.ok, result.report(verbose=True)
    assert sorted(s.name for s in result.scenarios) == sorted(SCENARIOS)
    assert not result.failed
    # sse-retry's timing check must be a SUCCESS, not a tolerated WARNING
    retry = next(s for s in result.scenarios if s.name == "sse-retry")
    assert not retry.warnings, result.report(verbose=True)
