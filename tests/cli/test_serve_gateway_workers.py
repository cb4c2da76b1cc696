"""``mcp-trio serve gateway.toml --workers 2``: each worker builds the gateway from the file (its
own upstream sessions), sessions shared through the store, each worker's backend metrics."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests._support.cli import FRESH, PROGRAM, ROOT, serving, session_headers
from tests._support.prometheus import parse_exposition


@pytest.mark.interop
def test_two_workers_serve_a_gateway_each_with_its_own_backends(redis_server: Any, tmp_path: Path) -> None:
    (tmp_path / "gateway.toml").write_text(
        f"""
[servers.p]
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_trio._cli", "serve", {json.dumps(PROGRAM)}]
env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}
versions = ["2025-11-25"]
"""
    )
    argv = ["gateway.toml", "--http", "127.0.0.1:0", "--workers", "2", "--store", redis_server.url]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "p_pid", "arguments": {}}}
    with (
        serving([*argv, "--metrics-path", "/metrics"], tmp_path) as served,  # (a path relative to cwd)
        httpx2.Client(timeout=10, limits=FRESH) as client,
    ):
        line = served.wait_for("Streamable HTTP at ")
        assert line.strip().endswith("(h11, 2 workers)")
        backends: set[str] = set()
        deadline = time.monotonic() + 20
        while len(backends) < 2:  # (fresh connections: the kernel spreads them over the workers)
            assert time.monotonic() < deadline, backends
            r = client.post(served.url, headers=session_headers(client, served.url), json=call)
            assert r.status_code == 200, r.text
            backends.add(r.json()["result"]["content"][0]["text"])
        assert served.proc.pid not in map(int, backends)  # (each worker's own backend process)
        metrics = served.url.rsplit("/", 1)[0] + "/metrics"
        workers: set[str] = set()
        while len(workers) < 2:  # (a scrape lists the backend metrics of the worker it reached)
            assert time.monotonic() < deadline, workers
            _, samples = parse_exposition(client.get(metrics).text)["mcp_upstream_requests_total"]
            for labels, value in samples:
                assert labels["backend"] == "p" and labels["method"] == "tools/call" and value >= 1
                workers.add(labels["worker"])
        served.proc.terminate()
        code, err = served.finish()
    assert code == 0, err
    assert "(2 workers stopped)" in err
