"""The acceptance test of the client: the official conformance suite's client mode (0.1.16)
runs ``examples/conformance_client.py`` against its mock servers, for every scenario that is
not about authorization."""

from __future__ import annotations

import sys

import pytest

from tests._support.paths import ROOT
from tools.conformance.runner import list_scenarios, run_client

pytestmark = pytest.mark.conformance

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


#: Auth scenarios in which the client must refuse to go on: it exits 1 and says why.
REFUSALS = {
    "auth/resource-mismatch": "not for",
    "auth/scope-retry-limit": "403",
    "auth/iss-supported-missing": "iss parameter",
    "auth/iss-wrong-issuer": "RFC 9207",
    "auth/iss-unexpected": "RFC 9207",
    "auth/iss-normalized": "RFC 9207",
    "auth/metadata-issuer-mismatch": "names the issuer",
}


def _run_auth_suite(harness: str | None = None) -> None:
    """Run every ``auth/...`` client scenario of ``harness``, one at a time (so
    the client's exit status counts), and check the refusals say why."""
    kwargs = {"harness": harness} if harness else {}
    names = sorted(s.name for s in list_scenarios("client", **kwargs) if s.name.startswith("auth/"))
    command = [sys.executable, str(ROOT / "examples" / "conformance_client.py")]
    result = run_client(command, scenario=names, client_timeout=30, timeout=900, **kwargs)
    assert result.ok, result.report(verbose=True)
    assert sorted(s.name for s in result.scenarios) == names
    assert not result.failed
    by_name = {s.name: s for s in result.scenarios}
    for name, reason in REFUSALS.items():
        if name in by_name:
            stderr = by_name[name].client_stderr or ""
            assert reason in stderr, (name, stderr)
    return None


@pytest.mark.slow
def test_client_auth_scenarios_pass() -> None:
    """All 22 ``auth/...`` client scenarios of 0.1.16 (OAuth 2.1 discovery, registration,
    PKCE, token endpoint auth, scopes and step-up, pre-registration, CIMD, 2025-03-26
    back-compat, draft and extension scenarios)."""
    listed = [s.name for s in list_scenarios("client") if s.name.startswith("auth/")]
    assert len(listed) == 22, listed
    _run_auth_suite()


@pytest.mark.slow
def test_client_auth_scenarios_of_the_2026_harness_pass() -> None:
    """Every ``auth/...`` client scenario of 0.2.0-alpha.12, including the RFC 9207 iss
    checks, resource and issuer mismatches, offline_access, authorization-server
    migration, client_credentials, enterprise-managed, JWT bearer and DPoP."""
    _run_auth_suite(ALPHA)
