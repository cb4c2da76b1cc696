"""The Streamable HTTP client transport against small scripted HTTP servers (h11 on 127.0.0.1).

Each test runs a real server on a loopback port; its handler decides, per
request, what goes on the wire (JSON, an SSE stream, an HTTP error, a dropped
or reset connection), so the edge cases are exact.
"""

from __future__ import annotations

import json
import socket
from functools import partial
from typing import Any

import h11
import pytest
import trio

from mcp_trio import ConnectionClosed, McpError, open_session
from mcp_trio.client import connect_http
from mcp_trio.transports.http._headers import encode_value as _encode_header_value
from mcp_trio.transports.http._headers import header_annotations as _header_annotations
from mcp_trio.transports.http._sse import encode_event
from mcp_trio.transports.http.client import (
    TRANSPORT_ERROR,
    HTTPClientChannel,
    open_http_client,
    open_legacy_sse_client,
)
from tests._support.http_client import (
    INFO,
    SESSION,
    VERSION,
    Conn,
    Handler,
    Request,
    _certificates,
    frame,
    handshake,
    mcp_handler,
    receive_json,
    request,
    start,
)

MODERN = "2026-07-28"

# ----------------------------------------------------------- scripted server


def result(req: Request, value: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": req.rpc_id, "result": {} if value is None else value}


def tool_result(req: Request, text: str) -> dict[str, Any]:
    return result(req, {"content": [{"type": "text", "text": text}]})


def transport_error(reply: Any) -> dict[str, Any]:
    assert reply["error"]["code"] == TRANSPORT_ERROR, reply
    data: dict[str, Any] = reply["error"]["data"]
    assert data["transport"] == "http"
    return data


# ----------------------------------------------------------- the basics


async def test_headers_session_and_version_follow_the_handshake(nursery: trio.Nursery) -> None:
    server = await start(nursery, mcp_handler())
    async with open_http_client(server.url, headers={"Authorization": "Bearer t"}) as channel:
        await handshake(channel)
        assert channel.session_id == SESSION and channel.protocol_version == VERSION
        await channel.send(request(1, "tools/list"))
        assert (await receive_json(channel))["id"] == 1
    init, note, listing = server.of("POST")
    assert init.rpc_method == "initialize"
    assert "mcp-session-id" not in init.headers and "mcp-protocol-version" not in init.headers
    for r in (init, note, listing):
        assert r.headers["accept"] == "application/json, text/event-stream"
        assert r.headers["content-type"] == "application/json"
        assert r.headers["host"] == f"127.0.0.1:{server.port}"
        assert r.headers["authorization"] == "Bearer t"
    for r in (note, listing):
        assert r.headers["mcp-session-id"] == SESSION
        assert r.headers["mcp-protocol-version"] == VERSION
    (delete,) = server.of("DELETE")
    assert delete.headers["mcp-session-id"] == SESSION
    # The GET stream was tried once after initialization; 405 means "none": no retries.
    (get,) = server.of("GET")
    assert get.headers["accept"] == "text/event-stream" and get.headers["mcp-session-id"] == SESSION


async def test_connections_are_kept_alive_and_reused(nursery: trio.Nursery) -> None:
    server = await start(nursery, mcp_handler())
    async with open_http_client(server.url, listen=False) as channel:
        await handshake(channel)
        for i in range(1, 20):
            await channel.send(request(i, "ping"))
            assert (await receive_json(channel))["id"] == i
        assert channel._pool.opened == 1
    assert server.connections == 1  # the DELETE too went on the kept-alive connection


async def test_a_json_batch_reply_becomes_separate_frames(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "info", "data": "x"},
        }
        await conn.json(200, [note, result(req, {"n": 1})])

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/list"))
        first, second = await receive_json(channel), await receive_json(channel)
    assert first["method"] == "notifications/message"
    assert second == {"jsonrpc": "2.0", "id": 1, "result": {"n": 1}}


async def test_an_empty_batch_on_a_stream_reaches_the_engine_whole(nursery: trio.Nursery) -> None:
    # (split, it would be nothing at all, and the engine could not answer it -32600 with id null)
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.event([])
        await conn.event(result(req))
        await conn.end()

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/list"))
        first, second = await receive_json(channel), await receive_json(channel)
    assert first == []
    assert second == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_requests_run_concurrently_within_max_connections(nursery: trio.Nursery) -> None:
    release = trio.Event()

    async def on_request(req: Request, conn: Conn) -> None:
        await release.wait()
        await conn.json(200, result(req))

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url, max_connections=3, listen=False) as channel:
        await handshake(channel)
        for i in range(1, 7):
            await channel.send(request(i, "tools/list"))
        with trio.fail_after(5):
            while server.active < 3:
                await trio.sleep(0.01)
        await trio.sleep(0.05)
        assert server.active == 3  # the others wait for a connection
        release.set()
        ids = sorted([(await receive_json(channel))["id"] for _ in range(6)])
    assert ids == [1, 2, 3, 4, 5, 6]
    assert server.max_active == 3


async def test_an_sse_reply_delivers_every_event_and_ends_with_the_response(
    nursery: trio.Nursery,
) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.raw(b": keep-alive comment\n\n")
        for i in (1, 2):
            progress = {"progressToken": 7, "progress": i, "total": 2}
            await conn.event({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        # a server-to-client request on the same stream, then the response
        await conn.event({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
        await conn.event(tool_result(req, "done"))
        await conn.end()

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url, listen=False) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": 7}}))
        got = [await receive_json(channel) for _ in range(4)]
        assert [g.get("method") for g in got] == [
            "notifications/progress",
            "notifications/progress",
            "roots/list",
            None,
        ]
        with trio.fail_after(5):  # the stream ended: its connection goes back to the pool
            while not channel._pool._idle:
                await trio.sleep(0.01)
        # the answer to the server's request is one more POST (202), on the same connection
        await channel.send(frame({"jsonrpc": "2.0", "id": "s1", "result": {"roots": []}}))
        assert channel._pool.opened == 1
    answer = server.of("POST")[-1]
    assert answer.json["id"] == "s1" and answer.headers["mcp-session-id"] == SESSION


async def test_through_the_engine_with_a_session(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.json(200, tool_result(req, req.json["params"]["arguments"]["text"]))

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                assert await session.connect() == VERSION
                res = await session.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
            assert res.content[0].text == "hi"


async def test_a_handshake_server_refusing_the_modern_probe_gets_initialize(
    nursery: trio.Nursery,
) -> None:
    """The engine probes with server/discover; a 2025-era server's 400 makes it fall back."""

    async def on_request(req: Request, conn: Conn) -> None:
        if req.rpc_method == "server/discover":
            error = {"code": -32600, "message": "Bad Request: Missing session ID"}
            await conn.json(400, {"jsonrpc": "2.0", "id": None, "error": error})
        else:
            await conn.json(200, result(req, {"tools": []}))

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        async with open_session(channel, role="client", info=INFO) as session:
            with trio.fail_after(5):
                assert await session.connect() == VERSION
                await session.request("tools/list")
    probe, init = server.of("POST")[:2]
    assert probe.rpc_method == "server/discover" and probe.headers["mcp-method"] == "server/discover"
    assert probe.headers["mcp-protocol-version"] == MODERN
    assert init.rpc_method == "initialize" and "mcp-protocol-version" not in init.headers
    assert server.of("POST", "tools/list")[0].headers["mcp-protocol-version"] == VERSION


# ----------------------------------------------------------- failures


async def test_http_500_fails_that_request_with_status_and_body(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        if req.json["params"]["name"] == "bad":
            await conn.respond(500, b"<html>  internal\n  trouble </html>", ctype="text/html")
        else:
            await conn.json(200, tool_result(req, "fine"))

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                await session.connect()
                with pytest.raises(McpError) as info:
                    await session.request("tools/call", {"name": "bad"})
                # the session goes on
                res = await session.request("tools/call", {"name": "good"})
    err = info.value
    assert err.code == TRANSPORT_ERROR
    assert (
        "HTTP 500 Internal Server Error" in err.message and "<html> internal trouble </html>" in err.message
    )
    assert err.data == {
        "transport": "http",
        "reason": "http_status",
        "status": 500,
        "body": "<html> internal trouble </html>",
    }
    assert res.content[0].text == "fine"


async def test_a_jsonrpc_error_in_an_http_error_body_is_delivered_as_is(
    nursery: trio.Nursery,
) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        error = {"code": -32602, "message": "Invalid params: nope", "data": {"field": "x"}}
        await conn.json(400, {"jsonrpc": "2.0", "id": None, "error": error})

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(5, "tools/call", {"name": "x"}))
        reply = await receive_json(channel)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 5,  # the server's null id is put back to the request's
        "error": {"code": -32602, "message": "Invalid params: nope", "data": {"field": "x"}},
    }


async def test_404_with_a_session_id_expires_the_session_when_renewal_is_off(nursery: trio.Nursery) -> None:
    gone = False

    async def on_request(req: Request, conn: Conn) -> None:
        if gone:
            await conn.respond(404, b"Not Found: Invalid or expired session ID", ctype="text/plain")
        else:
            await conn.json(200, tool_result(req, "ok"))

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url, renew_sessions=False) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                await session.connect()
                await session.request("tools/call", {"name": "x"})
                gone = True
                with pytest.raises(McpError) as info:
                    await session.request("tools/call", {"name": "x"})
                await session.closed.wait()
                with pytest.raises(ConnectionClosed):
                    await session.request("tools/call", {"name": "x"})
        assert channel.session_expired
    err = info.value
    assert err.code == TRANSPORT_ERROR and err.data["reason"] == "session_expired"
    assert err.data["session_id"] == SESSION
    assert server.of("DELETE") == []  # nothing to end: the server already forgot it


def forgetful_server() -> tuple[Handler, dict[str, Any]]:
    """Sessions s1, s2, ...; ``state["forget"]()`` drops every live one (404 from then on);
    ``state["refuse_new"]`` makes new sessions forgotten at once."""
    state: dict[str, Any] = {"live": set(), "count": 0, "refuse_new": False, "inits": 0}

    def forget() -> None:
        state["live"].clear()

    state["forget"] = forget

    async def handler(req: Request, conn: Conn) -> None:
        if req.method == "DELETE":
            await conn.respond(200)
            return
        sid = req.headers.get("mcp-session-id")
        body = req.json if req.method == "POST" else None
        if body is not None and body.get("method") == "initialize":
            state["count"] += 1
            state["inits"] += 1
            new = f"s{state['count']}"
            if not state["refuse_new"]:
                state["live"].add(new)
            result = {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "forgetful", "version": "0"},
            }
            await conn.json(
                200, {"jsonrpc": "2.0", "id": body["id"], "result": result}, [("Mcp-Session-Id", new)]
            )
        elif sid not in state["live"]:
            await conn.respond(404, b"Not Found: no such session", ctype="text/plain")
        elif req.method == "GET":
            await conn.respond(405)
        elif "id" not in body:
            await conn.respond(202)
        else:
            await conn.json(200, tool_result(req, f"ok in {sid}"))

    return handler, state


async def test_404_renews_the_session_and_resends(nursery: trio.Nursery) -> None:
    """The server forgot the session: the client initializes again (same version), sends
    notifications/initialized, and the refused request goes through on the new session."""
    handler, state = forgetful_server()
    server = await start(nursery, handler)
    async with open_http_client(server.url) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                await session.connect()
                first = await session.request("tools/call", {"name": "x"})
                assert first.content[0].text == "ok in s1"
                state["forget"]()
                again = await session.request("tools/call", {"name": "x"})
                assert again.content[0].text == "ok in s2"
                assert channel.session_id == "s2" and channel.renewals == 1
                assert not channel.session_expired and session.protocol_version == VERSION
                # a renewed session that is refused again ends for good (bounded)
                state["refuse_new"] = True
                state["forget"]()
                with pytest.raises(McpError) as info:
                    await session.request("tools/call", {"name": "x"})
                assert info.value.data["reason"] == "session_expired"
    rpcs = [r.rpc_method for r in server.of("POST")]
    assert rpcs.count("initialize") == state["inits"] == 3
    assert rpcs[:4] == ["initialize", "notifications/initialized", "tools/call", "tools/call"]
    assert rpcs[4:6] == ["initialize", "notifications/initialized"]


async def test_404_without_a_session_is_an_ordinary_http_error(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.respond(404, b"no such thing", ctype="text/plain")

    server = await start(nursery, mcp_handler(on_request, session=None))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/list"))
        data = transport_error(await receive_json(channel))
        assert data["reason"] == "http_status" and data["status"] == 404
        assert not channel.session_expired


async def test_405_for_get_and_delete_is_accepted_quietly(nursery: trio.Nursery) -> None:
    server = await start(nursery, mcp_handler(delete_status=405))
    with trio.fail_after(5):
        async with open_http_client(server.url, reconnect_delay=0.01) as channel:
            await handshake(channel)
            await trio.sleep(0.1)
    assert len(server.of("GET")) == 1 and len(server.of("DELETE")) == 1


async def test_a_dead_server_fails_requests_promptly(nursery: trio.Nursery) -> None:
    arrived = trio.Event()

    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.event(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": 1},
            }
        )
        arrived.set()
        await trio.sleep(0.1)
        await conn.reset()

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        t0 = trio.current_time()
        await channel.send(request(1, "tools/call", {"name": "x"}))
        assert (await receive_json(channel))["method"] == "notifications/message"
        data = transport_error(await receive_json(channel, timeout=2))
        assert data["reason"] == "stream_ended"  # no event id: the stream cannot be resumed
        assert trio.current_time() - t0 < 1.5
        server.stop()
        await trio.sleep(0.05)
        t0 = trio.current_time()
        await channel.send(request(2, "tools/list"))
        reply = await receive_json(channel, timeout=2)
        data = transport_error(reply)
        assert data["reason"] == "connect" and "cannot connect to 127.0.0.1" in reply["error"]["message"]
        assert trio.current_time() - t0 < 1


async def test_connection_refused_through_the_engine() -> None:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with open_http_client(f"http://127.0.0.1:{port}/mcp") as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5), pytest.raises(McpError) as info:
                await session.connect()
    assert info.value.data["reason"] == "connect"
    assert f"cannot connect to 127.0.0.1:{port}" in info.value.message


async def test_a_server_that_hangs_up_is_named_clearly(nursery: trio.Nursery) -> None:
    """A server killed mid-request: the error says the connection was closed, and when."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    answers = [b"", b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"]

    async def hang_up(stream: trio.SocketStream) -> None:
        await stream.receive_some(65536)
        await stream.send_all(answers.pop(0))
        await stream.aclose()

    nursery.start_soon(partial(trio.serve_listeners, hang_up, [listener]))
    url = f"http://127.0.0.1:{port}/mcp"
    for when in ("before answering", "in the middle of the response"):
        async with open_http_client(url) as channel:
            async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
                with trio.fail_after(5), pytest.raises(McpError) as info:
                    await session.connect()
        assert info.value.data["reason"] == "connection"
        assert info.value.message == f"the server closed the connection {when} (POST {url})"


async def test_a_connect_timeout_names_the_server() -> None:
    """A server that never accepts: a listening socket with a full backlog."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = server.getsockname()[1]
        url = f"http://127.0.0.1:{port}/mcp"
        fillers = [socket.socket() for _ in range(4)]
        try:
            for sock in fillers:
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
            with trio.fail_after(5), pytest.raises(trio.TooSlowError) as slow:
                async with connect_http(url, connect_timeout=0.3):
                    pass
            assert str(slow.value) == (
                f"connecting to {url} timed out after 0.3 s (no connection, or no answer to initialize)"
            )
            async with open_http_client(url, timeout=0.3) as channel:
                async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
                    with trio.fail_after(5), pytest.raises(McpError) as info:
                        await session.connect()
            assert info.value.data["reason"] == "connect"
            assert info.value.message == f"cannot connect to 127.0.0.1:{port}: no answer within 0.3 s"
        finally:
            for sock in fillers:
                sock.close()


async def test_read_timeout_turns_a_silent_server_into_an_error(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await trio.sleep_forever()

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url, read_timeout=0.2, listen=False) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/call", {"name": "x"}))
        reply = await receive_json(channel, timeout=2)
    assert transport_error(reply)["reason"] == "stream_ended"
    assert "the server sent nothing for 0.2 s" in reply["error"]["message"]


async def test_oversize_replies_are_refused_with_a_clear_error(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        kind = req.json.get("params", {}).get("name")
        big = tool_result(req, "x" * 5000)
        if kind == "declared":
            await conn.json(200, big)
        elif kind is None:
            await conn.json(200, result(req))
        elif kind == "chunked":
            await conn._send(h11.Response(status_code=200, headers=[("Content-Type", "application/json")]))
            for _ in range(10):
                await conn.raw(b" " * 1000)
            await conn.raw(json.dumps(big).encode())
            await conn.end()
        else:
            await conn.start_sse()
            await conn.event(big)
            await conn.end()

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url, max_message_size=4096) as channel:
        await handshake(channel)
        for i, kind in enumerate(("declared", "chunked", "sse"), 1):
            await channel.send(request(i, "tools/call", {"name": kind}))
            reply = await receive_json(channel)
            assert reply["id"] == i
            data = transport_error(reply)
            assert data["reason"] == "too_large" and data["limit"] == 4096
            assert "4096" in reply["error"]["message"]
        # small replies still work
        await channel.send(request(9, "ping"))
        assert (await receive_json(channel))["id"] == 9


async def test_a_request_answered_with_202_is_failed_not_left_hanging(
    nursery: trio.Nursery,
) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.respond(202)

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/list"))
        data = transport_error(await receive_json(channel))
        assert data["reason"] == "bad_response"


async def test_redirects_are_not_followed(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.respond(307, headers=[("Location", "http://example.invalid/mcp")])

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/list"))
        data = transport_error(await receive_json(channel))
    assert data["reason"] == "redirect" and data["location"] == "http://example.invalid/mcp"


# ----------------------------------------------------------- resumability


async def test_a_dropped_stream_is_resumed_with_last_event_id_after_retry(
    nursery: trio.Nursery,
) -> None:
    dropped_at: list[float] = []

    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.event(id="ev-0", retry=300)  # priming event
        progress = {"progressToken": 1, "progress": 1}
        await conn.event(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}, id="ev-1"
        )
        dropped_at.append(trio.current_time())
        await conn.end()  # the server closes mid-call (SEP-1699 polling)

    async def get(req: Request, conn: Conn) -> None:
        if "last-event-id" not in req.headers:
            await conn.respond(405)
            return
        await conn.start_sse()
        progress = {"progressToken": 1, "progress": 2}
        await conn.event(
            {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}, id="ev-2"
        )
        await conn.event(tool_result(Request("", "", {}, b'{"id": 1}'), "resumed"), id="ev-3")
        await conn.end()

    server = await start(nursery, mcp_handler(on_request, get=get))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        await channel.send(request(1, "tools/call", {"name": "x", "_meta": {"progressToken": 1}}))
        got = [await receive_json(channel) for _ in range(3)]
        resumed_at = trio.current_time()
    assert [g.get("params", {}).get("progress") for g in got[:2]] == [1, 2]
    assert got[2]["result"]["content"][0]["text"] == "resumed"
    resume = [r for r in server.of("GET") if "last-event-id" in r.headers]
    assert len(resume) == 1
    assert resume[0].headers["last-event-id"] == "ev-1"
    assert resume[0].headers["mcp-session-id"] == SESSION
    assert resume[0].headers["mcp-protocol-version"] == VERSION
    assert resumed_at - dropped_at[0] >= 0.3  # the server's retry was respected


async def test_a_broken_stream_is_resumed_and_failures_are_bounded(nursery: trio.Nursery) -> None:
    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        await conn.event(id="p1", retry=20)
        await conn.drop()  # mid-message: the chunked body never ends

    gets = 0

    async def get(req: Request, conn: Conn) -> None:
        nonlocal gets
        gets += 1
        await conn.respond(503 if "last-event-id" in req.headers else 405, b"busy")

    server = await start(nursery, mcp_handler(on_request, get=get))
    async with open_http_client(server.url, reconnect_attempts=3) as channel:
        await handshake(channel)
        t0 = trio.current_time()
        await channel.send(request(1, "tools/call", {"name": "x"}))
        reply = await receive_json(channel)
        data = transport_error(reply)
    assert data["reason"] == "stream_ended"
    assert "3 attempts" in reply["error"]["message"] and "HTTP 503" in reply["error"]["message"]
    assert len([r for r in server.of("GET") if "last-event-id" in r.headers]) == 3
    assert trio.current_time() - t0 < 1


async def test_the_get_stream_delivers_and_reconnects_with_last_event_id(
    nursery: trio.Nursery,
) -> None:
    async def get(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        n = 1 if "last-event-id" not in req.headers else 2
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"n": n}}
        await conn.event(note, id=f"g{n}", retry=10)
        if n == 1:
            await conn.end()
        else:
            await trio.sleep_forever()

    server = await start(nursery, mcp_handler(get=get))
    async with open_http_client(server.url) as channel:
        await handshake(channel)
        first, second = await receive_json(channel), await receive_json(channel)
    assert (first["params"]["n"], second["params"]["n"]) == (1, 2)
    gets = server.of("GET")
    assert "last-event-id" not in gets[0].headers and gets[1].headers["last-event-id"] == "g1"


# ----------------------------------------------------------- cancellation


async def test_cancel_up_to_2025_posts_the_notification_then_closes_the_stream(
    nursery: trio.Nursery,
) -> None:
    stream_closed = trio.Event()

    async def on_request(req: Request, conn: Conn) -> None:
        await conn.start_sse()
        try:
            while True:
                await conn.raw(b": waiting\n\n")
                await trio.sleep(0.02)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            stream_closed.set()
            raise

    server = await start(nursery, mcp_handler(on_request))
    async with open_http_client(server.url) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                await session.connect()
                with pytest.raises(trio.TooSlowError):
                    await session.request("tools/call", {"name": "slow"}, timeout=0.2)
                await stream_closed.wait()
    (cancel,) = server.of("POST", "notifications/cancelled")
    assert cancel.headers["mcp-session-id"] == SESSION
    assert cancel.json["params"]["requestId"] == server.of("POST", "tools/call")[0].rpc_id


async def test_cancel_at_2026_closes_the_stream_and_posts_nothing(nursery: trio.Nursery) -> None:
    stream_closed = trio.Event()

    async def handler(req: Request, conn: Conn) -> None:
        if req.method != "POST":
            await conn.respond(405)
            return
        if req.rpc_method == "notifications/cancelled":
            await conn.respond(202)
            return
        await conn.start_sse()
        try:
            while True:
                await conn.raw(b":\n\n")
                await trio.sleep(0.02)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            stream_closed.set()
            raise

    server = await start(nursery, handler)
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    async with open_http_client(server.url) as channel:
        await channel.send(request(1, "tools/call", {"name": "slow", "_meta": meta}))
        with trio.fail_after(5):
            while not server.of("POST"):
                await trio.sleep(0.01)
        await channel.send(
            frame({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
        )
        with trio.fail_after(5):
            await stream_closed.wait()
    (call,) = server.of("POST")
    assert call.headers["mcp-method"] == "tools/call" and call.headers["mcp-name"] == "slow"
    assert call.headers["mcp-protocol-version"] == MODERN and "mcp-session-id" not in call.headers
    assert server.of("DELETE") == []


# ----------------------------------------------------------- 2026-07-28 headers


def test_x_mcp_header_annotations() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "nested": {
                "type": "object",
                "properties": {"n": {"type": "integer", "x-mcp-header": "N"}},
            },
            "plain": {"type": "string"},
        },
    }
    assert _header_annotations(schema) == [(("region",), "Region"), (("nested", "n"), "N")]
    assert _header_annotations({"type": "object"}) == []
    bad = [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "A"},
                "b": {"type": "string", "x-mcp-header": "a"},
            }
        },
        {"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}},
        {"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
        {"type": "string", "x-mcp-header": "Root"},
    ]
    for schema in bad:
        assert isinstance(_header_annotations(schema), str), schema


def test_header_value_encoding() -> None:
    assert _encode_header_value("us-west1") == "us-west1"
    assert _encode_header_value("Hello, 世界") == "=?base64?SGVsbG8sIOS4lueVjA==?="
    assert _encode_header_value(" padded ") == "=?base64?IHBhZGRlZCA=?="
    assert _encode_header_value("line1\nline2") == "=?base64?bGluZTEKbGluZTI=?="
    assert _encode_header_value("=?base64?literal?=") == "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
    assert _encode_header_value("trailing\n") == "=?base64?dHJhaWxpbmcK?="
    assert _encode_header_value("a\tb") == "a\tb"
    assert isinstance(
        _header_annotations({"properties": {"a": {"type": "string", "x-mcp-header": "A\n"}}}), str
    )


async def test_modern_requests_carry_method_name_and_param_headers(nursery: trio.Nursery) -> None:
    tools = [
        {
            "name": "weather",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "days": {"type": "integer", "x-mcp-header": "Days"},
                    "metric": {"type": "boolean", "x-mcp-header": "Metric"},
                },
            },
        },
        {
            "name": "broken",
            "inputSchema": {
                "type": "object",
                "properties": {"x": {"type": "number", "x-mcp-header": "X"}},
            },
        },
        {"name": "plain", "inputSchema": {"type": "object"}},
    ]

    async def handler(req: Request, conn: Conn) -> None:
        if req.rpc_method == "tools/list":
            await conn.json(200, result(req, {"tools": tools}))
        else:
            await conn.json(200, tool_result(req, "ok"))

    server = await start(nursery, handler)
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN}
    async with open_http_client(server.url) as channel:
        await channel.send(request(1, "tools/list", {"_meta": meta}))
        listed = await receive_json(channel)
        assert [t["name"] for t in listed["result"]["tools"]] == ["weather", "plain"]
        args = {"region": "Zürich", "days": 3, "metric": True}
        await channel.send(request(2, "tools/call", {"name": "weather", "arguments": args, "_meta": meta}))
        await receive_json(channel)
        await channel.send(request(3, "resources/read", {"uri": "file:///a b", "_meta": meta}))
        await receive_json(channel)
        await channel.send(request(4, "tasks/get", {"taskId": "t-1", "_meta": meta}))
        await receive_json(channel)
        assert channel.protocol_version == MODERN and channel.session_id is None
    listing, call, read, task = server.of("POST")
    assert task.headers["mcp-method"] == "tasks/get" and task.headers["mcp-name"] == "t-1"
    assert listing.headers["mcp-method"] == "tools/list" and "mcp-name" not in listing.headers
    assert call.headers["mcp-name"] == "weather"
    assert call.headers["mcp-param-region"] == "=?base64?WsO8cmljaA==?="
    assert call.headers["mcp-param-days"] == "3" and call.headers["mcp-param-metric"] == "true"
    assert read.headers["mcp-method"] == "resources/read" and read.headers["mcp-name"] == "file:///a b"
    assert server.of("GET") == [] and server.of("DELETE") == []


# ----------------------------------------------------------- TLS


async def test_https_with_a_given_ssl_context(nursery: trio.Nursery, tmp_path: Any) -> None:
    server_ctx, client_ctx = _certificates(tmp_path)
    server = await start(nursery, mcp_handler(), ssl_context=server_ctx)
    assert server.url.startswith("https://")
    async with open_http_client(server.url, ssl_context=client_ctx, listen=False) as channel:
        await handshake(channel)
        for i in range(1, 4):
            await channel.send(request(i, "ping"))
            assert (await receive_json(channel))["id"] == i
        assert channel._pool.opened == 1
    # without trusting the CA the handshake fails, and the request says why
    async with open_http_client(server.url) as channel:
        await channel.send(request(1, "ping"))
        reply = await receive_json(channel)
        assert transport_error(reply)["reason"] == "connect"
        assert "CERTIFICATE_VERIFY_FAILED" in reply["error"]["message"]


# ----------------------------------------------------------- legacy HTTP+SSE


def legacy_handler(endpoint: str = "/messages?sid=1") -> tuple[Handler, list[Any]]:
    """A minimal 2024-11-05 server: GET /sse streams, POST /messages answers on it."""
    streams: list[Any] = []
    outbox_send, outbox_recv = trio.open_memory_channel[Any](16)

    async def handler(req: Request, conn: Conn) -> None:
        if req.method == "GET" and req.target == "/sse":
            await conn.start_sse()
            await conn._send(h11.Data(data=encode_event(endpoint, event="endpoint")))
            streams.append(conn)
            async for msg in outbox_recv:
                if msg is None:
                    await conn.end()
                    return
                await conn.event(msg)
        elif req.method == "POST" and req.target.startswith("/messages"):
            await conn.respond(202, b"Accepted")
            body = req.json
            if body.get("method") == "initialize":
                res = {
                    "protocolVersion": body["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "legacy", "version": "0"},
                }
                await outbox_send.send({"jsonrpc": "2.0", "id": body["id"], "result": res})
            elif "id" in body and "method" in body:
                await outbox_send.send(tool_result(req, "legacy says hi"))
        else:
            await conn.respond(404, b"not here")

    return handler, [outbox_send]


async def test_legacy_sse_client(nursery: trio.Nursery) -> None:
    handler, (outbox,) = legacy_handler()
    server = await start(nursery, handler)
    url = f"http://127.0.0.1:{server.port}/sse"
    async with open_legacy_sse_client(url) as channel:
        assert channel.transport == "sse"
        async with open_session(channel, role="client", info=INFO, versions=["2024-11-05"]) as session:
            with trio.fail_after(5):
                assert await session.connect() == "2024-11-05"
                res = await session.request("tools/call", {"name": "x"})
                assert res.content[0].text == "legacy says hi"
                await outbox.send(None)  # the server ends the stream: the channel ends
                await session.closed.wait()
    posts = server.of("POST")
    assert {p.target for p in posts} == {"/messages?sid=1"}
    assert [p.rpc_method for p in posts] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]


async def test_legacy_fallback_after_a_refused_initialize(nursery: trio.Nursery) -> None:
    handler, _ = legacy_handler()
    server = await start(nursery, handler)
    url = f"http://127.0.0.1:{server.port}/sse"
    async with open_http_client(url, legacy_fallback=True) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5):
                assert await session.connect() == VERSION
                res = await session.request("tools/call", {"name": "x"})
        assert channel.transport == "sse"
    assert res.content[0].text == "legacy says hi"
    first = server.requests[0]
    assert (first.method, first.target, first.rpc_method) == ("POST", "/sse", "initialize")


async def test_no_fallback_when_turned_off(nursery: trio.Nursery) -> None:
    handler, _ = legacy_handler()
    server = await start(nursery, handler)
    url = f"http://127.0.0.1:{server.port}/sse"
    async with open_http_client(url, legacy_fallback=False) as channel:
        async with open_session(channel, role="client", info=INFO, versions=[VERSION]) as session:
            with trio.fail_after(5), pytest.raises(McpError) as info:
                await session.connect()
    assert info.value.data["status"] == 404
    assert channel.transport == "streamable-http"


async def test_legacy_endpoint_on_another_origin_is_refused(nursery: trio.Nursery) -> None:
    handler, _ = legacy_handler("http://evil.invalid/messages")
    server = await start(nursery, handler)
    with trio.fail_after(5), pytest.raises(ConnectionError, match="another origin"):
        async with open_legacy_sse_client(f"http://127.0.0.1:{server.port}/sse"):
            pass  # pragma: no cover


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="http"):
        HTTPClientChannel("ftp://127.0.0.1/x")
    with pytest.raises(ValueError, match="sets the 'Mcp-Session-Id' header itself"):
        HTTPClientChannel("http://127.0.0.1/x", headers={"Mcp-Session-Id": "x"})
