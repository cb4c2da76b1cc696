"""The 2024-11-05 HTTP+SSE server next to Streamable HTTP (both front doors), and the
official Python SDK's HTTP clients (Streamable HTTP and HTTP+SSE) against our server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from functools import partial
from typing import Any

import httpx2 as httpx
import pytest
import trio

from mcp_trio.client import open_client
from mcp_trio.server import Context, Server
from mcp_trio.transports.http._sse import SSEDecoder
from mcp_trio.transports.http.client import open_legacy_sse_client
from mcp_trio.transports.http.legacy_sse import LegacySSE
from mcp_trio.transports.http.server import ASGIApp, StreamableHTTP, serve_h11, serve_hypercorn
from tests._support.doors import DOORS
from tests._support.http_server import raw_stream
from tests._support.paths import PROGRAMS, ROOT

SDK_CLIENT = [sys.executable, str(PROGRAMS / "sdk_client.py")]


def make_server() -> tuple[Server, dict[str, Any]]:
    server = Server("legacy-test", "1.0")
    state: dict[str, Any] = {"cancelled": trio.Event(), "started": trio.Event()}

    @server.tool
    async def echo(text: str) -> str:
        return text

    @server.tool
    async def sleep(seconds: float) -> str:
        state["started"].set()
        try:
            await trio.sleep(seconds)
        except trio.Cancelled:
            state["cancelled"].set()
            raise
        return "slept"

    @server.tool
    async def progress(steps: int, ctx: Context) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        return "done"

    return server, state


@pytest.fixture(params=DOORS)
def front_door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def serving(front_door: str, server: Server | None = None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """Serve the test server with ``legacy_sse=True``; yields the base URL and the state."""
    state: dict[str, Any] = {}
    if server is None:
        server, state = make_server()
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, front_door=front_door, legacy_sse=True)
        urls = await nursery.start(serve)
        yield urls[0].removesuffix("/mcp"), state
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
async def test_our_legacy_client_against_our_legacy_server(front_door: str, version: str) -> None:
    seen: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        seen.append(value)

    async with serving(front_door) as (base, _):
        with trio.fail_after(10):
            async with open_legacy_sse_client(base + "/sse") as channel:
                async with open_client(channel, versions=[version]) as client:
                    assert client.protocol_version == version
                    assert [t.name for t in await client.list_all_tools()] == ["echo", "sleep", "progress"]
                    assert (await client.call_tool("echo", {"text": "hé ☃"})).content[0].text == "hé ☃"
                    result = await client.call_tool("progress", {"steps": 3}, on_progress=on_progress)
                    assert result.content[0].text == "done" and seen == [1, 2, 3]


async def test_streamable_http_client_falls_back_to_our_legacy_endpoint(front_door: str) -> None:
    """Pointed at /sse, the Streamable HTTP client's POST is refused (405) and it
    switches to HTTP+SSE, as the spec's backwards-compatibility section says."""
    from mcp_trio.client import connect_http

    async with serving(front_door) as (base, _):
        with trio.fail_after(10):
            async with connect_http(base + "/sse") as client:
                assert not client.modern
                assert (await client.call_tool("echo", {"text": "old"})).content[0].text == "old"


@asynccontextmanager
async def serving_parts(front_door: str, server: Server) -> AsyncIterator[tuple[str, LegacySSE]]:
    """The endpoints assembled by hand: Streamable HTTP at /mcp, HTTP+SSE beside it."""
    endpoint = StreamableHTTP(server.serve_session)
    legacy = LegacySSE(server.serve_session)
    routes = {"/sse": legacy, "/messages": legacy}
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        await nursery.start(legacy.run)
        if front_door == "hypercorn":
            urls = await nursery.start(serve_hypercorn, ASGIApp(endpoint, "/mcp", routes), "127.0.0.1", 0)
        else:
            urls = await nursery.start(
                partial(serve_h11, endpoint, "127.0.0.1", 0, routes=routes, parser=front_door)
            )
        yield urls[0], legacy
        nursery.cancel_scope.cancel()


async def test_leaving_the_stream_ends_the_session(front_door: str) -> None:
    server, state = make_server()
    async with serving_parts(front_door, server) as (base, legacy):

        def legacy_sessions() -> dict[str, Any]:
            return legacy.sessions

        decoder = SSEDecoder()
        async with raw_stream(base + "/sse", "GET", {"accept": "text/event-stream"}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            async with aclosing(response.chunks()) as chunks:
                endpoint = None
                with trio.fail_after(5):
                    async for chunk in chunks:
                        events = decoder.feed(chunk)
                        if events:
                            assert events[0].event == "endpoint"
                            endpoint = events[0].data.decode()
                            break
                assert endpoint is not None and endpoint.startswith("/messages?session_id=")
                assert len(legacy_sessions()) == 1
                async with httpx.AsyncClient(base_url=base) as http:
                    headers = {"content-type": "application/json"}
                    init = {
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "initialize",
                        "params": {
                            "protocolVersion": "2024-11-05",
                            "capabilities": {},
                            "clientInfo": {"name": "raw", "version": "1"},
                        },
                    }
                    r = await http.post(endpoint, headers=headers, json=init)
                    assert r.status_code == 202
                    await http.post(
                        endpoint,
                        headers=headers,
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    )
                    call = {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "tools/call",
                        "params": {"name": "sleep", "arguments": {"seconds": 60}},
                    }
                    assert (await http.post(endpoint, headers=headers, json=call)).status_code == 202
                    with trio.fail_after(5):
                        await state["started"].wait()
        # the client is gone: its session ends and the handler is cancelled
        with trio.fail_after(5):
            await state["cancelled"].wait()
            while legacy_sessions():
                await trio.sleep(0.01)
        async with httpx.AsyncClient(base_url=base) as http:
            r = await http.post(endpoint, headers={"content-type": "application/json"}, json=call)
            assert r.status_code == 404


async def test_bad_requests_get_clear_statuses(front_door: str) -> None:
    async with serving(front_door) as (base, _), httpx.AsyncClient(base_url=base) as http:
        json_type = {"content-type": "application/json"}
        r = await http.post("/messages", headers=json_type, content=b"{}")
        assert r.status_code == 400 and "session_id" in r.text
        r = await http.post("/messages?session_id=nope", headers=json_type, content=b"{}")
        assert r.status_code == 404
        assert (await http.get("/messages")).status_code == 405
        assert (await http.post("/sse", headers=json_type, content=b"{}")).status_code == 405
        assert (await http.get("/sse", headers={"host": "evil.example"})).status_code == 421
        assert (await http.get("/sse", headers={"accept": "application/json"})).status_code == 406
        # with a live session: bad content type and bad JSON, and the session goes on
        async with raw_stream(base + "/sse", "GET", {"accept": "text/event-stream"}) as response:
            decoder = SSEDecoder()
            async with aclosing(response.chunks()) as chunks:
                with trio.fail_after(5):
                    async for chunk in chunks:
                        events = decoder.feed(chunk)
                        if events:
                            endpoint = events[0].data.decode()
                            break
                r = await http.post(endpoint, headers={"content-type": "text/plain"}, content=b"{}")
                assert r.status_code == 415
                r = await http.post(endpoint, headers=json_type, content=b"{not json")
                assert r.status_code == 400 and r.json()["error"]["code"] == -32700
                ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
                assert (await http.post(endpoint, headers=json_type, json=ping)).status_code == 202
                with trio.fail_after(5):
                    async for chunk in chunks:
                        messages = [json.loads(e.data) for e in decoder.feed(chunk) if e.event == "message"]
                        if messages:
                            assert messages[0] == {"jsonrpc": "2.0", "id": 7, "result": {}}
                            break


# ------------------------------------------------------ the SDK's HTTP clients


async def _run_sdk_client(url: str, transport: str, mode: str) -> dict[str, Any]:
    argv = [*SDK_CLIENT, "--mode", mode, "--cancel-after", "0.3", "--sleep", "1.0"]
    with trio.fail_after(30):
        done = await trio.run_process(
            [*argv, "--url", url, "--transport", transport],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, (lines, stderr)
    return dict(json.loads(lines[0]))


@pytest.mark.interop
@pytest.mark.parametrize(
    ("path", "transport", "mode", "version", "ended_streams"),
    [
        ("/mcp", "streamable", "legacy", "2025-11-25", 1),
        ("/mcp", "streamable", "auto", "2026-07-28", 0),
        ("/sse", "sse", "legacy", "2025-11-25", 0),
    ],
)
async def test_sdk_http_clients_against_our_server(
    path: str, transport: str, mode: str, version: str, ended_streams: int
) -> None:
    server, state = make_server()
    async with serving("h11", server) as (base, _):
        out = await _run_sdk_client(base + path, transport, mode)
    assert out["protocol_version"] == version
    assert out["server_info"] == {"name": "legacy-test", "version": "1.0"}
    assert out["tools"] == ["echo", "sleep", "progress"]
    assert out["echo"] == "héllo ☃ from the SDK"
    assert out["progress_result"] == "done" and [p[0] for p in out["progress"]] == [1.0, 2.0, 3.0, 4.0]
    # cancelling the SDK's call cancelled our handler, and no late answer followed
    assert out["cancel_caught"] is True and out["cancelled_promptly"] is True
    assert state["cancelled"].is_set()
    assert out["echo_after_cancel"] == "after" and out["echo_after_wait"] == "still here"
    # No late answer came from our server.  In the handshake era the POST of the cancelled
    # call ends as an empty SSE stream, which the SDK turns into an error for that call
    # itself ("SSE stream ended without a response") and then drops as late: counted here.
    assert out["late_responses"] == ended_streams
    if version != "2026-07-28":
        assert out["ping"] == "ok"


def test_the_cli_serves_the_legacy_transport_too() -> None:
    root = ROOT
    argv = [
        sys.executable,
        "-m",
        "mcp_trio._cli",
        "serve",
        "examples/everything.py",
        "--http",
        "127.0.0.1:0",
        "--legacy-sse",
    ]
    proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        first, second = proc.stderr.readline(), proc.stderr.readline()
        assert "Streamable HTTP at http://127.0.0.1:" in first, first
        assert "HTTP+SSE (2024-11-05) at http://127.0.0.1:" in second and second.rstrip().endswith("/sse"), (
            second
        )
        url = second.split(" at ")[1].split()[0]
        with httpx.Client() as http, http.stream("GET", url, headers={"accept": "text/event-stream"}) as r:
            assert r.status_code == 200
            first_event = next(r.iter_lines())
            assert first_event == "event: endpoint"
    finally:
        proc.terminate()
        proc.communicate(timeout=10)
