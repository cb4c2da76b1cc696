"""The TypeScript SDK peer of ``python -m benchmarks.run``: its install, its server, its rows.

The server (``benchmarks/peers/ts_sdk_server.mjs``) runs on the Node and the pinned SDK the
benchmark installs into its cache (``benchmarks/_run_node.py``, the conformance runner's install
steps): the first run needs the npm registry (about 25 s on a 2-core machine, Node 22 included
when the one on PATH is older), later runs find both in the cache. Without a registry these
tests fail rather than skip.
"""

from __future__ import annotations

import copy
import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks import _run_node, loadgen
from benchmarks._run_common import RESULTS_JSON
from benchmarks._run_report import render_markdown
from benchmarks._run_servers import available, peers
from benchmarks._run_targets import targets
from tests._support.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.perf]


@pytest.fixture(scope="module")
def ts() -> _run_node.TsSdk:
    return _run_node.install_ts_sdk()


def test_the_pinned_sdk_is_installed(ts: _run_node.TsSdk) -> None:
    assert ts.sdk_version == _run_node.TS_SDK_VERSION
    assert int(ts.node_version.lstrip("v").split(".")[0]) >= 22
    assert ts.argv("stdio")[1:] == [_run_node.SERVER_SCRIPT, "--sdk", str(ts.node_modules), "stdio"]
    # a second call finds everything in the cache
    assert _run_node.install_ts_sdk() == ts


def test_stdio_echo(ts: _run_node.TsSdk) -> None:
    server = loadgen.StdioServer(ts.argv("stdio"), cwd=str(ROOT))
    try:
        server.initialize()
        assert server.version == "2025-11-25"
        measured = loadgen.stdio_sequential(server, 0.2, warmup=0.05)  # every answer checked
        assert measured.calls > 0
        piped = loadgen.stdio_pipelined(server, 0.2, depth=16)
        assert piped.calls > 0
    finally:
        server.close()


@pytest.fixture
def http_server(ts: _run_node.TsSdk) -> Iterator[tuple[loadgen.HttpTarget, int]]:
    port = loadgen.free_port()
    process = subprocess.Popen(
        ts.argv("http", str(port)), cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        loadgen.wait_for_port("127.0.0.1", port, 30, lambda: process.poll() is None)
        yield loadgen.HttpTarget("127.0.0.1", port), process.pid
    finally:
        process.terminate()
        process.wait(10)


def test_http_echo_with_sessions_and_json_answers(http_server: tuple[loadgen.HttpTarget, int]) -> None:
    target, pid = http_server
    measured = loadgen.http_calls(target, 0.2, clients=4, warmup=0.05, server_pid=pid)
    assert measured.calls > 0 and measured.p99 >= measured.p50 > 0
    assert measured.cpu_per_call is not None and 0 < measured.cpu_per_call < 0.1
    assert loadgen.open_idle_sessions(target, 10, connections=3) == 10


def _own_client(argv: list[str]) -> dict[str, float]:
    done = subprocess.run(argv, cwd=str(ROOT), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_its_own_client_over_stdio_and_http(
    ts: _run_node.TsSdk, http_server: tuple[loadgen.HttpTarget, int]
) -> None:
    over_stdio = _own_client(ts.client_argv("stdio", "0.1", "--", *ts.argv("stdio")))
    target, _ = http_server
    over_http = _own_client(ts.client_argv("http", "0.1", target.url))
    for measured in (over_stdio, over_http):
        assert measured["calls"] > 0 and measured["elapsed"] >= 0.1
        assert measured["p99_ms"] >= measured["p50_ms"] > 0
    assert peers(sys.executable, ts)["ts"].own_client == ts.client_argv()


def _post(
    target: loadgen.HttpTarget, body: bytes, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(target.host, target.port, timeout=10)
    try:
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        connection.request("POST", target.path, body, {**base, **headers})
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def test_http_is_stateful_and_answers_in_json(http_server: tuple[loadgen.HttpTarget, int]) -> None:
    target, _ = http_server
    call = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "hé"}},
        }
    ).encode()
    status, _, _ = _post(target, call, {})  # no session
    assert status == 400
    status, _, _ = _post(target, call, {"Mcp-Session-Id": "nope"})
    assert status == 404
    status, headers, _ = _post(target, loadgen.initialize_request(1), {})
    assert status == 200 and headers["content-type"].startswith("application/json")
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    status, _, _ = _post(target, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', session)
    assert status == 202
    status, headers, body = _post(target, call, session)
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert json.loads(body)["result"]["content"] == [{"type": "text", "text": "hé"}]


def test_without_npm_the_peer_is_left_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MCP_TRIO_CONFORMANCE_NODE", raising=False)
    assert _run_node.ensure_ts_sdk(tmp_path / "cache") is None
    assert "the TypeScript SDK peer is left out: npm was not found on PATH" in capsys.readouterr().out
    table = peers(sys.executable, None)
    assert table["ts"].stdio is None and table["ts"].http is None
    assert available(["ours", "ts", "sdk"], table, "stdio") == ["ours", "sdk"]
    assert available(["ours", "ts", "sdk"], table, "http") == ["ours", "sdk"]


def test_the_ts_rows_reach_the_tables_and_the_targets(ts: _run_node.TsSdk) -> None:
    results = copy.deepcopy(json.loads(RESULTS_JSON.read_text()))
    results["http"].pop("concurrent_split", None)  # (the TS targets then read the 64-client table)
    row = {"rate": 1000.0, "p50_ms": 1.0, "p99_ms": 2.0, "runs": [1000.0], "server_cpu_us": 100.0}
    stdio_tables = [
        t
        for t in ("sequential", "sequential_one_cpu", "pipelined", "pipelined_one_cpu")
        if t in results["stdio"]
    ]
    for table in stdio_tables:
        results["stdio"][table]["ts"] = row
    results["http"]["sequential"]["ts"] = row
    results["http"]["concurrent"]["ts"] = row
    results["http"]["concurrent"]["ours"]["server_cpu_us"] = 40.0
    results["http"]["concurrent"]["ours"].pop("server_cpu_runs", None)
    found = {t.name: t for t in targets(results)}
    one_cpu = "sequential_one_cpu" if "sequential_one_cpu" in results["stdio"] else "sequential"
    ours = results["stdio"][one_cpu]["ours"]["rate"]
    assert found["stdio sequential (one CPU) vs TypeScript SDK"].value == pytest.approx(ours / 1000.0)
    http_ours = results["http"]["concurrent"]["ours"]["rate"]
    assert found["HTTP ×64, h11 front door vs TypeScript SDK"].value == pytest.approx(http_ours / 1000.0)
    cpu = found["HTTP ×64 server CPU per request, h11 front door vs TypeScript SDK"]
    assert cpu.value == pytest.approx(0.4) and cpu.met
    report = render_markdown(results, peers(sys.executable, ts))
    assert report.count("| TypeScript SDK low-level | 1,000 | 1.00 | 2.00 |") == len(stdio_tables) + 2
    assert "| server | req/s | p50 ms | p99 ms | server CPU µs/call |" in report
    assert "| TypeScript SDK low-level | 1,000 | 1.00 | 2.00 | 100.0 |" in report


def test_the_harness_checks_node_peer_answers_like_the_python_ones(ts: _run_node.TsSdk) -> None:
    """``benchmarks/peers/trivial_node.mjs`` (``--check-peer``): node:http, no SDK, the answers of
    ``benchmarks/peers/_trivial.py``, through the same load generator."""
    port = loadgen.free_port()
    argv = peers(sys.executable, ts)["trivial_node"].http(port)  # type: ignore[misc]
    assert argv[:2] == [str(ts.node), "benchmarks/peers/trivial_node.mjs"]
    process = subprocess.Popen(argv, cwd=str(ROOT), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        loadgen.wait_for_port("127.0.0.1", port, 30, lambda: process.poll() is None)
        target = loadgen.HttpTarget("127.0.0.1", port)
        loadgen.http_warm_up(target, 200, clients=4)  # every answer checked
        measured = loadgen.http_calls(target, 0.2, clients=4, warmup=0.05, server_pid=process.pid)
        assert measured.calls > 0
        assert measured.cpu_per_call is not None and measured.client_cpu_per_call is not None
        status, headers, _ = _post(target, loadgen.initialize_request(1), {})
        assert status == 200 and headers["mcp-session-id"]
        arguments = {"name": "echo", "arguments": {"text": "hé"}}
        call = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": arguments}).encode()
        status, _, body = _post(target, call, {"Mcp-Session-Id": headers["mcp-session-id"]})
        assert json.loads(body) == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"content": [{"type": "text", "text": "hé"}]},
        }
        status, _, _ = _post(target, b'{"jsonrpc":"2.0","method":"notifications/initialized"}', {})
        assert status == 202
    finally:
        process.terminate()
        process.wait(10)
