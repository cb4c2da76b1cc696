"""The official conformance suite through a proxy.  The server suite: ``mcp-trio serve``
serves tests/_support/proxied_everything.py over Streamable HTTP, which forwards every request over
one stdio session per revision to examples/everything.py in a subprocess: a proxy offering only
the harness leg's revision, and one offering both eras for the 0.2 harness's default run.  The
client suite: examples/conformance_client.py reaching each mock server through ``proxy(url)``."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests._support.paths import ROOT
from tools.conformance.runner import list_scenarios, run_client, run_server

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

ALPHA = "0.2.0-alpha.12"


def _serve(offer: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "tests/_support/proxied_everything.py"]
    argv += ["--http", "127.0.0.1:0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCP_PROXY_OFFER": offer}
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert " at http://127.0.0.1:" in line, line
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
        assert "Traceback" not in stderr, stderr


def test_server_suite_passes_through_the_proxy() -> None:
    for url in _serve("2025-11-25"):
        result = run_server(url, suite="all", timeout=600)
        assert result.ok and not result.failed, result.report(verbose=True)
        assert len(result.scenarios) >= 32


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_2026_harness_legs_pass_through_the_proxy(version: str) -> None:
    for url in _serve(version):
        leg = run_server(url, suite="all", harness=ALPHA, spec_version=version, timeout=600)
        assert leg.ok and not leg.failed, leg.report(verbose=True)
        assert len(leg.scenarios) >= 33


def test_2026_harness_default_run_passes_through_a_proxy_offering_both_eras() -> None:
    for url in _serve("2025-11-25,2026-07-28"):
        result = run_server(url, suite="all", harness=ALPHA, timeout=600)
        assert result.ok and not result.failed, result.report(verbose=True)
        assert len(result.scenarios) >= 65


CLIENT_SCENARIOS = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]


@pytest.mark.parametrize("harness", [None, ALPHA])
def test_client_scenarios_pass_through_a_proxy(harness: str | None) -> None:
    """The client suite's mock servers behind ``proxy(url)``: examples/conformance_client.py with
    MCP_CONFORMANCE_THROUGH_PROXY=1 reaches each one through a proxy in its own process, so what
    the suite checks of the client is what the proxy relayed and its upstream client sent.  Every
    client scenario that is not about authorization (the proxy's own client would authorize)."""
    command = [sys.executable, str(ROOT / "examples" / "conformance_client.py")]
    options: dict[str, Any] = {} if harness is None else {"harness": harness}
    scenarios = CLIENT_SCENARIOS
    if harness is not None:
        listed = list_scenarios("client", harness=harness)
        scenarios = sorted(s.name for s in listed if not s.name.startswith("auth/"))
        assert len(scenarios) >= 15
    env = {"MCP_CONFORMANCE_THROUGH_PROXY": "1", "PYTHONPATH": str(ROOT)}
    result = run_client(command, scenario=scenarios, client_timeout=30, timeout=120, env=env, **options)
    assert result.ok and not result.failed, result.report(verbose=True)
    assert sorted(s.name for s in result.scenarios) == sorted(scenarios)
