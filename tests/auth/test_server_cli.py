"""``mcp-trio serve --auth-issuer``: the everything server protected by tokens of the
example authorization server, both run as real subprocesses on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2 as httpx

from tests._support.paths import ROOT

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@contextmanager
def running(argv: list[str], marker: str) -> Iterator[str]:
    """Run ``argv``; yield the URL it prints after ``marker`` on stderr."""
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert marker in line, line
        yield line.split(marker)[1].split()[0]
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
        assert "Traceback" not in stderr, stderr


def test_serve_with_auth_issuer() -> None:
    as_argv = [sys.executable, "-m", "examples.authorization_server", "--algorithm", "ES256"]
    as_argv += ["--client", "svc", "--client-secret", "pw", "--auth-method", "client_secret_post"]
    with running(as_argv, "authorization server at ") as issuer:
        argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "examples/everything.py"]
        argv += ["--http", "127.0.0.1:0", "--auth-issuer", issuer, "--auth-scope", "mcp"]
        with running(argv, "Streamable HTTP at ") as url, httpx.Client(timeout=10) as http:
            refused = http.post(url, content=json.dumps(INIT), headers=HEADERS)
            assert refused.status_code == 401
            origin = url.rsplit("/", 1)[0]
            metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
            assert refused.headers["www-authenticate"] == (
                f'Bearer scope="mcp", resource_metadata="{metadata_url}"'
            )
            metadata = http.get(metadata_url).json()
            assert metadata["resource"] == url and metadata["authorization_servers"] == [issuer]

            form = {
                "grant_type": "client_credentials",
                "client_id": "svc",
                "client_secret": "pw",
                "scope": "mcp",
                "resource": url,
            }
            token = http.post(f"{issuer}/token", data=form).json()["access_token"]
            headers = {**HEADERS, "authorization": f"Bearer {token}"}
            accepted = http.post(url, content=json.dumps(INIT), headers=headers)
            assert accepted.status_code == 200, accepted.text
            assert "mcp-session-id" in accepted.headers
            # A token for another resource is refused.
            other = http.post(f"{issuer}/token", data={**form, "resource": "http://127.0.0.1:1/"})
            headers["authorization"] = f"Bearer {other.json()['access_token']}"
            foreign = http.post(url, content=json.dumps(INIT), headers=headers)
            assert foreign.status_code == 401
            assert 'error="invalid_token"' in foreign.headers["www-authenticate"]


def test_auth_demo_example() -> None:
    """examples/auth_demo.py: discovery, registration, code flow and step-up, end to end."""
    done = subprocess.run(
        [sys.executable, "examples/auth_demo.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3, done.stdout
    assert lines[0].startswith("whoami: ada (client ") and lines[0].endswith("): mcp")
    assert lines[1] == "add_note: 1 notes"
    assert lines[2].endswith("): mcp notes:write")
