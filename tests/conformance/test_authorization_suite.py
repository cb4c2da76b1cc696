"""The acceptance test of the example authorization server: the official conformance
suite's authorization-server scenarios (0.2.0-alpha.12) against
``python -m examples.authorization_server`` with a pre-registered public client."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests._support.paths import ROOT
from tools.conformance.runner import AUTHORIZATION_HARNESS, run_authorization

pytestmark = pytest.mark.conformance

CLIENT = "conformance-client"


def _serve(*extra: str) -> Iterator[str]:
    argv = [sys.executable, "-m", "examples.authorization_server", "--client", CLIENT]
    argv += ["--redirect-uri", "http://127.0.0.1/callback", *extra]  # any loopback port matches
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
def test_authorization_server_scenarios_pass() -> None:
    for url in _serve():
        result = run_authorization(url, client_id=CLIENT, resource="http://127.0.0.1:3001/mcp", timeout=120)
        assert result.ok, result.report(verbose=True)
        names = {s.name for s in result.scenarios}
        assert names == {"authorization-server-metadata-endpoint", "authorization-code-grant"}, names
        assert not result.failed and not result.errors
        # It also advertises Client ID Metadata Documents (a WARNING otherwise).
        assert not any(s.warnings for s in result.scenarios), result.report(verbose=True)
        grant = result.scenario("authorization-code-grant").checks
        assert [c.status for c in grant] == ["SUCCESS"], result.report(verbose=True)
        assert result.harness == AUTHORIZATION_HARNESS


@pytest.mark.slow
@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post"])
def test_confidential_client_passes_too(method: str) -> None:
    """A server for confidential clients only: the harness authenticates with the
    method the metadata offers."""
    for url in _serve("--client-secret", "s3cret", "--auth-method", method, "--auth-methods", method):
        result = run_authorization(url, client_id=CLIENT, client_secret="s3cret", timeout=120)
        assert result.ok and not result.failed, result.report(verbose=True)


def test_runner_pieces_for_authorization_mode() -> None:
    """Fast checks of what the runner adds for this mode: result directory names and
    the headless browser (opens each printed authorization URL once, loopback only)."""
    import http.server
    import threading

    from tools.conformance.runner import _HeadlessBrowser, scenario_from_dirname

    dirname = "authorization-server-authorization-code-grant-2026-11-22T01-40-42-982Z"
    assert scenario_from_dirname(dirname, "authorization") == "authorization-code-grant"
    hits: list[str] = []

    class Callback(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            hits.append(self.path)
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    listener = http.server.HTTPServer(("127.0.0.1", 0), Callback)
    thread = threading.Thread(target=listener.serve_forever, daemon=True)
    thread.start()
    try:
        port = listener.server_address[1]
        url = f"http://127.0.0.1:{port}/authorize?response_type=code&client_id=c&state=s"
        output = f"Access the following URL in your browser\n{url}\n\nWaiting...\n"
        browser = _HeadlessBrowser(timeout=5)
        browser(output)
        browser(output + "more output\n")
        assert hits == ["/authorize?response_type=code&client_id=c&state=s"]
        browser("https://auth.example.com/authorize?response_type=code&x=1\n")
        assert len(hits) == 1 and browser.errors and "non-loopback" in browser.errors[0]
    finally:
        listener.shutdown()
        listener.server_close()
