"""The acceptance test of the Streamable HTTP server: the official conformance suite
(0.1.16, ``--suite all``) against ``examples/everything.py`` through each front door."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests._support.doors import DOORS
from tests._support.paths import ROOT
from tools.conformance.runner import run_server

pytestmark = pytest.mark.conformance


def _serve(front_door: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "examples/everything.py"]
    argv += ["--http", "127.0.0.1:0", "--front-door", front_door]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert " at http://127.0.0.1:" in line, line
        yield line.split(" at ")[1].split()[0]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
        assert "Traceback" not in stderr, stderr


@pytest.mark.slow
@pytest.mark.parametrize("front_door", DOORS)
def test_server_suite_passes(front_door: str) -> None:
    for url in _serve(front_door):
        result = run_server(url, suite="all", timeout=600)
        assert result.ok, result.report(verbose=True)
        assert len(result.scenarios) >= 32 and not result.failed
        # test_reconnection really closes its stream mid-call, and the rest arrives on resume
        polling = {c.id: c.status for c in result.scenario("server-sse-polling").checks}
        for check in ("server-sse-priming-event", "server-sse-retry-field", "server-sse-disconnect-resume"):
            assert polling.get(check) == "SUCCESS", result.report(verbose=True)


ALPHA = "0.2.0-alpha.12"


@pytest.mark.slow
@pytest.mark.parametrize("front_door", DOORS)
def test_2026_harness_passes(front_door: str) -> None:
    """0.2.0-alpha.12: every scenario of the default run (65, the tasks extension and the
    skills scenarios included), then the 2025-11-25 and 2026-07-28 legs."""
    for url in _serve(front_door):
        result = run_server(url, suite="all", harness=ALPHA, timeout=600)
        assert result.ok, result.report(verbose=True)
        assert len(result.scenarios) >= 65 and not result.failed
        stateless = {c.id: c.status for c in result.scenario("server-stateless").checks}
        for check in ("sep-2575-server-sends-subscription-ack", "sep-2575-server-tags-subscription-id"):
            assert stateless.get(check) == "SUCCESS", result.report(verbose=True)
        for version in ("2025-11-25", "2026-07-28"):
            leg = run_server(url, suite="all", harness=ALPHA, spec_version=version, timeout=600)
            assert leg.ok and not leg.failed, leg.report(verbose=True)
