"""The official conformance suite through ``proxy(examples/everything.py)``: ``mcp-trio serve``
serves tests/_support/proxied_everything.py over Streamable HTTP, which forwards every request over
one stdio session per revision to examples/everything.py in a subprocess: a proxy offering only
the harness leg's revision, and one offering both eras for the 0.2 harness's default run."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests._support.paths import ROOT
from tools.conformance.runner import run_server

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
