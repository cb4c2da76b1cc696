"""``mcp-trio serve --workers N``: worker processes sharing one port under a supervisor that
restarts a dead worker and stops them all on SIGTERM; ``--store``; the round-robin test proxy."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from mcp_trio._cli import main
from mcp_trio._cli._config import ConfigError
from mcp_trio._cli._workers import store_url
from tests._support.cli import (
    CALL,
    FRESH,
    HEADERS,
    PROGRAM,
    ROOT,
    Served,
    alive,
    parsed,
    serve_parser,
    serving,
    session_headers,
)
from tests._support.doors import DOORS
from tools.rrproxy import running_proxy


def served_pid(client: httpx2.Client, url: str) -> int:
    r = client.post(url, headers=HEADERS, json=CALL)
    assert r.status_code == 200, r.text
    return int(r.json()["result"]["content"][0]["text"])


def pids_seen(url: str, requests: int, limits: httpx2.Limits = FRESH) -> list[int]:
    with httpx2.Client(timeout=10, limits=limits) as client:
        return [served_pid(client, url) for _ in range(requests)]


def stop(served: Served) -> tuple[int, str]:
    served.proc.send_signal(signal.SIGTERM)
    return served.finish()


@pytest.mark.parametrize("door", DOORS)
def test_workers_share_the_port_and_stop_on_sigterm(tmp_path: Path, door: str) -> None:
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--stateless", "--front-door", door]
    with serving(args, tmp_path) as served:
        line = served.wait_for("Streamable HTTP at ")
        assert line.strip().endswith(f"({door}, 3 workers)") and ":0/" not in line
        assert sum("Streamable HTTP at" in x for x in served.lines) == 1  # one line, not one per worker
        pids = pids_seen(served.url, 60)  # the kernel spreads new connections over the workers
        workers = set(pids)
        assert len(workers) == 3 and served.proc.pid not in workers
        code, err = stop(served)
    assert code == 0, err
    assert "stopped after SIGTERM (3 workers stopped)" in err
    assert err.count("stopped after SIGTERM (") == 4  # each worker's line, and the supervisor's
    assert not any(alive(pid) for pid in workers)


def test_a_killed_worker_is_restarted(tmp_path: Path) -> None:
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--stateless"]
    with serving(args, tmp_path) as served:
        url = served.url
        first = set(pids_seen(url, 40))
        victim = min(first)
        os.kill(victim, signal.SIGKILL)
        died = served.wait_for(f"(pid {victim}) exited with code -9 (SIGKILL); restarting it in 0.1 s")
        index = died.split("worker ")[1].split()[0]
        back = served.wait_for(f"worker {index} restarted (pid ")
        new = int(back.rsplit("pid ", 1)[1].rstrip(")\n"))
        deadline = time.monotonic() + 15
        seen: set[int] = set()
        while new not in seen:  # serving within a bounded time
            assert time.monotonic() < deadline, (new, seen)
            seen.update(pids_seen(url, 10))
        assert victim not in seen and seen <= (first - {victim}) | {new}
        served.proc.send_signal(signal.SIGINT)  # (as Ctrl-C: forwarded too)
        code, err = served.finish()
    assert code == 0, err
    assert "stopped after SIGINT (3 workers stopped)" in err
    assert not alive(new)


def test_requests_in_flight_finish_on_sigterm(tmp_path: Path) -> None:
    """The workers' graceful stop: a call under way when the supervisor gets SIGTERM is answered."""
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "2", "--stateless", "--grace-period", "10"]
    nap = {**CALL, "params": {"name": "nap", "arguments": {"seconds": 1.5}}}
    answers: list[httpx2.Response] = []
    with serving(args, tmp_path) as served, httpx2.Client(timeout=10) as client:
        url = served.url
        caller = threading.Thread(target=lambda: answers.append(client.post(url, headers=HEADERS, json=nap)))
        caller.start()
        time.sleep(0.5)  # (the call is under way)
        served.proc.send_signal(signal.SIGTERM)
        caller.join(10)
        code, err = served.finish()
    assert code == 0, err
    assert answers and answers[0].status_code == 200 and "result" in answers[0].json()
    assert "1 request finished" in err


def test_a_port_in_use_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["serve", PROGRAM, "--http", f"127.0.0.1:{port}", "--workers", "2", "--stateless"]
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcp-trio serve: error: cannot serve: ") and "in use" in err


def test_a_worker_that_cannot_start_stops_the_supervisor(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("raise RuntimeError('no good')\n")
    with serving(["broken.py", "--http", "127.0.0.1:0", "--workers", "2", "--stateless"], tmp_path) as served:
        code, err = served.finish()
    assert code == 1
    assert "RuntimeError: no good" in err and "before serving" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--http", "127.0.0.1:0", "--workers", "2"],
            "--workers 2: sessions opened on one worker must be found by the others, which needs a "
            "shared session store: give --store redis://HOST:PORT (or --stateless to keep no sessions)",
        ),
        (["--http", "127.0.0.1:0", "--workers", "2", "--store", "memory"], "needs a shared session store"),
        (["--workers", "2", "--stateless"], "--workers needs --http HOST:PORT"),
        (["--http", "127.0.0.1:0", "--workers", "2", "--stateless", "--legacy-sse"], "--legacy-sse"),
        (
            ["--http", "127.0.0.1:0", "--store", "postgres://db"],
            "--store: unknown store 'postgres://db': use memory",
        ),
        (["--store", "postgres://db"], "--store: unknown store"),  # (stdio too)
    ],
)
def test_what_workers_refuse(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", PROGRAM, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mcp-trio serve: error: ") and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--workers", "0"], "argument --workers: must be at least 1, got 0"),
    ],
)
def test_bad_worker_flags(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["serve", PROGRAM, "--http", "127.0.0.1:0", *argv])
    assert exit.value.code == 2 and message in capsys.readouterr().err


def test_no_store_refused_as_a_subprocess(tmp_path: Path) -> None:
    with serving([PROGRAM, "--http", "127.0.0.1:0", "--workers", "2"], tmp_path) as served:
        code, err = served.finish()
    assert code == 2 and "needs a shared session store" in err and "Traceback" not in err


def test_store_urls() -> None:
    assert store_url(parsed(["--store", "memory"], {}).store) == "memory"
    assert store_url(parsed(["--store", "memory://"], {}).store) == "memory"
    assert store_url(parsed([], {}).store) == "memory" and parsed([], {}).workers == 1
    url = parsed([], {"MCP_TRIO_STORE": "redis://cache:6380/2"}).store
    assert store_url(url) == "redis://cache:6380/2" and store_url("rediss://c") == "rediss://c"
    assert parsed([], {"MCP_TRIO_WORKERS": "4"}).workers == 4
    for bad, message in (
        ("redis://", "--store: 'redis://' names no host"),
        ("redis://h:port", "has a bad port"),
        ("file:///tmp/x", "--store: unknown store 'file:///tmp/x'"),
    ):
        with pytest.raises(ConfigError) as error:
            store_url(parsed([], {"MCP_TRIO_STORE": bad}).store)
        assert message in str(error.value)


def test_the_worker_flag_is_hidden(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert "--workers" in out and "--store" in out and "--worker-of" not in out


def test_workers_get_the_supervisors_settings(tmp_path: Path) -> None:
    """Flags from the environment and --config reach the workers (passed on explicitly)."""
    (tmp_path / "serve.toml").write_text(
        'allowed-host = ["api.example.com"]\nworkers = 2\nstateless = true\n'
    )
    env = {"MCP_TRIO_CONFIG": str(tmp_path / "serve.toml"), "MCP_TRIO_HTTP": "127.0.0.1:0"}
    with serving([PROGRAM], tmp_path, env) as served, httpx2.Client(timeout=10, limits=FRESH) as client:
        assert served.wait_for("Streamable HTTP at ").strip().endswith("(h11, 2 workers)")
        for _ in range(10):  # whichever worker answers
            r = client.post(served.url, headers={**HEADERS, "host": "api.example.com"}, json=CALL)
            assert r.status_code == 200, r.text
        code, err = stop(served)
    assert code == 0, err


# ----------------------------------------------------------------------------- the proxy


def test_the_proxy_round_robins_requests_of_one_connection(tmp_path: Path) -> None:
    """Three single-process servers behind the proxy: one kept-alive client connection, each
    request to the next server in turn."""
    servers = [Served([PROGRAM, "--http", "127.0.0.1:0", "--stateless"], tmp_path) for _ in range(3)]
    try:
        backends = [_address(s.url) for s in servers]
        with running_proxy(backends) as (host, port):
            url = f"http://{host}:{port}/mcp"
            pids = pids_seen(url, 9, httpx2.Limits(max_keepalive_connections=1, max_connections=1))
        assert len(set(pids)) == 3
        assert pids[:3] * 3 == pids
        with running_proxy(backends, per="connection") as (host, port):
            url = f"http://{host}:{port}/mcp"
            assert len(set(pids_seen(url, 5, httpx2.Limits(max_connections=1)))) == 1  # one connection
            assert len(set(pids_seen(url, 6))) == 3  # new connections
    finally:
        for s in servers:
            s.close()


def test_the_proxy_spreads_one_client_over_workers(tmp_path: Path) -> None:
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "3", "--stateless"]
    with serving(args, tmp_path) as served:
        with running_proxy([_address(served.url)]) as (host, port):
            one_connection = httpx2.Limits(max_keepalive_connections=1, max_connections=1)
            pids = pids_seen(f"http://{host}:{port}/mcp", 40, one_connection)
        assert len(set(pids)) == 3
        code, _ = stop(served)
    assert code == 0


def test_the_proxy_relays_sse_streams(tmp_path: Path) -> None:
    """A session's GET stream and SSE responses pass through whole."""
    with serving(["examples/everything.py", "--http", "127.0.0.1:0"], ROOT) as served:
        with running_proxy([_address(served.url)]) as (host, port), httpx2.Client(timeout=10) as client:
            url = f"http://{host}:{port}/mcp"
            from tests._support.cli import session_headers

            headers = session_headers(client, url)
            call = {**CALL, "params": {"name": "test_tool_with_progress", "arguments": {}}}
            call["params"]["_meta"] = {"progressToken": "p"}  # type: ignore[index]
            r = client.post(url, headers=headers, json=call)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            assert '"notifications/progress"' in r.text and '"result"' in r.text
            r = client.post(url, headers=HEADERS, content=b"x" * 9_000_000)
            assert r.status_code == 413


def _address(url: str) -> tuple[str, int]:
    host_port = url.split("//", 1)[1].split("/", 1)[0]
    host, _, port = host_port.rpartition(":")
    return host, int(port)


def test_parser_namespace_round_trips() -> None:
    """The supervisor's flags, as the workers get them."""
    from mcp_trio._cli._config import as_argv

    env = {"MCP_TRIO_MAX_CONNECTIONS": "60", "MCP_TRIO_ALLOWED_HOST": "a.example,b.example"}
    args = parsed(["--stateless", "--grace-period", "3", "--workers", "2"], env)
    serve = serve_parser().parse_args(["serve", "x.py"]).func.args[0]
    argv = as_argv(serve, args, leave_out=("workers",))
    assert argv == [
        "--stateless",
        "--max-connections",
        "60",
        "--allowed-host",
        "a.example",
        "--allowed-host",
        "b.example",
        "--grace-period",
        "3.0",
    ]
    again = parsed(argv, {})
    assert isinstance(again, argparse.Namespace)
    assert (again.stateless, again.max_connections, again.grace_period) == (True, 60, 3.0)
    assert again.allowed_host == ["a.example", "b.example"]


async def test_our_client_through_the_proxy(tmp_path: Path) -> None:
    """A whole session of our client (its GET stream and POSTs on kept-alive connections)
    through the per-request proxy, twice (the proxy lets go of the streams the client left)."""
    import trio

    from mcp_trio.client import connect_http
    from tools.rrproxy import serve_round_robin

    with serving(["examples/everything.py", "--http", "127.0.0.1:0"], ROOT) as served:
        backend = _address(served.url)
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                host, port = await nursery.start(serve_round_robin, [backend])
                for _ in range(2):
                    async with connect_http(f"http://{host}:{port}/mcp") as client:
                        assert await client.list_all_tools()
                        result = await client.call_tool("test_tool_with_progress", {})
                        assert not result.isError
                nursery.cancel_scope.cancel()


# ----------------------------------------------------------------------------- secrets


def test_secrets_reach_the_workers_in_their_environment_not_on_their_command_line() -> None:
    """The store's password and the state key, whether from a flag, MCP_TRIO_* or --config, go to
    the workers in their environment (readable by the same user only), never on the command line
    any local user reads with ps."""
    from mcp_trio._cli._workers import worker_launch

    url = "redis://default:s3cret-pw@127.0.0.1:6390/0"
    metrics = ["--metrics-path", "/metrics"]
    for argv, environ in (
        (
            [
                "--workers",
                "2",
                "--store",
                url,
                "--state-key",
                "k" * 32,
                *metrics,
                "--metrics-token",
                "m" * 20,
            ],
            {},
        ),
        (
            ["--workers", "2", *metrics],
            {"MCP_TRIO_STORE": url, "MCP_TRIO_STATE_KEY": "k" * 32, "MCP_TRIO_METRICS_TOKEN": "m" * 20},
        ),
    ):
        args = parsed(argv, environ)
        command, environment = worker_launch(args.func.args[0], args, "127.0.0.1", 8000)
        shown = " ".join(command)
        assert "s3cret-pw" not in shown and "k" * 32 not in shown and "--store" not in shown, shown
        assert "m" * 20 not in shown and "--metrics-token" not in shown, shown
        assert environment["MCP_TRIO_STORE"] == url and environment["MCP_TRIO_STATE_KEY"] == "k" * 32
        assert environment["MCP_TRIO_METRICS_TOKEN"] == "m" * 20
        assert "--workers 1" in shown and "--http 127.0.0.1:8000" in shown


@pytest.mark.interop
def test_workers_on_a_store_with_a_password_show_it_to_nobody(redis_server: Any, tmp_path: Path) -> None:
    """Real workers on a Redis URL with a password, given in MCP_TRIO_STORE (as a deployment keeps
    it off its own command line): they serve, and no process's command line holds it."""
    password = "s3cret-pw"
    url = redis_server.url.replace("redis://", f"redis://default:{password}@")
    argv = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "2"]
    env = {**os.environ, "MCP_TRIO_STORE": url}
    with serving(argv, tmp_path, env) as served, httpx2.Client(timeout=10, limits=FRESH) as client:
        served.wait_for("Streamable HTTP at ")
        headers = session_headers(client, served.url)
        r = client.post(served.url, headers=headers, json=CALL)
        assert r.status_code == 200, r.text
        family = [served.proc.pid, *_children(served.proc.pid)]
        assert len(family) >= 3  # (the supervisor and its two workers)
        for pid in family:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            assert password not in cmdline, (pid, cmdline)
        code, err = stop(served)
    assert code == 0 and password not in err, err


def _children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def test_worker_ids_say_nothing_of_the_host_or_the_process(caplog: pytest.LogCaptureFixture) -> None:
    """A worker's id is part of the server's request ids and SSE event ids, which clients see:
    random, never the host name or the PID; the log maps it to them."""
    import logging
    import re
    import socket

    from mcp_trio._cli._workers import worker_id

    args = parsed(["--workers", "2"], {})
    with caplog.at_level(logging.INFO, logger="mcp_trio.serve"):
        first, second = worker_id(args), worker_id(args)
    for identity in (first, second):  # (12 hex digits and nothing else: no host name, no PID)
        assert re.fullmatch(r"[0-9a-f]{12}", identity), identity
    assert first != second  # (random: not derived from the host or the process)
    assert f"worker {first} is process {os.getpid()} on {socket.gethostname()}" in caplog.text


@pytest.mark.interop
def test_every_scrape_of_the_workers_metrics_lists_them_all(redis_server: Any, tmp_path: Path) -> None:
    """Under --workers, a scrape lands on any worker: each lists every worker's counts, labelled
    with its worker, so the sum does not depend on which one answered."""
    from tests._support.prometheus import parse_exposition

    argv = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "2", "--store", redis_server.url]
    with (
        serving([*argv, "--metrics-path", "/metrics"], tmp_path) as served,
        httpx2.Client(timeout=10, limits=FRESH) as client,
    ):
        served.wait_for("Streamable HTTP at ")
        metrics = served.url.rsplit("/", 1)[0] + "/metrics"
        calls = 0
        for _ in range(20):  # (fresh connections: the kernel spreads them over the workers)
            r = client.post(served.url, headers=session_headers(client, served.url), json=CALL)
            assert r.status_code == 200, r.text
            calls += 1
        deadline = time.monotonic() + 10
        while True:
            totals = []
            for _ in range(8):
                _, samples = parse_exposition(client.get(metrics).text)["mcp_requests_total"]
                workers = {labels["worker"] for labels, _ in samples}
                ok = sum(value for labels, value in samples if labels["outcome"] == "ok")
                totals.append((len(workers), ok))
            if all(total == (2, calls) for total in totals) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert all(total == (2, calls) for total in totals), totals
        code, err = stop(served)
    assert code == 0, err


@pytest.mark.interop
def test_workers_on_a_store_share_the_rate_limit(redis_server: Any, tmp_path: Path) -> None:
    """A client spread over two workers gets the burst (4) in all when they share a store; each
    worker keeps its own buckets without one (then up to 8)."""
    program = str(ROOT / "tests" / "programs" / "limited_server.py")

    def through(*store: str) -> tuple[int, set[int]]:
        argv = [program, "--http", "127.0.0.1:0", "--workers", "2", "--stateless", *store]
        with serving(argv, tmp_path) as served, httpx2.Client(timeout=10, limits=FRESH) as client:
            served.wait_for("Streamable HTTP at ")
            answers = []
            for _ in range(40):  # (fresh connections: the kernel spreads them over the workers)
                r = client.post(served.url, headers=HEADERS, json=CALL)
                assert r.status_code == 200, r.text
                answers.append(r.json())
            code, err = stop(served)
        assert code == 0, err
        pids = {int(a["result"]["content"][0]["text"]) for a in answers if "result" in a}
        assert all(a["error"]["code"] == -32029 for a in answers if "result" not in a), answers
        return sum("result" in a for a in answers), pids

    allowed, pids = through("--store", redis_server.url)
    assert allowed == 4, allowed
    allowed, pids = through()
    assert allowed == 8 and len(pids) == 2, (allowed, pids)  # (each worker gave its own 4)
