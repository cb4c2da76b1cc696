"""Scale-out through a shared Redis store, as deployed: real ``mcp-trio serve`` processes
(``--store redis://`` on a real redis-server, tools/redis_server.py), several of them behind the
round-robin proxy of tools/rrproxy.py, or ``--workers 3`` under one supervisor.

- the official conformance server suites (0.1.16, and 0.2.0-alpha.12 with its 2025-11-25 and
  2026-07-28 legs), every scenario, through a proxy that sends each request to the next of
  three workers;
- a worker killed mid-session: its call in flight fails, the session goes on on the others;
- 10,000 sessions opened and ended leave no key in Redis;
- a store that cannot be reached is a one-line error, not a hang.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests._support.cli import FRESH, HEADERS, INIT, PROGRAM, ROOT, Served, serving
from tools.conformance.runner import run_server
from tools.redis_server import RedisServer
from tools.rrproxy import running_proxy

ALPHA = "0.2.0-alpha.12"
EVERYTHING = "examples/everything.py"


def _address(url: str) -> tuple[str, int]:
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def workers_behind_a_proxy(store: str, count: int = 3, program: str = EVERYTHING) -> Iterator[str]:
    """``count`` processes serving ``program`` with ``store``, each on its own port, behind the
    round-robin proxy (each request to the next one): the proxy's endpoint URL."""
    key = {"MCP_TRIO_STATE_KEY": secrets.token_hex(16)}  # (one key for the endpoint, as deployed)
    with contextlib.ExitStack() as stack:
        workers = [
            stack.enter_context(serving([program, "--http", "127.0.0.1:0", "--store", store], ROOT, key))
            for _ in range(count)
        ]
        urls = [worker.url for worker in workers]
        host, port = stack.enter_context(running_proxy([_address(url) for url in urls]))
        yield f"http://{host}:{port}/mcp"
        for worker in workers:
            assert "Traceback" not in "".join(worker.lines), "".join(worker.lines)


@pytest.mark.conformance
@pytest.mark.slow
def test_the_conformance_suite_passes_through_a_proxy_in_front_of_three_workers(
    redis_server: RedisServer,
) -> None:
    with workers_behind_a_proxy(redis_server.url) as url:
        result = run_server(url, suite="all", timeout=900)
        assert result.ok and not result.failed, result.report(verbose=True)
        assert len(result.scenarios) >= 32


@pytest.mark.conformance
@pytest.mark.slow
def test_the_2026_harness_passes_through_a_proxy_in_front_of_three_workers(redis_server: RedisServer) -> None:
    with workers_behind_a_proxy(redis_server.url) as url:
        result = run_server(url, suite="all", harness=ALPHA, timeout=900)
        assert result.ok and not result.failed, result.report(verbose=True)
        assert len(result.scenarios) >= 65
        for version in ("2025-11-25", "2026-07-28"):
            leg = run_server(url, suite="all", harness=ALPHA, spec_version=version, timeout=900)
            assert leg.ok and not leg.failed, leg.report(verbose=True)


def _session(client: httpx2.Client, url: str) -> dict[str, str]:
    r = client.post(url, headers=HEADERS, json=INIT)
    assert r.status_code == 200, r.text
    headers = {**HEADERS, "mcp-session-id": r.headers["mcp-session-id"]}
    r = client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert r.status_code == 202, r.text
    return headers


def _call(
    client: httpx2.Client, url: str, headers: dict[str, str], id: int, name: str, **arguments: Any
) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    r = client.post(url, headers=headers, json=message)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.mark.interop
def test_a_killed_worker_loses_its_call_in_flight_and_nothing_else(redis_server: RedisServer) -> None:
    argv = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--store", redis_server.url]
    with serving(argv, ROOT) as served, httpx2.Client(timeout=20, limits=FRESH) as client:
        url = served.url
        headers = _session(client, url)
        outcome: dict[str, Any] = {}

        def napping() -> None:
            with httpx2.Client(timeout=20) as own:
                try:
                    outcome["reply"] = _call(own, url, headers, 2, "nap", seconds=30)
                except (httpx2.HTTPError, AssertionError) as exc:
                    outcome["error"] = exc

        thread = threading.Thread(target=napping)
        thread.start()
        victim = int(served.wait_for("nap started in ").split()[-1])
        os.kill(victim, signal.SIGKILL)
        thread.join(20)
        assert not thread.is_alive()
        # The call that ran there failed (its connection broke, or an error came): no hang.
        assert "error" in outcome or "error" in outcome["reply"], outcome
        # Once it is dead (connections the kernel queued for it while it died are reset, as
        # docs/deploy.md says), the session goes on, on the other workers (and the one
        # restarted in its place).
        served.wait_for(f"(pid {victim}) exited")
        pids = [
            int(_call(client, url, headers, 10 + n, "pid")["result"]["content"][0]["text"]) for n in range(12)
        ]
        assert victim not in pids and len(set(pids)) >= 2, pids


def _dbsize(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
        reply = sock.recv(64)
    assert reply.startswith(b":"), reply
    return int(reply[1:].split(b"\r\n")[0])


@pytest.mark.interop
@pytest.mark.slow
def test_ten_thousand_sessions_opened_and_ended_leave_no_key(tmp_path: Path) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        argv = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--store", redis.url]
        served = Served(argv, ROOT)
        watchdog = threading.Timer(300, served.proc.kill)  # (longer than serving()'s: 20,000 requests)
        watchdog.start()
        try:
            url = served.url
            failures: list[str] = []

            def churn(count: int) -> None:
                with httpx2.Client(timeout=20) as client:
                    for _ in range(count):
                        r = client.post(url, headers=HEADERS, json=INIT)
                        sid = r.headers.get("mcp-session-id")
                        gone = client.delete(url, headers={**HEADERS, "mcp-session-id": sid or ""})
                        if r.status_code != 200 or gone.status_code != 200:
                            failures.append(f"{r.status_code} {gone.status_code} {gone.text[:80]}")

            threads = [threading.Thread(target=churn, args=(1250,)) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(300)
            assert not failures, failures[:5]
            served.proc.send_signal(signal.SIGTERM)
            code, stderr = served.finish()
            assert code == 0, stderr
            assert _dbsize(redis.port) == 0
        finally:
            watchdog.cancel()
            served.close()
    finally:
        redis.stop()


def test_a_store_that_cannot_be_reached_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with serving(
        [PROGRAM, "--http", "127.0.0.1:0", "--store", f"redis://127.0.0.1:{port}/0"], ROOT
    ) as served:
        code, stderr = served.finish(timeout=30)
    assert code == 1, stderr
    assert "--store" in stderr and f"127.0.0.1:{port}" in stderr and "Traceback" not in stderr, stderr


@pytest.mark.interop
def test_workers_sharing_a_store_stop_cleanly_on_sigterm(redis_server: RedisServer) -> None:
    argv = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--store", redis_server.url]
    with serving(argv, ROOT) as served, httpx2.Client(timeout=20, limits=FRESH) as client:
        url = served.url
        headers = _session(client, url)
        for n in range(6):
            _call(client, url, headers, 2 + n, "pid")
        served.proc.send_signal(signal.SIGTERM)
        code, stderr = served.finish()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "stopped after SIGTERM (3 workers stopped)" in stderr, stderr
