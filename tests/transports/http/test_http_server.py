"""The Streamable HTTP server (hypercorn front door), checked with raw HTTP."""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from functools import partial
from typing import Any

import httpx2 as httpx
import msgspec
import pytest
import trio
import trio.testing

from mcp_trio.server import Context, Server
from mcp_trio.transports.http._sse import SSEDecoder
from mcp_trio.transports.http.server import (
    HttpRequest,
    InMemoryEventStore,
    StreamableHTTP,
    serve_h11,
)
from mcp_trio.transports.http.server._streams import _HttpSession
from tests._support.doors import DOORS
from tests._support.http_server import (
    ACCEPT,
    MODERN_META,
    RawResponse,
    _Sink,
    events,
    init,
    open_http_session,
    raw_stream,
    rpc,
    running,
)


def make_server() -> tuple[Server, dict[str, Any]]:
    server = Server("http-test", "1")
    state: dict[str, Any] = {"release": trio.Event(), "cancelled": trio.Event()}

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def steps(n: int, ctx: Context) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n)
        return f"{n} steps"

    @server.tool
    async def gated(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await state["release"].wait()
        await ctx.report_progress(2, 2)
        return "released"

    @server.tool
    async def forever() -> str:
        try:
            await trio.sleep_forever()
        finally:
            state["cancelled"].set()
        return "never"

    @server.tool
    async def poll(ctx: Context) -> str:
        """Closes its response stream mid-call (SSE polling)."""
        await ctx.report_progress(1, 2)
        state["closed"] = await ctx.close_stream()
        await state["release"].wait()
        await ctx.report_progress(2, 2)
        return "polled"

    region_schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limit": {"type": "integer", "x-mcp-header": "Limit"},
            "query": {"type": "string"},
        },
        "required": ["query"],
    }

    @server.tool(input_schema=region_schema)
    async def where(arguments: dict[str, Any]) -> str:
        return f"{arguments.get('region')}:{arguments.get('limit')}:{arguments['query']}"

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return f"hi {answer.content['n']}"

    return server, state


@pytest.fixture(params=DOORS)
def front_door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def read_some(response: RawResponse, decoder: SSEDecoder) -> list[Any]:
    """The first message(s) of a streaming response (then stop reading)."""
    got: list[Any] = []
    with trio.fail_after(5):
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                got += [msgspec.json.decode(e.data) for e in decoder.feed(chunk)]
                if got:
                    return got
    return got


async def test_session_lifecycle_and_json_replies(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, endpoint), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        session_id = headers["mcp-session-id"]
        assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
        r = await client.post(
            url, headers=headers, json=rpc(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        )
        assert r.status_code == 200 and r.headers["content-type"] == "application/json"
        assert r.json()["result"]["content"][0]["text"] == "5"
        # no session id / unknown session id
        bare = {k: v for k, v in headers.items() if k != "mcp-session-id"}
        r = await client.post(url, headers=bare, json=rpc(2, "tools/list"))
        assert r.status_code == 400 and "Mcp-Session-Id" in r.json()["error"]["message"]
        r = await client.post(url, headers={**headers, "mcp-session-id": "nope"}, json=rpc(3, "tools/list"))
        assert r.status_code == 404
        # a second session is independent
        other = await open_http_session(client, url)
        assert other["mcp-session-id"] != session_id and len(endpoint.sessions) == 2
        # DELETE ends it; afterwards 404
        r = await client.delete(url, headers=headers)
        assert r.status_code == 200
        r = await client.post(url, headers=headers, json=rpc(4, "tools/list"))
        assert r.status_code == 404
        assert list(endpoint.sessions) == [other["mcp-session-id"]]


async def test_http_level_rejections(front_door: str) -> None:
    server, _ = make_server()
    async with (
        running(front_door, server, max_body_size=1000, max_sessions=2) as (url, _),
        httpx.AsyncClient() as client,
    ):
        headers = await open_http_session(client, url)
        r = await client.post(
            url, headers={**headers, "accept": "application/json"}, json=rpc(1, "tools/list")
        )
        assert r.status_code == 406
        r = await client.post(
            url, headers={**headers, "content-type": "text/plain"}, json=rpc(1, "tools/list")
        )
        assert r.status_code == 415
        r = await client.post(url, headers=headers, content=b'{"jsonrpc": "2.0", ' + b" " * 2000 + b"}")
        assert r.status_code == 413
        r = await client.post(url, headers=headers, content=b"{not json")
        assert r.status_code == 400 and r.json()["error"]["code"] == -32700
        r = await client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 1})
        assert r.status_code == 400 and r.json()["error"]["code"] == -32600
        r = await client.post(
            url, headers={**headers, "mcp-protocol-version": "1999-01-01"}, json=rpc(1, "tools/list")
        )
        assert r.status_code == 400 and "MCP-Protocol-Version" in r.json()["error"]["message"]
        # an older supported revision in the header is accepted (and absence means 2025-03-26)
        r = await client.post(
            url, headers={**headers, "mcp-protocol-version": "2025-03-26"}, json=rpc(2, "tools/list")
        )
        assert r.status_code == 200
        no_version = {k: v for k, v in headers.items() if k != "mcp-protocol-version"}
        r = await client.post(url, headers=no_version, json=rpc(3, "tools/list"))
        assert r.status_code == 200
        r = await client.put(url, headers=headers, json={})
        assert r.status_code == 405
        # the session still works after all that
        r = await client.post(url, headers=headers, json=rpc(9, "ping"))
        assert r.status_code == 200 and r.json() == {"jsonrpc": "2.0", "id": 9, "result": {}}
        # a full table (2) makes room: the least recently used session ends
        await open_http_session(client, url)
        r = await client.post(url, headers=ACCEPT, json=init())
        assert r.status_code == 200
        assert (await client.post(url, headers=headers, json=rpc(10, "ping"))).status_code == 404


async def test_dns_rebinding_protection(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        r = await client.post(url, headers={**ACCEPT, "host": "evil.example.com"}, json=init())
        assert r.status_code == 421
        r = await client.post(url, headers={**ACCEPT, "origin": "http://evil.example.com"}, json=init())
        assert r.status_code == 403
        r = await client.post(
            url, headers={**ACCEPT, "host": "localhost:1234", "origin": "http://localhost:1234"}, json=init()
        )
        assert r.status_code == 200
        # IPv6 literals, with and without a port
        for host, origin in (("[::1]:3000", "http://[::1]:3000"), ("[::1]", "http://[::1]")):
            r = await client.post(url, headers={**ACCEPT, "host": host, "origin": origin}, json=init())
            assert r.status_code == 200, (origin, r.text)
        r = await client.post(url, headers={**ACCEPT, "origin": "http://[::2]:3000"}, json=init())
        assert r.status_code == 403


async def test_host_and_origin_are_checked_exactly(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        port = int(url.split(":")[2].split("/")[0])

        async def status(host: str | None = None, origin: str | None = None) -> int:
            headers = {**ACCEPT, **({"host": host} if host else {}), **({"origin": origin} if origin else {})}
            return (await client.post(url, headers=headers, json=init())).status_code

        # Host: one host[:port], nothing else
        for host in (
            f"127.0.0.1:{port}, evil.example",
            f"127.0.0.1:{port},evil.example",
            f"127.0.0.1:{port} evil.example",
            "127.0.0.1:evil.example",
            "127.0.0.1:99999",
            "127.0.0.1:",
            f"user@127.0.0.1:{port}",
            f"127.0.0.1:{port}/x",
            "localhost.evil.example",
        ):
            assert await status(host) == 421, host
        # Origin: exactly the page's scheme://host:port (the port the request went to)
        for origin in (
            "http://localhost:1",
            f"http://localhost:{port + 1}",
            f"http://127.0.0.1:{port + 1}",
            "http://localhost",
            "null",
            "localhost",
            f"http://localhost:{port}/path",
            f"http://user@localhost:{port}",
            f"ftp://localhost:{port}",
            f"http://localhost:{port}, http://evil.example",
        ):
            assert await status(origin=origin) == 403, origin
        # the legitimate forms still pass
        for host, origin in (
            (f"127.0.0.1:{port}", None),
            (f"localhost:{port}", f"http://localhost:{port}"),
            (f"LocalHost:{port}", f"http://127.0.0.1:{port}"),
            (f"[::1]:{port}", f"https://[::1]:{port}"),
            ("localhost", "http://localhost"),
            ("localhost", "http://localhost:80"),
            (None, f"http://127.0.0.1:{port}"),
        ):
            assert await status(host, origin) == 200, (host, origin)
    # configured lists: exact, the default port may be left out
    options = {
        "allowed_hosts": ["app.example", "api.example:8443"],
        "allowed_origins": ["https://app.example"],
    }
    async with running(front_door, make_server()[0], **options) as (url, _), httpx.AsyncClient() as client:
        assert await status("app.example:1234", "https://app.example") == 200
        assert await status("api.example:8443", "https://app.example:443") == 200
        assert await status("api.example:8444") == 421
        assert await status("app.example", "https://app.example:8443") == 403
        assert await status("app.example", "http://app.example") == 403


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_progress_makes_an_sse_reply(version: str, front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server, retry_ms=500) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url, version)
        params = {"name": "steps", "arguments": {"n": 3}, "_meta": {"progressToken": "p"}}
        r = await client.post(url, headers=headers, json=rpc(7, "tools/call", params))
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
        got = events(r.content)
        assert [m.get("method") for _, m in got] == ["notifications/progress"] * 3 + [None]
        assert got[-1][1]["result"]["content"][0]["text"] == "3 steps"
        ids = [i for i, _ in got]
        assert len(set(ids)) == len(ids)
        priming = r.content.split(b"\n\n")[0].endswith(b"data: ")  # an id and empty data
        assert priming == (version >= "2025-11-25")
        if priming:
            assert b"retry: 500" in r.content.split(b"\n\n")[0]


async def test_a_stateless_request_to_a_server_of_older_revisions_gets_their_answer(
    front_door: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A 2026-07-28 client probes with server/discover; a server that speaks only older revisions
    # answers as one of them does (not initialized yet: -32600, send initialize), so the client
    # falls back; it used to fail the session with an ERROR traceback and an empty stream.
    server, _ = make_server()
    server.versions = ["2025-11-25", "2025-06-18"]
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        r = await client.post(url, headers=modern("server/discover"), json=rpc(1, "server/discover", {}))
        assert r.status_code == 400, r.text
        error = r.json()["error"]
        assert error["code"] == -32600 and "initialize" in error["message"]
        assert (await open_http_session(client, url, "2025-11-25"))["mcp-session-id"]
    assert not [rec for rec in caplog.records if rec.levelno >= logging.ERROR], caplog.text


async def test_json_mode_never_streams(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server, response_mode="json") as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        params = {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": "p"}}
        r = await client.post(url, headers=headers, json=rpc(7, "tools/call", params))
        assert r.headers["content-type"] == "application/json"
        assert r.json()["result"]["content"][0]["text"] == "2 steps"


async def test_get_stream_carries_unrelated_messages(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        # sent before any GET stream: kept and delivered when one opens
        server.tool(lambda: "x", name="late", description="added later")
        async with raw_stream(url, "GET", {**headers, "accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            r = await client.get(url, headers={**headers, "accept": "text/event-stream"})
            assert r.status_code == 409
            got = await read_some(stream, SSEDecoder())
            assert got[0]["method"] == "notifications/tools/list_changed"


async def test_resume_a_dropped_stream_with_last_event_id(front_door: str) -> None:
    server, state = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        params = {"name": "gated", "_meta": {"progressToken": "g"}}
        decoder = SSEDecoder()
        async with raw_stream(url, "POST", headers, rpc(11, "tools/call", params)) as stream:
            first = await read_some(stream, decoder)  # then drop the connection mid-call
        assert first[0]["params"]["progress"] == 1
        last_id = decoder.last_event_id
        assert last_id is not None
        state["release"].set()
        await trio.sleep(0.1)  # the rest is produced while nobody listens
        r = await client.get(
            url, headers={**headers, "accept": "text/event-stream", "last-event-id": last_id}
        )
        rest = [m for _, m in events(r.content)]
        assert [m.get("method") for m in rest] == ["notifications/progress", None]
        assert rest[1]["id"] == 11 and rest[1]["result"]["content"][0]["text"] == "released"


async def test_a_handler_closes_its_stream_and_the_client_resumes_it(front_door: str) -> None:
    """SSE polling (2025-11-25): the response ends after the priming event, what
    was sent so far and a ``retry`` event; the request goes on; GET with
    Last-Event-ID brings the rest, the result included."""
    server, state = make_server()
    async with running(front_door, server, retry_ms=250) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        params = {"name": "poll", "arguments": {}, "_meta": {"progressToken": "p"}}
        with trio.fail_after(5):
            r = await client.post(url, headers=headers, json=rpc(12, "tools/call", params))
        assert r.status_code == 200 and r.headers["content-type"] == "text/event-stream"
        assert state["closed"] is True
        decoder = SSEDecoder()
        got = decoder.feed(r.content)
        assert (
            r.content.startswith(b"id: ")
            and b"\nretry: 250\ndata: \n\n" in r.content.split(b"\n\n")[0] + b"\n\n"
        )
        assert [msgspec.json.decode(e.data)["params"]["progress"] for e in got] == [1]
        assert decoder.retry == 250 and r.content.endswith(b"retry: 250\n\n")
        state["release"].set()
        get_headers = {**headers, "accept": "text/event-stream", "last-event-id": decoder.last_event_id}
        with trio.fail_after(5):
            r = await client.get(url, headers=get_headers)
        rest = [m for _, m in events(r.content)]
        assert [m.get("method") for m in rest] == ["notifications/progress", None]
        assert rest[1]["id"] == 12 and rest[1]["result"]["content"][0]["text"] == "polled"


async def test_closing_a_stream_that_cannot_be_resumed_does_nothing(front_door: str) -> None:
    """Before 2025-11-25 there is no priming event, so the client would have no event
    id to resume from: the stream stays open and carries the result."""
    server, state = make_server()
    state["release"].set()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url, version="2025-06-18")
        with trio.fail_after(5):
            r = await client.post(
                url, headers=headers, json=rpc(13, "tools/call", {"name": "poll", "arguments": {}})
            )
        assert r.status_code == 200
        replies = (
            [r.json()]
            if r.headers["content-type"] == "application/json"
            else [m for _, m in events(r.content)]
        )
        assert replies[-1]["id"] == 13 and replies[-1]["result"]["content"][0]["text"] == "polled"


async def test_our_client_rides_out_a_closed_stream(front_door: str) -> None:
    from mcp_trio.client import connect_http

    server, state = make_server()
    state["release"].set()
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with running(front_door, server, retry_ms=50) as (url, _):
        with trio.fail_after(10):
            async with connect_http(url, versions=["2025-11-25"]) as client:
                result = await client.call_tool("poll", {}, on_progress=on_progress)
                assert result.content[0].text == "polled" and progress == [1, 2]
                assert state["closed"] is True


async def test_cancelled_notification_ends_the_post(front_door: str) -> None:
    server, state = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        async with trio.open_nursery() as nursery:
            result: dict[str, Any] = {}

            async def call() -> None:
                result["r"] = await client.post(
                    url, headers=headers, json=rpc(21, "tools/call", {"name": "forever"})
                )

            nursery.start_soon(call)
            await trio.sleep(0.2)
            r = await client.post(
                url, headers=headers, json=rpc(None, "notifications/cancelled", {"requestId": 21})
            )
            assert r.status_code == 202
            with trio.fail_after(5):
                await state["cancelled"].wait()
        # a request's POST is answered with SSE or JSON, never 202: an empty stream here
        assert result["r"].status_code == 200 and result["r"].headers["content-type"] == "text/event-stream"
        assert b'"result"' not in result["r"].content and b'"error"' not in result["r"].content


async def test_stateless_requests_and_multi_round_trip_over_http(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, endpoint), httpx.AsyncClient() as client:
        headers = {
            **ACCEPT,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "ask",
        }
        r = await client.post(
            url, headers=headers, json=rpc(1, "tools/call", {"name": "ask", "_meta": MODERN_META})
        )
        assert r.status_code == 200 and "mcp-session-id" not in r.headers
        result = r.json()["result"]
        assert result["resultType"] == "input_required"
        ((key, request),) = result["inputRequests"].items()
        params = {
            "name": "ask",
            "_meta": MODERN_META,
            "inputResponses": {key: {"action": "accept", "content": {"n": "ann"}}},
            "requestState": result["requestState"],
        }
        r = await client.post(url, headers=headers, json=rpc(2, "tools/call", params))
        assert r.json()["result"]["content"][0]["text"] == "hi ann"
        assert endpoint.sessions == {}


@asynccontextmanager
async def idle_timing_session(
    front_door: str, idle_timeout: float
) -> AsyncIterator[tuple[str, StreamableHTTP, httpx.AsyncClient, dict[str, str]]]:
    """A server with ``idle_timeout``, a client, and a session of it (its request headers)."""
    server, _ = make_server()
    async with (
        running(front_door, server, idle_timeout=idle_timeout) as (url, endpoint),
        httpx.AsyncClient() as client,
    ):
        yield url, endpoint, client, await open_http_session(client, url)


async def test_idle_sessions_expire(front_door: str) -> None:
    async with idle_timing_session(front_door, 1.0) as (url, endpoint, client, headers):
        session = endpoint.sessions[headers["mcp-session-id"]]
        first_deadline = session.due
        assert first_deadline <= trio.current_time() + 1.0
        await trio.sleep(0.1)
        assert (await client.post(url, headers=headers, json=rpc(1, "ping"))).status_code == 200
        assert session.due > first_deadline  # activity pushed the deadline
        with trio.fail_after(10):
            while endpoint.sessions:
                await trio.sleep(0.05)
        assert (await client.post(url, headers=headers, json=rpc(3, "ping"))).status_code == 404


async def test_an_open_get_stream_keeps_its_session_past_the_idle_timeout(front_door: str) -> None:
    async with idle_timing_session(front_door, 0.3) as (url, endpoint, _, headers):
        session_id = headers["mcp-session-id"]
        async with raw_stream(url, "GET", {**headers, "accept": "text/event-stream"}) as stream:
            assert stream.status_code == 200
            await trio.sleep(1.0)  # over three idle timeouts, the stream open
            assert session_id in endpoint.sessions
        ended = trio.current_time()
        with trio.fail_after(10):  # closed: now it is idle, and ends
            while session_id in endpoint.sessions:
                await trio.sleep(0.02)
        assert trio.current_time() - ended >= 0.25


async def test_sessions_that_ended_leave_nothing_behind_in_the_idle_watch(front_door: str) -> None:
    """Idle expiry keeps an entry per session it watches; the entries of sessions that ended
    (here by DELETE, long before their idle timeout) are dropped, not kept for 30 minutes."""
    server, _ = make_server()
    async with running(front_door, server) as (url, endpoint), httpx.AsyncClient() as client:
        with trio.fail_after(60):
            for _ in range(150):
                headers = await open_http_session(client, url)
                assert (await client.delete(url, headers=headers)).status_code == 200
            while endpoint.sessions:
                await trio.sleep(0.02)
        assert len(endpoint.table._idle) <= 65, len(endpoint.table._idle)


async def test_a_full_session_table_evicts_the_oldest_half_open_session(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server, max_sessions=3) as (url, endpoint), httpx.AsyncClient() as client:
        half_open = []
        for _ in range(3):  # clients that POST initialize and nothing more
            r = await client.post(url, headers=ACCEPT, json=init())
            assert r.status_code == 200
            session_id = r.headers["mcp-session-id"]
            half_open.append({**ACCEPT, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"})
        evicted = endpoint.sessions[half_open[0]["mcp-session-id"]]
        with trio.fail_after(10):
            headers = await open_http_session(client, url)  # room made: the oldest half-open one goes
            r = await client.post(
                url,
                headers=headers,
                json=rpc(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
            )
            assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "5"
            await evicted.wait_done()  # its engine session ended
        assert (await client.post(url, headers=half_open[0], json=rpc(2, "ping"))).status_code == 404
        assert (await client.post(url, headers=half_open[1], json=rpc(2, "ping"))).status_code == 200
        assert len(endpoint.sessions) == 3


async def test_a_full_table_of_initialized_sessions_ends_the_least_recently_used(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server, max_sessions=3) as (url, endpoint), httpx.AsyncClient() as client:
        with trio.fail_after(10):
            sessions = [await open_http_session(client, url) for _ in range(3)]
            for n in (2, 0):  # the second is the least recently used
                assert (await client.post(url, headers=sessions[n], json=rpc(1, "ping"))).status_code == 200
            evicted = endpoint.sessions[sessions[1]["mcp-session-id"]]
            newcomer = await open_http_session(client, url)
            await evicted.wait_done()  # its engine session ended
            assert (await client.post(url, headers=sessions[1], json=rpc(2, "ping"))).status_code == 404
            for headers in (sessions[0], sessions[2], newcomer):
                assert (await client.post(url, headers=headers, json=rpc(3, "ping"))).status_code == 200
            assert len(endpoint.sessions) == 3


async def test_batch_in_2025_03_26(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url, "2025-03-26")
        batch = [rpc(1, "ping"), rpc(2, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})]
        r = await client.post(url, headers=headers, json=batch)
        assert r.status_code == 200
        replies = sorted(r.json(), key=lambda m: m["id"])
        assert replies[0] == {"jsonrpc": "2.0", "id": 1, "result": {}}
        assert replies[1]["result"]["content"][0]["text"] == "2"
        # two requests of one batch with one id: refused at once (the answers could not be told apart)
        with trio.fail_after(5):
            r = await client.post(url, headers=headers, json=[rpc(3, "ping"), rpc(3, "ping")])
        assert r.status_code == 400 and r.json()["error"]["code"] == -32600
        r = await client.post(url, headers=headers, json=[rpc(4, "ping")])  # the session goes on
        assert r.json() == [{"jsonrpc": "2.0", "id": 4, "result": {}}]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_batch_in_a_revision_without_batches_is_refused_and_the_session_goes_on(
    front_door: str, version: str
) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, endpoint), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url, version)
        session = endpoint.sessions[headers["mcp-session-id"]]
        for batch in ([rpc(1, "ping"), rpc(2, "ping")], [rpc(None, "notifications/initialized")]):
            with trio.fail_after(5):  # the response completes: nothing waits for the batch's ids
                r = await client.post(url, headers=headers, json=batch)
            assert r.status_code == 400
            error = r.json()
            assert error["id"] is None and error["error"]["code"] == -32600
            assert "batch" in error["error"]["message"]
        with trio.fail_after(30):
            for i in range(100):  # more than max_streams (64): none of them is left in progress
                r = await client.post(url, headers=headers, json=[rpc(f"b{i}", "ping")])
                assert r.status_code == 400 and r.json()["error"]["code"] == -32600
        assert session.by_request == {} and session.streams == {}
        call = rpc(3, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        r = await client.post(url, headers=headers, json=call)
        assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "2"


async def test_the_negotiated_version_decides_whether_batches_are_allowed(front_door: str) -> None:
    server = Server("no-batches", "1", versions=["2025-06-18"])
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        r = await client.post(url, headers=ACCEPT, json=init("2025-03-26"))  # asks for batches
        assert r.json()["result"]["protocolVersion"] == "2025-06-18"  # and gets none
        headers = {
            **ACCEPT,
            "mcp-session-id": r.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-06-18",
        }
        await client.post(url, headers=headers, json=rpc(None, "notifications/initialized"))
        with trio.fail_after(5):
            r = await client.post(url, headers=headers, json=[rpc(1, "ping")])
        assert r.status_code == 400 and r.json()["error"]["code"] == -32600 and r.json()["id"] is None
        assert (await client.post(url, headers=headers, json=rpc(2, "ping"))).json()["result"] == {}


async def _live_objects() -> int:
    """The objects the collector tracks, less trio's stale deadline records.

    trio keeps each deadline a cancel scope ever had in a heap of (deadline, tiebreaker,
    scope) records and drops the stale ones lazily, all at once, only when they outnumber
    the live ones by about 1,000 (trio/_core/_run.py, ``Deadlines``): so anywhere from 0
    to ~1,000 stale records, each holding a tuple, an ended CancelScope and often its
    CancelReason, are alive at any moment, how many depending on timing (a busy machine
    moved one count by 1,000).  Moving one scope's deadline 5,000 times makes that many
    stale records, so trio drops them all at its next pass, every older one with them:
    the count is taken with none left (public API only; it relies on the pruning being
    lazy with a bound, not on its exact threshold below 5,000)."""
    with trio.CancelScope() as scope:
        base = trio.current_time() + 3600
        for i in range(5000):
            scope.deadline = base + i
        await trio.lowlevel.checkpoint()  # (trio's pass over its deadlines prunes them)
    gc.collect()
    return len(gc.get_objects())


async def test_a_thousand_sessions_leave_nothing_behind() -> None:
    server, _ = make_server()
    store = InMemoryEventStore()
    endpoint = StreamableHTTP(server.serve_session, event_store=store)
    host = {"host": "127.0.0.1"}

    async def one_session() -> None:
        sink = _Sink()
        await endpoint.handle(HttpRequest("POST", {**ACCEPT, **host}, msgspec.json.encode(init())), sink)
        assert sink.status == 200
        headers = {**ACCEPT, **host, "mcp-session-id": sink.headers["mcp-session-id"]}
        await endpoint.handle(
            HttpRequest("POST", headers, msgspec.json.encode(rpc(None, "notifications/initialized"))), _Sink()
        )
        sink = _Sink()
        params = {"name": "steps", "arguments": {"n": 1}, "_meta": {"progressToken": 1}}
        await endpoint.handle(
            HttpRequest("POST", headers, msgspec.json.encode(rpc(1, "tools/call", params))), sink
        )
        assert b"1 steps" in sink.body
        sink = _Sink()
        await endpoint.handle(HttpRequest("DELETE", headers), sink)
        assert sink.status == 200

    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        for _ in range(200):  # warm up caches before measuring
            await one_session()
        # Every task of the ended sessions runs to its end (a fixed sleep is not enough: a
        # process paused past its deadline wakes with some of them still runnable).
        await trio.testing.wait_all_tasks_blocked()
        before = await _live_objects()
        for _ in range(1000):
            await one_session()
        await trio.testing.wait_all_tasks_blocked()
        after = await _live_objects()
        assert endpoint.sessions == {} and len(store) == 0
        assert server._sessions == set() and server._open.log_levels == {} and server._open.subscribed == {}
        # One session's state is hundreds of objects: 1,000 sessions leave none of it, at
        # most a few dozen objects of the runtime's caches (none here, in practice), far
        # below one object per session.
        assert after - before < 100, after - before
        # No ended session is kept, not even by a stale entry of the idle heap.
        assert not [o for o in gc.get_objects() if isinstance(o, _HttpSession) and o.owner is endpoint]
        nursery.cancel_scope.cancel()


async def _raw_exchange(url: str, data: bytes, *, read_timeout: float = 5) -> bytes:
    hostport = url.removeprefix("http://").split("/")[0]
    host, _, port = hostport.partition(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(data)
        received = b""
        with trio.move_on_after(read_timeout):
            while chunk := await stream.receive_some(65536):
                received += chunk
        return received


async def test_h11_front_door_limits_and_keep_alive() -> None:
    server, _ = make_server()
    endpoint = StreamableHTTP(server.serve_session, max_body_size=300)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        (url,) = await nursery.start(
            partial(
                serve_h11,
                endpoint,
                "127.0.0.1",
                0,
                max_header_size=1024,
                request_timeout=0.3,
                keepalive_timeout=0.5,
            )
        )
        head = (
            b"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"accept: application/json, text/event-stream\r\ncontent-type: application/json\r\n"
        )
        # oversize head
        answer = await _raw_exchange(url, head + b"x-big: " + b"a" * 2000 + b"\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 431")
        # declared body too large: refused before reading it
        answer = await _raw_exchange(url, head + b"content-length: 5000\r\n\r\n")
        assert answer.startswith(b"HTTP/1.1 413")
        # a body that never completes
        answer = await _raw_exchange(url, head + b"content-length: 50\r\n\r\n{")
        assert answer.startswith(b"HTTP/1.1 408")
        # two requests on one connection (keep-alive), then idle close
        body = msgspec.json.encode(init())
        one = head + b"content-length: %d\r\n\r\n" % len(body) + body
        answer = await _raw_exchange(url, one + one.replace(b'"id":0', b'"id":1'), read_timeout=3)
        assert answer.count(b"HTTP/1.1 200") == 2 and b'"id":1' in answer
        # other paths
        answer = await _raw_exchange(url, b"GET /other HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n", read_timeout=1)
        assert answer.startswith(b"HTTP/1.1 404")
        nursery.cancel_scope.cancel()


async def test_a_client_leaving_mid_stream_does_not_hurt_the_server(front_door: str) -> None:
    server, state = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        headers = await open_http_session(client, url)
        for i in range(3):
            state["release"] = trio.Event()
            params = {"name": "gated", "_meta": {"progressToken": f"g{i}"}}
            async with raw_stream(url, "POST", headers, rpc(30 + i, "tools/call", params)) as stream:
                await read_some(stream, SSEDecoder())
            state["release"].set()  # the answer now goes to a closed connection
            await trio.sleep(0.05)
        r = await client.post(
            url, headers=headers, json=rpc(40, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        )
        assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "3"


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_our_client_against_our_server_over_http(front_door: str, version: str) -> None:
    from mcp_trio.client import connect_http

    server, _ = make_server()
    seen: list[Any] = []

    async def elicitation(params: Any) -> dict[str, Any]:
        return {"action": "accept", "content": {"n": "zoe"}}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with running(front_door, server) as (url, endpoint):
        with trio.fail_after(10):
            async with connect_http(url, versions=[version], elicitation=elicitation) as client:
                assert client.protocol_version == version
                assert (await client.call_tool("add", {"a": 4, "b": 5})).content[0].text == "9"
                result = await client.call_tool("steps", {"n": 3}, on_progress=on_progress)
                assert result.content[0].text == "3 steps" and seen == [1, 2, 3]
                assert (await client.call_tool("ask")).content[0].text == "hi zoe"
        with trio.fail_after(5):
            while endpoint.sessions:  # DELETE on exit ended the session
                await trio.sleep(0.01)


async def test_stateless_mode_keeps_no_sessions(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server, stateless=True) as (url, endpoint), httpx.AsyncClient() as client:
        r = await client.post(url, headers=ACCEPT, json=init("2025-06-18"))
        assert r.status_code == 200 and r.json()["result"]["protocolVersion"] == "2025-06-18"
        assert "mcp-session-id" not in r.headers
        headers = {**ACCEPT, "mcp-protocol-version": "2025-06-18"}
        r = await client.post(url, headers=headers, json=rpc(None, "notifications/initialized"))
        assert r.status_code == 202
        # every request stands alone, served as if initialized at the header's version
        r = await client.post(
            url, headers=headers, json=rpc(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        )
        assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "5"
        r = await client.post(url, headers=ACCEPT, json=rpc(2, "tools/list"))  # no header: 2025-03-26
        assert [t["name"] for t in r.json()["result"]["tools"]][:2] == ["add", "steps"]
        assert "outputSchema" not in r.json()["result"]["tools"][0]  # a 2025-06-18 field
        params = {"name": "steps", "arguments": {"n": 2}, "_meta": {"progressToken": "s"}}
        r = await client.post(url, headers=headers, json=rpc(3, "tools/call", params))
        assert r.headers["content-type"] == "text/event-stream"
        got = [m for _, m in events(r.content)]
        assert [m.get("method") for m in got] == ["notifications/progress", "notifications/progress", None]
        # the client's capabilities are unknown: no call back to it
        r = await client.post(
            url, headers=headers, json=rpc(4, "tools/call", {"name": "ask", "arguments": {}})
        )
        body = r.json() if r.headers["content-type"] == "application/json" else events(r.content)[-1][1]
        assert body.get("error") or body["result"]["isError"], body
        r = await client.post(
            url, headers={**ACCEPT, "mcp-protocol-version": "1999-01-01"}, json=rpc(5, "ping")
        )
        assert r.status_code == 400
        assert (await client.get(url, headers={"accept": "text/event-stream"})).status_code == 405
        assert (await client.delete(url)).status_code == 405
        assert endpoint.sessions == {}


async def test_our_client_against_a_stateless_server(front_door: str) -> None:
    from mcp_trio.client import connect_http

    server, _ = make_server()
    async with running(front_door, server, stateless=True) as (url, endpoint):
        with trio.fail_after(10):
            async with connect_http(url, versions=["2025-11-25"]) as client:
                assert client.protocol_version == "2025-11-25"
                assert (await client.call_tool("add", {"a": 1, "b": 1})).content[0].text == "2"
                assert endpoint.sessions == {}


def modern(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    headers = {**ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": method, **extra}
    if name is not None:
        headers["mcp-name"] = name
    return headers


async def test_modern_request_headers_must_match_the_body(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:

        async def call(headers: dict[str, str], name: str, arguments: dict[str, Any]) -> httpx.Response:
            params = {"name": name, "arguments": arguments, "_meta": MODERN_META}
            return await client.post(url, headers=headers, json=rpc(9, "tools/call", params))

        def refused(r: httpx.Response, words: str) -> None:
            assert r.status_code == 400, r.text
            error = r.json()["error"]
            assert r.json()["id"] == 9 and error["code"] == -32020 and words in error["message"], error

        ok = await call(modern("tools/call", "add"), "add", {"a": 1, "b": 2})
        assert ok.status_code == 200 and ok.json()["result"]["content"][0]["text"] == "3"
        no_version = modern("tools/call", "add")
        del no_version["mcp-protocol-version"]
        refused(await call(no_version, "add", {"a": 1, "b": 2}), "MCP-Protocol-Version")
        refused(
            await call({**ACCEPT, "mcp-protocol-version": "2026-07-28"}, "add", {"a": 1, "b": 2}),
            "Mcp-Method",
        )
        refused(await call(modern("tools/list", "add"), "add", {"a": 1, "b": 2}), "Mcp-Method")
        refused(await call(modern("tools/call"), "add", {"a": 1, "b": 2}), "Mcp-Name header is missing")
        refused(await call(modern("tools/call", "steps"), "add", {"a": 1, "b": 2}), "'steps' does not match")
        # a Base64-encoded name is decoded before the comparison; a broken one is refused
        assert (
            await call(modern("tools/call", "=?base64?YWRk?="), "add", {"a": 1, "b": 2})
        ).status_code == 200
        refused(await call(modern("tools/call", "=?base64?%%%?="), "add", {"a": 1, "b": 2}), "malformed")
        # x-mcp-header arguments: required when present in the body, compared after decoding
        args = {"region": "us-west1", "limit": 42, "query": "q"}
        good = modern("tools/call", "where", **{"mcp-param-region": "us-west1", "mcp-param-limit": "42.0"})
        r = await call(good, "where", args)
        assert r.status_code == 200 and r.json()["result"]["content"][0]["text"] == "us-west1:42:q"
        refused(
            await call(modern("tools/call", "where", **{"mcp-param-limit": "42"}), "where", args),
            "Mcp-Param-Region",
        )
        wrong = modern("tools/call", "where", **{"mcp-param-region": "eu", "mcp-param-limit": "42"})
        refused(await call(wrong, "where", args), "'eu' does not match")
        unicode = modern("tools/call", "where", **{"mcp-param-region": "=?base64?SGVsbG8sIOS4lueVjA==?="})
        assert (await call(unicode, "where", {"region": "Hello, 世界", "query": "q"})).status_code == 200
        # absent argument: no header expected, and one sent anyway does not match
        assert (await call(modern("tools/call", "where"), "where", {"query": "q"})).status_code == 200
        stray = modern("tools/call", "where", **{"mcp-param-region": "x"})
        refused(await call(stray, "where", {"query": "q"}), "absent")
        # resources/read names its URI
        read = {"uri": "test://nothing", "_meta": MODERN_META}
        r = await client.post(url, headers=modern("resources/read"), json=rpc(9, "resources/read", read))
        refused(r, "Mcp-Name")


async def test_our_client_learns_header_annotations_after_a_mismatch(front_door: str) -> None:
    """A client that calls a tool before listing it cannot know its x-mcp-header
    annotations; the server refuses with HeaderMismatch, the client lists the
    tools and retries once."""
    from mcp_trio.client import connect_http

    server, _ = make_server()
    async with running(front_door, server) as (url, _):
        with trio.fail_after(10):
            async with connect_http(url, versions=["2026-07-28"]) as client:
                result = await client.call_tool("where", {"region": "ap", "limit": 3, "query": "x"})
                assert result.content[0].text == "ap:3:x"


async def test_stateless_request_errors_carry_their_http_status_and_id(front_door: str) -> None:
    """2026-07-28: an unknown or removed method is 404 with -32601; a request whose
    _meta is missing or wrong is 400 with -32602; an unsupported version is 400 with
    -32022; every error names the request's id."""
    server, _ = make_server()
    async with running(front_door, server) as (url, endpoint), httpx.AsyncClient() as client:

        async def post(
            method: str, params: dict[str, Any], headers: dict[str, str] | None = None
        ) -> httpx.Response:
            return await client.post(url, headers=headers or modern(method), json=rpc(41, method, params))

        for removed in ("initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such/method"):
            r = await post(removed, {"_meta": MODERN_META})
            assert r.status_code == 404, (removed, r.text)
            assert r.json()["id"] == 41 and r.json()["error"]["code"] == -32601
        # the header says 2026-07-28, the body has no _meta (or none naming a version)
        for params in ({}, {"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}):
            r = await post("tools/list", params)
            assert r.status_code == 400 and r.json()["id"] == 41 and r.json()["error"]["code"] == -32602, (
                r.text
            )
        bad_caps = {"_meta": {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": 5}}
        r = await post("tools/list", bad_caps)
        assert r.status_code == 400 and r.json()["error"]["code"] == -32602
        future = {"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}
        r = await post(
            "server/discover", future, modern("server/discover", **{"mcp-protocol-version": "2099-01-01"})
        )
        assert r.status_code == 400 and r.json()["id"] == 41
        assert r.json()["error"]["code"] == -32022
        assert "2026-07-28" in r.json()["error"]["data"]["supported"]
        # a successful request is still 200, and nothing was left behind
        r = await post("tools/list", {"_meta": MODERN_META})
        assert r.status_code == 200 and r.json()["result"]["tools"]
        assert endpoint.sessions == {}


async def test_bodies_that_are_not_json_text_get_a_parse_error(front_door: str) -> None:
    server, _ = make_server()
    async with running(front_door, server) as (url, _), httpx.AsyncClient() as client:
        for body in (b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}', b"[" * 5000 + b"]" * 5000):
            r = await client.post(url, headers=ACCEPT, content=body)
            assert r.status_code == 400 and r.json()["error"]["code"] == -32700, r.text
        r = await client.post(url, headers=ACCEPT, json=init())  # and the server goes on
        assert r.status_code == 200


def test_a_host_found_allowed_once_still_has_its_origin_checked_and_others_their_own() -> None:
    # The guard remembers the last Host it allowed (a client repeats its own); what
    # it remembers must never let a bad Origin, or another Host, through.
    from mcp_trio.transports.http._request import HostGuard

    guard = HostGuard(["127.0.0.1"])

    def status(headers: dict[str, str]) -> int | None:
        reply = guard.check(HttpRequest("POST", headers, b""))
        return None if reply is None else reply.status

    assert status({"host": "127.0.0.1:8000"}) is None
    assert status({"host": "127.0.0.1:8000"}) is None  # (remembered)
    assert status({"host": "127.0.0.1:8000", "origin": "http://evil.example"}) == 403
    assert status({"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:9999"}) == 403
    assert status({"host": "127.0.0.1:8000", "origin": "http://127.0.0.1:8000"}) is None
    assert status({"host": "evil.example"}) == 421
    assert status({"host": "127.0.0.1:8000, evil.example"}) == 421
    assert status({}) == 421
    assert status({"host": "127.0.0.1:8000"}) is None
