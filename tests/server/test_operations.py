"""Running a server for operators: plain HTTP routes next to the MCP endpoint
(both front doors, a real HTTP client on 127.0.0.1), server-wide statistics,
Prometheus metrics, and the log lines of handlers and sessions."""

from __future__ import annotations

import http.client
import json
import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import McpError, open_memory_transport_pair, open_session
from mcp_trio.auth.server import CallbackVerifier, ResourceServer
from mcp_trio.client import connect_http, connect_websocket
from mcp_trio.server import (
    HttpRequest,
    HttpResponse,
    Route,
    Server,
    ServerStatistics,
    TransportStatistics,
    prometheus_text,
)
from tests._support.doors import DOORS
from tests._support.paths import ROOT
from tests._support.prometheus import parse_exposition


def make_server() -> Server:
    server = Server("ops", "1.0")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def broken() -> str:
        raise RuntimeError("the tool broke")

    @server.tool
    async def slow() -> str:
        await trio.sleep_forever()
        return "never"

    @server.resource("notes://broken")
    def broken_note() -> str:
        raise KeyError("no such note")

    @server.prompt
    def broken_prompt() -> str:
        raise ValueError("the prompt broke")

    @server.route("/healthz")
    def health() -> str:
        return "ok"

    @server.route("/echo", methods=("POST", "put"))
    async def echo(request: HttpRequest) -> dict[str, Any]:
        return {
            "method": request.method,
            "path": request.path,
            "query": request.query,
            "body": request.body.decode(),
            "client": request.client,
            "x": request.headers.get("x-thing"),
        }

    @server.route("/fails", on_loop=True)
    def fails(request: HttpRequest) -> str:
        raise RuntimeError("the route broke")

    return server


class Reply:
    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.status = response.status
        self.headers = {k.lower(): v for k, v in response.getheaders()}
        self.body = response.read()


async def fetch(
    url: str, path: str, method: str = "GET", body: bytes | None = None, headers: dict[str, str] | None = None
) -> Reply:
    """One request with the standard library's HTTP client (in a thread)."""
    host, _, port = url.removeprefix("http://").split("/")[0].partition(":")

    def run() -> Reply:
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            return Reply(conn.getresponse())
        finally:
            conn.close()

    with trio.fail_after(15):
        return await trio.to_thread.run_sync(run)


@asynccontextmanager
async def serving(server: Server, door: str, **options: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(
            lambda task_status: server.serve_http(
                "127.0.0.1", 0, front_door=door, task_status=task_status, **options
            )
        )
        yield url
        nursery.cancel_scope.cancel()


# ----------------------------------------------------------------- routes


@pytest.mark.parametrize("door", DOORS)
async def test_routes_answer_next_to_the_mcp_endpoint(door: str, caplog: pytest.LogCaptureFixture) -> None:
    server = make_server()
    extra: dict[str, Any] = {
        "/ready": lambda: HttpResponse("not yet", status=503, headers={"Retry-After": "3"}),
        "/bytes": Route(lambda request: request.body, methods=("POST",)),
    }
    async with serving(server, door, routes=extra, max_body_size=1000) as url:
        reply = await fetch(url, "/healthz")
        assert (reply.status, reply.body) == (200, b"ok")
        assert reply.headers["content-type"].startswith("text/plain")
        assert (await fetch(url, "/healthz/")).status == 200  # a trailing slash is the same path
        head = await fetch(url, "/healthz", "HEAD")
        assert (head.status, head.body) == (200, b"")
        echoed = await fetch(url, "/echo?a=1", "POST", b"hello", {"X-Thing": "yes"})
        assert echoed.status == 200 and echoed.headers["content-type"] == "application/json"
        assert json.loads(echoed.body) == {
            "method": "POST",
            "path": "/echo",
            "query": "a=1",
            "body": "hello",
            "client": "127.0.0.1",
            "x": "yes",
        }
        assert (await fetch(url, "/echo", "PUT", b"")).status == 200
        wrong = await fetch(url, "/echo")
        assert wrong.status == 405 and wrong.headers["allow"] == "POST, PUT"
        assert (await fetch(url, "/healthz", "DELETE")).headers["allow"] == "GET, HEAD"
        ready = await fetch(url, "/ready")
        assert (ready.status, ready.body, ready.headers["retry-after"]) == (503, b"not yet", "3")
        raw = await fetch(url, "/bytes", "POST", b"\x00\x01")
        assert (raw.body, raw.headers["content-type"]) == (b"\x00\x01", "application/octet-stream")
        assert (await fetch(url, "/bytes", "POST", b"x" * 1001)).status == 413
        assert (await fetch(url, "/nothing")).status == 404
        with caplog.at_level(logging.ERROR, logger="mcp_trio.server"):
            failed = await fetch(url, "/fails")
        assert (failed.status, failed.body) == (500, b"Internal Server Error")
        (record,) = [r for r in caplog.records if "route /fails" in r.getMessage()]
        assert record.levelno == logging.ERROR and record.name == "mcp_trio.server"
        assert record.exc_info is not None and "the route broke" in str(record.exc_info[1])
        # the MCP endpoint is unchanged
        async with connect_http(url) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}


@pytest.mark.parametrize("door", DOORS)
async def test_routes_pass_the_host_and_origin_check(door: str) -> None:
    async with serving(make_server(), door) as url:
        assert (await fetch(url, "/healthz", headers={"Host": "evil.example"})).status == 421
        port = url.split(":")[2].split("/")[0]
        origin = {"Origin": "http://evil.example"}
        assert (await fetch(url, "/healthz", headers=origin)).status == 403
        same = {"Origin": f"http://127.0.0.1:{port}"}
        assert (await fetch(url, "/healthz", headers=same)).status == 200
    async with serving(make_server(), door, allowed_hosts=["mcp.example"]) as url:
        assert (await fetch(url, "/healthz")).status == 421
        assert (await fetch(url, "/healthz", headers={"Host": "mcp.example"})).status == 200


@pytest.mark.parametrize("door", DOORS)
async def test_routes_need_no_token_unless_registered_with_auth(door: str) -> None:
    server = make_server()

    @server.route("/private", auth=True)
    def private(request: HttpRequest) -> str:
        return f"hello {request.principal}"

    def lookup(token: str) -> Any:
        return {"sub": "ada", "scope": "mcp", "aud": resource[0]} if token == "good" else None

    resource: list[str] = []
    auth = ResourceServer(
        None, authorization_servers=["http://127.0.0.1:9"], verifier=CallbackVerifier(lookup)
    )
    async with serving(server, door, auth=auth, metrics_path="/metrics") as url:
        resource.append(url)
        assert (await fetch(url, "/healthz")).status == 200
        assert (await fetch(url, "/metrics")).status == 200
        refused = await fetch(url, "/private")
        assert refused.status == 401 and "bearer" in refused.headers["www-authenticate"].lower()
        allowed = await fetch(url, "/private", headers={"Authorization": "Bearer good"})
        assert allowed.status == 200 and allowed.body.startswith(b"hello ")
        assert (await fetch(url, "/.well-known/oauth-protected-resource/mcp")).status == 200


def test_route_registration_errors_name_what_to_fix() -> None:
    server = make_server()
    with pytest.raises(ValueError, match="already registered"):
        server.route("/healthz/")(lambda: "again")
    with pytest.raises(ValueError, match="must start with '/'"):
        server.route("healthz")(lambda: "x")
    with pytest.raises(ValueError, match="well-known"):
        server.route("/.well-known/thing")(lambda: "x")
    with pytest.raises(ValueError, match="HTTP method names"):
        server.route("/x", methods=("GET POST",))(lambda: "x")


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"routes": {"/mcp": lambda: "x"}}, "clashes with the MCP endpoint"),
        ({"path": "/healthz"}, "clashes with the MCP endpoint"),
        ({"routes": {"/sse": lambda: "x"}, "legacy_sse": True}, "legacy HTTP\\+SSE"),
        ({"routes": {"/healthz": lambda: "x"}}, "given twice"),
        ({"metrics_path": "/healthz"}, "given twice"),
        ({"routes": {"/p": Route(lambda: "x", auth=True)}}, "needs serve_http\\(auth=...\\)"),
    ],
)
async def test_serve_http_refuses_clashing_routes_before_binding(options: dict[str, Any], match: str) -> None:
    with trio.fail_after(5), pytest.raises(ValueError, match=match):
        await make_server().serve_http("127.0.0.1", 0, **options)


async def test_a_route_may_not_take_the_authorization_metadata_path() -> None:
    auth = ResourceServer(
        None, authorization_servers=["http://127.0.0.1:9"], verifier=CallbackVerifier(lambda token: None)
    )
    server = make_server()
    routes: dict[str, Callable[[], str]] = {"/.well-known/oauth-protected-resource": lambda: "x"}
    with trio.fail_after(5), pytest.raises(ValueError, match="well-known"):
        await server.serve_http("127.0.0.1", 0, auth=auth, routes=routes)


# -------------------------------------------------------------- statistics


async def test_statistics_count_sessions_and_requests_by_outcome() -> None:
    server = make_server()
    assert server.statistics() == ServerStatistics()
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        client_info = {"name": "c", "version": "1"}
        async with open_session(b, role="client", info=client_info, versions=["2025-06-18"]) as client:
            await client.connect()
            stats = server.statistics()
            assert (stats.sessions_open, stats.sessions_total, stats.requests_ok) == (1, 1, 0)
            await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
            await client.request("tools/call", {"name": "broken", "arguments": {}})  # isError: a result
            with pytest.raises(McpError):
                await client.request("tools/call", {"name": "no such tool", "arguments": {}})
            with pytest.raises(McpError):
                await client.request("resources/read", {"uri": "notes://broken"})
            async with trio.open_nursery() as calls:
                calls.start_soon(client.request, "tools/call", {"name": "slow", "arguments": {}})
                with trio.fail_after(5):
                    while server.statistics().requests_in_flight != 1:
                        await trio.sleep(0.01)
                calls.cancel_scope.cancel()  # the client cancels: notifications/cancelled
            with trio.fail_after(5):
                while server.statistics().requests_cancelled != 1:
                    await trio.sleep(0.01)
            stats = server.statistics()
            assert stats.requests_in_flight == 0
            assert (stats.requests_ok, stats.requests_error, stats.requests_cancelled) == (2, 2, 1)
            assert dict(stats.by_transport) == {"memory": TransportStatistics(1, 1, 0, 2, 2, 1)}
        with trio.fail_after(5):
            while server.statistics().sessions_open:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    stats = server.statistics()
    assert (stats.sessions_open, stats.sessions_total, stats.requests_ok, stats.requests_error) == (
        0,
        1,
        2,
        2,
    )
    assert stats.by_transport["memory"].requests_cancelled == 1
    with pytest.raises(AttributeError):
        stats.sessions_open = 5  # type: ignore[misc]  # frozen


async def test_statistics_never_walk_the_open_sessions(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scrape costs the same for ten sessions or ten thousand: the counts are kept as the
    requests go, and reading them asks no session anything."""
    from mcp_trio._engine._session import Session

    server = make_server()
    async with trio.open_nursery() as nursery:
        clients = []
        for n in range(20):
            a, b = open_memory_transport_pair()
            await nursery.start(server.serve_session, a)
            client = await nursery.start(_connected_client, b, n)
            clients.append(client)
        for client in clients:
            await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})

        def asked(*_: object) -> None:
            raise AssertionError("statistics() asked a session")

        with monkeypatch.context() as patch:
            patch.setattr(Session, "statistics", asked)
            patch.setattr(Session, "request_totals", asked)
            stats = server.statistics()
        assert (stats.sessions_open, stats.sessions_total, stats.requests_ok) == (20, 20, 20)
        nursery.cancel_scope.cancel()


async def _connected_client(channel: Any, n: int, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    info = {"name": f"c{n}", "version": "1"}
    async with open_session(channel, role="client", info=info, versions=["2025-06-18"]) as client:
        await client.connect()
        task_status.started(client)
        await trio.sleep_forever()


@pytest.mark.parametrize("door", DOORS)
async def test_a_metrics_token_keeps_the_metrics_from_clients_without_it(door: str) -> None:
    server = make_server()
    async with serving(server, door, metrics_path="/metrics", metrics_token="s3cret-token") as url:
        refused = await fetch(url, "/metrics")
        assert refused.status == 401 and "bearer" in refused.headers.get("www-authenticate", "").lower()
        wrong = await fetch(url, "/metrics", headers={"authorization": "Bearer s3cret-tokeN"})
        assert wrong.status == 401 and b"mcp_" not in wrong.body
        served = await fetch(url, "/metrics", headers={"authorization": "Bearer s3cret-token"})
        assert served.status == 200
        assert "mcp_sessions_total" in parse_exposition(served.body.decode()) or served.body == b"\n"
    with pytest.raises(ValueError, match="metrics_token needs metrics_path"):
        await server.serve_http("127.0.0.1", 0, metrics_token="s3cret-token")
    with pytest.raises(ValueError, match="route_threads must be"):
        await server.serve_http("127.0.0.1", 0, route_threads=0)


async def test_sync_routes_never_take_the_threads_of_sync_tools() -> None:
    """120 clients of a slow sync route once delayed every sync tool: routes have threads of
    their own (``route_threads``)."""
    server = Server("ops", "1.0", sync_limiter=trio.CapacityLimiter(2))

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.route("/slow")
    def slow_route() -> str:
        time.sleep(1.0)
        return "done"

    async with serving(server, "h11") as url, trio.open_nursery() as nursery:
        for _ in range(4):  # more than the tools' two threads
            nursery.start_soon(fetch, url, "/slow")
        await trio.sleep(0.2)
        async with connect_http(url) as client:
            started = trio.current_time()
            result = await client.call_tool("add", {"a": 1, "b": 2})
            took = trio.current_time() - started
        assert result.structuredContent == {"result": 3}
        assert took < 0.5, f"a sync tool waited {took:.2f} s behind the routes"
        nursery.cancel_scope.cancel()


# --------------------------------------------------------------- prometheus


@pytest.mark.parametrize("door", DOORS)
async def test_metrics_route_serves_the_prometheus_text_format(door: str) -> None:
    server = make_server()
    async with serving(server, door, metrics_path="/metrics") as url:
        empty = parse_exposition((await fetch(url, "/metrics")).body.decode())
        assert {name for name in empty if name.startswith("mcp_")} == {
            "mcp_sessions_open",
            "mcp_sessions_total",
            "mcp_requests_in_flight",
            "mcp_requests_total",
            "mcp_request_duration_seconds",
        }
        process = {name: samples[0][1] for name, (_, samples) in empty.items() if name.startswith("process_")}
        assert process["process_cpu_seconds_total"] > 0 and process["process_resident_memory_bytes"] > 1e6
        assert 3 < process["process_open_fds"] <= process["process_max_fds"]
        assert 0 < time.time() - process["process_start_time_seconds"] < 24 * 3600
        async with connect_http(url, versions=["2025-06-18"]) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            reply = await fetch(url, "/metrics")
            assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
            metrics = parse_exposition(reply.body.decode())
        assert metrics["mcp_sessions_open"] == ("gauge", [({"transport": "http"}, 1.0)])
        kind, samples = metrics["mcp_requests_total"]
        assert kind == "counter" and all(
            name.endswith("_total") for name, (k, _) in metrics.items() if k == "counter"
        )
        by_outcome = {labels["outcome"]: value for labels, value in samples}
        assert by_outcome == {"ok": 1.0, "error": 0.0, "cancelled": 0.0}
    mcp_lines = [line for line in prometheus_text(server).splitlines() if "mcp_" in line]
    assert mcp_lines == [line for line in prometheus_text(server).splitlines() if "mcp_" in line]


async def test_metrics_have_a_latency_histogram_per_method_and_known_tool() -> None:
    server = make_server()
    async with serving(server, "h11", metrics_path="/metrics") as url:
        async with connect_http(url, versions=["2025-11-25"]) as client:
            for n in range(3):
                await client.call_tool("add", {"a": n, "b": 1})
            for made_up in ("nope", 'no"pe'):
                with pytest.raises(McpError):
                    await client.call_tool(made_up)
            await client.list_tools()
            kind, samples = parse_exposition((await fetch(url, "/metrics")).body.decode())[
                "mcp_request_duration_seconds"
            ]
    assert kind == "histogram"
    series: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = {}
    for labels, value in samples:
        found = series.setdefault((labels["method"], labels["tool"]), {})
        found.setdefault(labels["__sample__"], []).append((labels.get("le", ""), value))
    assert set(series) == {("tools/call", "add"), ("tools/call", "_other"), ("tools/list", "")}
    for (_, tool), got in series.items():
        counts = [value for _, value in got["bucket"]]
        assert counts == sorted(counts) and got["bucket"][-1] == ("+Inf", counts[-1])
        assert got["count"] == [("", counts[-1])] and counts[-1] == {"add": 3, "_other": 2, "": 1}[tool]
        assert 0 < got["sum"][0][1] < 5


def test_latency_label_values_are_escaped_and_the_series_bounded() -> None:
    from mcp_trio.middleware import LatencyHistogram
    from mcp_trio.server._stats import _histogram_lines

    histogram = LatencyHistogram(max_series=2)
    for name in ('a"b', "c\\d\ne", "third", "fourth"):
        histogram.observe("tools/call", name, 0.003)
    histogram.observe("ping", None, 0.0001)
    lines = _histogram_lines({None: (histogram.buckets, histogram.series())})
    parsed = parse_exposition("\n".join(["# HELP x x", "# TYPE x gauge", "x 1", *lines]) + "\n")
    tools = {labels["tool"] for labels, _ in parsed["mcp_request_duration_seconds"][1]}
    assert tools == {'a\\"b', "c\\\\d\\ne", "_other", ""}


# ------------------------------------------------------------------ logging


async def test_handlers_that_raise_are_logged_at_error_and_answered_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = make_server()
    a, b = open_memory_transport_pair()
    caplog.set_level(logging.ERROR, logger="mcp_trio")
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(b, role="client", info={"name": "c", "version": "1"}) as client:
            await client.connect()
            result = await client.request("tools/call", {"name": "broken", "arguments": {}})
            assert result.isError and result.content[0].text == "the tool broke"
            with pytest.raises(McpError) as read:
                await client.request("resources/read", {"uri": "notes://broken"})
            assert (read.value.code, read.value.message) == (
                -32603,
                "Internal error: KeyError: 'no such note'",
            )
            with pytest.raises(McpError) as got:
                await client.request("prompts/get", {"name": "broken_prompt"})
            assert (got.value.code, got.value.message) == (
                -32603,
                "Internal error: ValueError: the prompt broke",
            )
        nursery.cancel_scope.cancel()
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    # once each: the tool where it becomes an isError result, the others where
    # the engine answers -32603 (after any middleware had its chance at them)
    assert [r.name for r in errors] == ["mcp_trio.server", "mcp_trio", "mcp_trio"]
    messages = [r.getMessage() for r in errors]
    assert messages[0].startswith("tool broken raised RuntimeError")
    assert messages[1] == "handler for resources/read (notes://broken) failed"
    assert messages[2] == "handler for prompts/get (broken_prompt) failed"
    assert all(r.exc_info is not None for r in errors)


async def test_a_session_at_debug_logs_its_life(caplog: pytest.LogCaptureFixture) -> None:
    server = make_server()
    caplog.set_level(logging.DEBUG, logger="mcp_trio")
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b, role="client", info={"name": "probe", "version": "7.1"}, versions=["2025-06-18"]
        ) as client:
            await client.connect()
            await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        with trio.fail_after(5):
            while server.statistics().sessions_open:
                await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    lines = [r.getMessage() for r in caplog.records if r.name in ("mcp_trio", "mcp_trio.server")]
    assert "session opened: transport memory, peer -" in lines
    assert "session initialized: revision 2025-06-18, client probe 7.1" in lines
    assert any(re.fullmatch(r"request tools/call \(id \d+\)", line) for line in lines)
    assert any(
        re.fullmatch(r"session closed after [0-9.]+ s: 1 requests \(1 ok, 0 errors, 0 cancelled\)", x)
        for x in lines
    )


# --------------------------------------------------------------------- CLI

SERVED = """
from mcp_trio.server import Server

server = Server("served", "2.0")


@server.tool
def add(a: int, b: int) -> int:
    return a + b
"""


def serve_argv(tmp_path: Path, *options: str) -> list[str]:
    (tmp_path / "served.py").write_text(SERVED)
    return [sys.executable, "-m", "mcp_trio._cli", "serve", str(tmp_path / "served.py"), *options]


def test_serve_at_debug_logs_a_whole_stdio_session(tmp_path: Path) -> None:
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "cli-probe", "version": "3"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 2, "b": 3}},
        },
    ]
    stdin = "".join(json.dumps(m) + "\n" for m in lines)
    done = subprocess.run(
        serve_argv(tmp_path, "--log-level", "debug"),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert '"text":"5"' in done.stdout.replace(" ", "")
    log = done.stderr
    assert "DEBUG mcp_trio.server: session opened: transport stdio" in log
    assert "DEBUG mcp_trio: session initialized: revision 2025-06-18, client cli-probe 3" in log
    assert "DEBUG mcp_trio: request tools/call (id 1)" in log
    assert re.search(r"session closed after [0-9.]+ s: 1 requests \(1 ok, 0 errors, 0 cancelled\)", log)
    assert len(log.splitlines()) < 40  # bounded: lines per event, not per byte


async def test_serve_metrics_path_flag(tmp_path: Path) -> None:
    argv = serve_argv(tmp_path, "--http", "127.0.0.1:0", "--metrics-path", "/metrics")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            partial(
                trio.run_process, argv, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
            )
        )
        seen = b""
        with trio.fail_after(60):
            while (found := re.search(rb"at (http://\S+)", seen)) is None:
                chunk = await process.stderr.receive_some()
                assert chunk, seen.decode()
                seen += chunk
        try:
            url = found.group(1).decode()
            async with connect_http(url) as client:
                await client.call_tool("add", {"a": 1, "b": 1})
            metrics = parse_exposition((await fetch(url, "/metrics")).body.decode())
            assert ({"transport": "http", "outcome": "ok"}, 1.0) in metrics["mcp_requests_total"][1]
        finally:
            process.terminate()
            nursery.cancel_scope.deadline = trio.current_time() + 10


async def test_statistics_name_the_transport_of_each_session() -> None:
    over_ws, over_sse = make_server(), make_server()
    async with trio.open_nursery() as nursery:
        (ws_url,) = await nursery.start(partial(over_ws.serve_websocket, "127.0.0.1", 0))
        (http_url,) = await nursery.start(partial(over_sse.serve_http, "127.0.0.1", 0, legacy_sse=True))
        async with (
            connect_websocket(ws_url, versions=["2025-06-18"]) as ws_client,
            connect_http(http_url.removesuffix("/mcp") + "/sse", versions=["2024-11-05"]) as sse_client,
        ):
            await ws_client.call_tool("add", {"a": 1, "b": 2})
            await sse_client.call_tool("add", {"a": 1, "b": 2})
            for server, transport in ((over_ws, "websocket"), (over_sse, "sse")):
                by_transport = server.statistics().by_transport
                assert list(by_transport) == [transport]
                assert (by_transport[transport].sessions_open, by_transport[transport].requests_ok) == (1, 1)
        nursery.cancel_scope.cancel()
