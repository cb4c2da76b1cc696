"""The shipped middlewares (AccessLog, Timing, RateLimit, ErrorTranslation, ResponseSizeLimit),
each with a real session in memory, then all of them over Streamable HTTP (and RateLimit per
principal behind a protected endpoint)."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import INVALID_PARAMS, McpError, RequestTimeout
from mcp_trio.auth.server import AccessToken, CallbackVerifier, ResourceServer
from mcp_trio.client import connect_http, connect_server, connect_stdio
from mcp_trio.middleware import (
    RATE_LIMITED,
    AccessLog,
    ErrorTranslation,
    RateLimit,
    RequestInfo,
    ResponseSizeLimit,
    Timing,
)
from mcp_trio.server import Server
from tests._support.paths import ROOT

ACCESS = "mcp_trio.access"


def make_server(**options: Any) -> Server:
    server = Server("shipped", "1", **options)

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def big(n: int) -> str:
        return "x" * n

    @server.tool
    async def slow() -> str:
        await trio.sleep_forever()
        return "never"

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        if name == "missing":
            raise KeyError(name)
        if name == "locked":
            raise PermissionError("locked away")
        if name == "odd":
            raise ZeroDivisionError("odd")
        return f"note {name}"

    return server


def access_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == ACCESS]


async def test_access_log_writes_one_line_per_request(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS)
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[AccessLog()])) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(McpError):
                await client.call_tool("nope")
            with pytest.raises(RequestTimeout):  # (the client cancels the request at the server)
                await client.call_tool("slow", timeout=0.2)
            while len(access_lines(caplog)) < 3:  # (the cancelled one is written as it ends)
                await trio.sleep(0.01)
    ok, unknown, cancelled = access_lines(caplog)
    assert ok.levelno == logging.INFO
    message = ok.getMessage()
    assert message.startswith("tools/call add id=") and " session=- ok " in message
    assert message.endswith(" ms")
    assert ok.mcp_method == "tools/call" and ok.mcp_name == "add" and ok.mcp_outcome == "ok"  # type: ignore[attr-defined]
    assert isinstance(ok.duration_ms, float) and ok.duration_ms >= 0  # type: ignore[attr-defined]
    assert " error -32602 " in unknown.getMessage()
    assert " cancelled " in cancelled.getMessage()
    assert cancelled.duration_ms >= 150  # type: ignore[attr-defined]


async def test_access_log_is_silent_until_its_logger_lets_info_through(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=ACCESS)
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[AccessLog()])) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
    assert access_lines(caplog) == []


async def test_timing_keeps_per_method_statistics() -> None:
    timing = Timing()
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[timing])) as client:
            for _ in range(3):
                await client.call_tool("add", {"a": 1, "b": 2})
            await client.list_tools()
            with pytest.raises(McpError):
                await client.read_resource("notes://missing")
    stats = timing.stats()
    assert set(stats) == {"tools/call", "tools/list", "resources/read"}
    calls = stats["tools/call"]
    assert calls.count == 3 and calls.errors == 0
    assert 0 <= calls.min_ms <= calls.mean_ms <= calls.max_ms
    assert calls.total_ms == pytest.approx(calls.mean_ms * 3)
    assert stats["resources/read"].errors == 1
    timing.reset()
    assert timing.stats() == {}


async def test_rate_limit_refuses_past_the_burst_and_says_when_to_retry() -> None:
    limit = RateLimit(rate=5, burst=2)
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[limit])) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(McpError) as refused:
                await client.call_tool("add", {"a": 1, "b": 2})
            assert refused.value.code == RATE_LIMITED
            assert "retry after" in refused.value.message
            retry = refused.value.data["retryAfter"]  # type: ignore[index]
            assert 0 < retry <= 0.2
            await trio.sleep(retry)
            await client.call_tool("add", {"a": 1, "b": 2})  # a token is back
        # another session has a bucket of its own
        async with connect_server(make_server(middleware=[limit])) as other:
            await other.call_tool("add", {"a": 1, "b": 2})


def test_rate_limit_memory_is_bounded() -> None:
    def info(key: str) -> RequestInfo:
        return RequestInfo(
            method="tools/call", params=None, name=None, request_id=1, session_id=key, side="server"
        )

    limit = RateLimit(rate=10, burst=5, max_keys=100)
    for i in range(1000):
        assert limit._take(limit.key(info(f"s{i}")), now=0.0) == 0.0
    assert len(limit) == 100  # the least recently used went first
    # a bucket idle long enough to be full again is forgotten
    limit._take(limit.key(info("late")), now=0.5)
    assert len(limit) == 1
    # an empty bucket is kept (forgetting it would give its tokens back)
    for _ in range(5):
        assert limit._take(("k",), now=10.0) == 0.0
    assert limit._take(("k",), now=10.0) == pytest.approx(0.1)
    assert limit._take(("k",), now=10.05) == pytest.approx(0.05)


def test_rate_limit_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="rate must be positive"):
        RateLimit(rate=0)
    with pytest.raises(ValueError, match="burst"):
        RateLimit(rate=1, burst=0)
    with pytest.raises(ValueError, match="per must be"):
        RateLimit(rate=1, per="ip")  # type: ignore[arg-type]


async def test_error_translation_maps_handler_exceptions() -> None:
    translation = ErrorTranslation(
        {
            LookupError: INVALID_PARAMS,
            PermissionError: lambda exc: McpError(-32001, "Forbidden", {"why": str(exc)}),
        }
    )
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[translation])) as client:
            with pytest.raises(McpError) as missing:  # KeyError: by its base class LookupError
                await client.read_resource("notes://missing")
            assert (missing.value.code, missing.value.message) == (INVALID_PARAMS, "'missing'")
            with pytest.raises(McpError) as locked:
                await client.read_resource("notes://locked")
            assert (locked.value.code, locked.value.data) == (-32001, {"why": "locked away"})
            with pytest.raises(McpError) as odd:  # not mapped: -32603 as without the middleware
                await client.read_resource("notes://odd")
            assert odd.value.code == -32603
    with pytest.raises(TypeError, match="maps exception classes"):
        ErrorTranslation({"KeyError": 1})  # type: ignore[dict-item]


async def test_response_size_limit_replaces_a_large_result() -> None:
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[ResponseSizeLimit(1000)])) as client:
            assert (await client.call_tool("big", {"n": 10})).structuredContent == {"result": "x" * 10}
            with pytest.raises(McpError) as refused:
                await client.call_tool("big", {"n": 5000})
    assert refused.value.code == -32603
    size = refused.value.data["size"]  # type: ignore[index]
    assert size > 5000
    assert f"tools/call big is {size} bytes, over the limit of 1000 bytes" in refused.value.message
    with pytest.raises(ValueError, match="max_bytes"):
        ResponseSizeLimit(0)


@asynccontextmanager
async def serving(server: Server, **options: Any) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, **options))
        yield urls[0]
        nursery.cancel_scope.cancel()


async def test_every_shipped_middleware_over_http(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS)
    timing = Timing()
    server = make_server(
        middleware=[
            AccessLog(),
            timing,
            RateLimit(rate=0.001, burst=4, methods={"tools/call"}),
            ErrorTranslation({KeyError: INVALID_PARAMS}),
            ResponseSizeLimit(2000),
        ]
    )
    with trio.fail_after(10):
        async with serving(server) as url, connect_http(url, versions=["2025-11-25"]) as client:
            session_id = getattr(client.session.channel, "session_id", None)
            assert session_id is not None
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(McpError, match="over the limit of 2000 bytes"):
                await client.call_tool("big", {"n": 3000})
            with pytest.raises(McpError) as missing:
                await client.read_resource("notes://missing")
            assert missing.value.code == INVALID_PARAMS
            await client.call_tool("add", {"a": 1, "b": 2})
            await client.call_tool("add", {"a": 1, "b": 2})
            with pytest.raises(McpError) as limited:
                await client.call_tool("add", {"a": 1, "b": 2})
            assert limited.value.code == RATE_LIMITED
    lines = [r.getMessage() for r in access_lines(caplog)]
    assert len(lines) == 6
    assert all(f" session={session_id} " in line for line in lines)
    assert [line.split(" id=")[0] for line in lines] == [
        "tools/call add",
        "tools/call big",
        "resources/read notes://missing",
        "tools/call add",
        "tools/call add",
        "tools/call add",
    ]
    assert " error -32603 " in lines[1] and " error -32602 " in lines[2]
    assert f" error {RATE_LIMITED} " in lines[5]
    assert timing.stats()["tools/call"].count == 5


@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_rate_limit_holds_in_every_revision_and_across_sessions(version: str) -> None:
    """The default key holds where a session does not: a 2026-07-28 request is a session of its
    own, and a new session must not reset the bucket; without a token, the client's address."""
    server = make_server(middleware=[RateLimit(rate=0.001, burst=2)])
    with trio.fail_after(10):
        async with serving(server) as url:
            async with connect_http(url, versions=[version]) as first:
                await first.call_tool("add", {"a": 1, "b": 2})
            async with connect_http(url, versions=[version]) as second:  # a new session
                await second.call_tool("add", {"a": 1, "b": 2})
                with pytest.raises(McpError) as refused:
                    await second.call_tool("add", {"a": 1, "b": 2})
                assert refused.value.code == RATE_LIMITED
    per_session = make_server(middleware=[RateLimit(rate=0.001, burst=1, per="session")])
    with trio.fail_after(10):
        async with serving(per_session) as url:
            for _ in range(2):  # (2025-11-25: each session its own bucket)
                async with connect_http(url, versions=["2025-11-25"]) as client:
                    await client.call_tool("add", {"a": 1, "b": 2})


async def test_rate_limit_per_principal_over_http() -> None:
    def lookup(token: str) -> AccessToken | None:
        return AccessToken(subject=token.split("-")[0], scopes=frozenset({"mcp"}))

    auth = ResourceServer(
        None,
        authorization_servers=["https://as.example"],
        verifier=CallbackVerifier(lookup),
        check_audience=False,
    )
    server = make_server(middleware=[RateLimit(rate=0.001, burst=2, per="principal")])

    def as_user(token: str) -> dict[str, Any]:
        return {"http_options": {"headers": {"Authorization": f"Bearer {token}"}}}

    with trio.fail_after(10):
        async with serving(server, auth=auth) as url:
            # alice's two sessions share her bucket; bob has his own
            async with connect_http(url, **as_user("alice-1")) as first:
                await first.call_tool("add", {"a": 1, "b": 2})
            async with connect_http(url, **as_user("alice-2")) as second:
                await second.call_tool("add", {"a": 1, "b": 2})
                with pytest.raises(McpError) as refused:
                    await second.call_tool("add", {"a": 1, "b": 2})
                assert refused.value.code == RATE_LIMITED
            async with connect_http(url, **as_user("bob-1")) as bob:
                await bob.call_tool("add", {"a": 1, "b": 2})


async def test_access_log_says_which_client_and_principal_over_http(caplog: pytest.LogCaptureFixture) -> None:
    """Over Streamable HTTP the line also names the client's address and its principal."""
    caplog.set_level(logging.INFO, logger=ACCESS)

    def lookup(token: str) -> AccessToken | None:
        return AccessToken(subject=token, scopes=frozenset({"mcp"}))

    auth = ResourceServer(
        None,
        authorization_servers=["https://as.example"],
        verifier=CallbackVerifier(lookup),
        check_audience=False,
    )
    server = make_server(middleware=[AccessLog()])
    with trio.fail_after(10):
        async with serving(server, auth=auth) as url:
            options = {"http_options": {"headers": {"Authorization": "Bearer alice"}}}
            async with connect_http(url, **options) as client:  # type: ignore[arg-type]
                await client.call_tool("add", {"a": 1, "b": 2})
    (line,) = [r for r in access_lines(caplog) if r.getMessage().startswith("tools/call add")]
    message = line.getMessage()
    assert " client=127.0.0.1 " in message and " principal=" in message and "alice" in message, message
    assert line.mcp_client == "127.0.0.1" and "alice" in line.mcp_principal  # type: ignore[attr-defined]
    assert line.mcp_worker is None and "worker=" not in message  # type: ignore[attr-defined]


async def test_serve_access_log_writes_a_line_per_request(tmp_path: Path) -> None:
    """``mcp-trio serve --access-log``: a line per request on stderr, at the default --log-level."""
    (tmp_path / "access_app.py").write_text(
        "from mcp_trio.server import Server\n"
        "app = Server('access-app', '1.0')\n"
        "@app.tool\n"
        "async def shout(text: str) -> str:\n"
        "    return text.upper()\n"
    )
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "--access-log", "access_app.py:app"]
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with (tmp_path / "stderr.txt").open("w+b") as stderr, trio.fail_after(20):
        async with connect_stdio(*argv, env=env, cwd=str(tmp_path), stderr=stderr) as client:
            assert (await client.call_tool("shout", {"text": "hi"})).structuredContent == {"result": "HI"}
            with pytest.raises(McpError):
                await client.call_tool("whisper")
        stderr.seek(0)
        err = stderr.read().decode()
    assert re.search(r"INFO mcp_trio\.access: tools/call shout id=\S+ session=- ok [\d.]+ ms", err), err
    assert re.search(r"INFO mcp_trio\.access: tools/call whisper id=\S+ session=- error -32602 ", err), err
