"""The official Python SDK's client (PyPI ``mcp`` 2.3.0) against the everything example server.

``tests/programs/sdk_everything_client.py`` launches ``python examples/everything.py``
(the example's own ``__main__``) over stdio, lists and calls every tool with
sampling, elicitation, logging and progress callbacks, reads every resource,
gets every prompt and asks for completions, then prints what it saw as one JSON
line.  It runs twice, in parallel: with the initialize handshake (``legacy``,
which the SDK does at 2025-11-25) and with the SDK's discovery probe (``auto``,
which settles on the stateless 2026-07-28, where sampling and elicitation
travel as multi-round-trip input requests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests._support.paths import ROOT
from tests._support.sdk_everything import (
    check_connection,
    check_content_tools,
    check_elicitation,
    check_input_and_task_fixtures,
    check_logging_and_progress,
    check_prompts_and_completions,
    check_resources,
    check_sampling,
    check_tools_listed,
)

pytestmark = pytest.mark.interop

PROGRAM = ROOT / "tests" / "programs" / "sdk_everything_client.py"
EXAMPLE = ROOT / "examples" / "everything.py"
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
MODES = {"legacy": "2025-11-25", "auto": "2026-07-28"}
TIMEOUT = 60


@pytest.fixture(scope="module")
def observed() -> dict[str, dict[str, Any]]:
    """Run the SDK client once per mode (both at the same time); its JSON per mode."""
    procs = {
        mode: subprocess.Popen(
            [sys.executable, str(PROGRAM), "--mode", mode, "--", sys.executable, str(EXAMPLE)],
            env=ENV,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for mode in MODES
    }
    results: dict[str, dict[str, Any]] = {}
    try:
        for mode, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=TIMEOUT)
            assert proc.returncode == 0, stderr.decode("utf-8", "replace")
            lines = stdout.decode().splitlines()
            assert len(lines) == 1, (lines, stderr.decode("utf-8", "replace"))
            results[mode] = json.loads(lines[0])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    return results


@pytest.fixture(params=list(MODES))
def out(request: pytest.FixtureRequest, observed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    result = observed[request.param]
    assert result["protocol_version"] == MODES[request.param]
    return result


def test_connection(out: dict[str, Any]) -> None:
    check_connection(out)


def test_tools_listed(out: dict[str, Any]) -> None:
    check_tools_listed(out)


def test_content_tools(out: dict[str, Any]) -> None:
    check_content_tools(out)


def test_logging_and_progress(out: dict[str, Any]) -> None:
    check_logging_and_progress(out)


def test_sampling(out: dict[str, Any]) -> None:
    check_sampling(out)


def test_elicitation(out: dict[str, Any]) -> None:
    check_elicitation(out)


def test_resources(out: dict[str, Any]) -> None:
    check_resources(out)


def test_prompts_and_completions(out: dict[str, Any]) -> None:
    check_prompts_and_completions(out)


def test_input_and_task_fixtures(out: dict[str, Any]) -> None:
    check_input_and_task_fixtures(out)
