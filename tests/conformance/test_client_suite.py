"""The acceptance test of the client: the official conformance suite's client mode (0.1.16)
runs ``examples/conformance_client.py`` against its mock servers, for every scenario that is
not about authorization."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.runner import list_scenarios, run_client

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


ALPHA = "0.2.0-alpha.12"
ALPHA_SCENARIOS = [
    "initialize",
    "tools_call",
    "elicitation-sep1034-client-defaults",
    "sse-retry",
    "request-metadata",
    "sep-2322-client-request-state",
    "http-standard-headers",
    "http-custom-headers",
    "http-invalid-tool-headers",
    "json-schema-ref-no-deref",
    "json-schema-2020-12-preservation",
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
]


@pytest.mark.slow
def test_client_scenarios_of_the_2026_harness_pass() -> None:
    """Every client scenario of 0.2.0-alpha.12 that is not about authorization."""
    listed = {s.name for s in list_scenarios("client", harness=ALPHA) if not s.name.startswith("auth/")}
    assert listed == set(ALPHA_SCENARIOS), listed ^ set(ALPHA_SCENARIOS)
    command = [sys.executable, str(ROOT / "examples" / "conformance_client.py")]
    result = run_client(command, scenario=ALPHA_SCENARIOS, harness=ALPHA, client_timeout=30, timeout=120)
    assert result.ok, result.report(verbose=True)
    assert sorted(s.name for s in result.scenarios) == sorted(ALPHA_SCENARIOS)
