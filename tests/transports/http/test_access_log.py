"""One access log line per HTTP request (``serve_http(access_log=True)``, ``mcp-trio serve
--access-log``): method, path, status, bytes, duration, client and session, on
``mcp_trio.access.http``; silent until that logger lets INFO through."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trio

from mcp_trio.client import connect_http
from mcp_trio.server import Server
from mcp_trio.transports.http._access import HTTP_ACCESS_LOGGER
from tests._support.cli import HTTP_HEADERS, INIT, serving

BODY = re.compile(r"^(?P<method>\S+) (?P<path>\S+) (?P<status>\S+) (?P<bytes>\d+) B [\d.]+ ms(?P<rest>.*)$")


def make_server() -> Server:
    server = Server("logged", "1")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    return server


@asynccontextmanager
async def serving_http(server: Server, **options: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, **options))
        yield urls[0]
        nursery.cancel_scope.cancel()


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[logging.LogRecord, re.Match[str]]]:
    found = []
    for record in caplog.records:
        if record.name == HTTP_ACCESS_LOGGER:
            match = BODY.match(record.getMessage())
            assert match, record.getMessage()
            found.append((record, match))
    return found


async def test_each_http_request_gets_a_line_with_its_status(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=HTTP_ACCESS_LOGGER)
    routes = {"/healthz": lambda: "ok"}
    with trio.fail_after(10):
        async with serving_http(make_server(), access_log=True, routes=routes) as url:
            async with connect_http(url, versions=["2025-11-25"]) as client:  # (a session, then DELETE)
                assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
            base = url.rsplit("/", 1)[0]
            async with httpx2.AsyncClient() as http:
                assert (await http.get(base + "/healthz")).status_code == 200
                gone = {
                    **HTTP_HEADERS,
                    "mcp-session-id": "no-such-session",
                    "mcp-protocol-version": "2025-11-25",
                }
                assert (await http.post(url, headers=gone, json=INIT | {"method": "ping"})).status_code == 404
    seen = lines(caplog)
    statuses = [(m["method"], m["path"], m["status"]) for _, m in seen]
    assert ("POST", "/mcp", "200") in statuses  # initialize, tools/call
    assert ("POST", "/mcp", "202") in statuses  # notifications/initialized
    assert ("DELETE", "/mcp", "200") in statuses  # the client's goodbye
    assert ("GET", "/healthz", "200") in statuses
    assert ("POST", "/mcp", "404") in statuses
    # the session an initialize opened (its answer's Mcp-Session-Id) is on the lines of its requests
    session = seen[0][0].mcp_session  # type: ignore[attr-defined]
    assert session and session != "no-such-one"
    ours = [m["method"] for r, m in seen if r.mcp_session == session]  # type: ignore[attr-defined]
    assert ours.count("POST") >= 3 and "DELETE" in ours, statuses
    assert all(" client=127.0.0.1" in r.getMessage() for r, _ in seen)
    first, match = seen[0]
    assert first.http_status == int(match["status"]) and first.http_bytes == int(match["bytes"]) > 0  # type: ignore[attr-defined]
    assert first.http_client == "127.0.0.1" and first.duration_ms >= 0  # type: ignore[attr-defined]


async def test_silent_until_the_logger_lets_info_through(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=HTTP_ACCESS_LOGGER)
    with trio.fail_after(10):
        async with serving_http(make_server(), access_log=True) as url:
            async with connect_http(url) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
    assert lines(caplog) == []


async def test_no_line_without_access_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=HTTP_ACCESS_LOGGER)
    with trio.fail_after(10):
        async with serving_http(make_server()) as url:
            async with connect_http(url) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
    assert lines(caplog) == []


def test_serve_access_log_writes_http_lines_too(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        "from mcp_trio.server import Server\napp = Server('app', '1.0')\n"
        "@app.tool\nasync def shout(text: str) -> str:\n    return text.upper()\n"
    )
    with serving(["--http", "127.0.0.1:0", "--access-log", "app.py:app"], tmp_path) as served:
        url = served.url
        with httpx2.Client(timeout=10) as http:
            assert http.post(url, headers=HTTP_HEADERS, json=INIT).status_code == 200
        line = served.wait_for("mcp_trio.access.http: POST /mcp 200 ")
        assert " client=127.0.0.1 session=" in line, line
