"""What a session costs while nothing happens, and that the lean layout loses nothing.

A session has one nursery; its writer starts with the first frame queued; a
push transport (Streamable HTTP) feeds frames from its own tasks, so an idle
HTTP session is one parked task whose nursery holds no task at all.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from mcp_trio import (
    ConnectionClosed,
    RequestContext,
    new_session,
    open_memory_transport_pair,
    open_session,
)
from mcp_trio.server import Server
from mcp_trio.transports import Frame
from mcp_trio.transports.http.server import HttpRequest, StreamableHTTP

from ..transports.test_http_server import _Sink

INFO = {"name": "t", "version": "1"}
ACCEPT = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "host": "127.0.0.1",
}


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


async def test_new_session_runs_in_the_callers_task_and_starts_its_writer_on_demand() -> None:
    async def echo(ctx: RequestContext, params: Any) -> Any:
        return text(params.arguments["text"])

    a, b = open_memory_transport_pair()
    server = new_session(
        a, role="server", info=INFO, capabilities={"tools": {}}, request_handlers={"tools/call": echo}
    )
    async with trio.open_nursery() as nursery:
        assert await nursery.start(server.run) is server
        assert server._tasks is not None and not server._tasks.child_tasks  # no reader, no writer yet
        async with open_session(b, role="client", info=INFO) as client:
            await client.connect()
            result = await client.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
            assert result.content[0].text == "hi"
            # requests that never waited ran in run()'s own task, which still
            # reads (see test_reader_relay.py): the writer is the only child
            assert [t.name for t in server._tasks.child_tasks] == [
                "mcp_trio._engine._session.Session._writer"
            ]
        with trio.fail_after(5):
            await server.closed.wait()  # the client left: run() returns
    assert server.core.closed
    with pytest.raises(ConnectionClosed):
        await server.notify("notifications/message", {"level": "info", "data": "late"})


async def test_run_raises_a_failure_unwrapped() -> None:
    a, _b = open_memory_transport_pair()
    session = new_session(a, role="server", info=INFO)

    async def boom() -> None:
        raise KeyError("background")

    async def body() -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            session._tasks.start_soon(boom)  # a bug in the session's own tasks

    with pytest.raises(ExceptionGroup) as info:
        await body()
    [failure] = info.value.exceptions  # (the test's own nursery wraps it; run() does not)
    assert isinstance(failure, KeyError)
    assert session.closed.is_set()


async def test_closing_flushes_everything_queued_though_the_other_tasks_are_cancelled() -> None:
    # The writer shares the session's one nursery but outlives its cancellation:
    # frames queued before the close still reach a slow peer, then EOF.
    a, b = open_memory_transport_pair(buffer=8)
    async with open_session(a, role="server", info=INFO, capabilities={"logging": {}}) as server:
        await b.send(Frame(_init()))
        assert msgspec.json.decode((await b.receive()).data)["id"] == 1
        await b.send(Frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
        with trio.fail_after(5):
            await server.initialized.wait()
        for i in range(100):  # 8 in the transport, the rest in the outbox
            await server.notify("notifications/message", {"level": "info", "data": i})
        assert server.statistics()["queued_frames"] > 50
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.aclose)
            got = []
            with trio.fail_after(5):
                while True:
                    try:
                        frame = await b.receive()
                    except (trio.EndOfChannel, trio.ClosedResourceError):
                        break
                    got.append(msgspec.json.decode(frame.data)["params"]["data"])
        assert got == list(range(100))


def _init(id: int = 1) -> bytes:
    return msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": INFO},
        }
    )


async def _open(endpoint: StreamableHTTP) -> dict[str, str]:
    sink = _Sink()
    await endpoint.handle(HttpRequest("POST", ACCEPT, _init()), sink)
    assert sink.status == 200, sink.body
    headers = {**ACCEPT, "mcp-session-id": sink.headers["mcp-session-id"]}
    done = _Sink()
    await endpoint.handle(
        HttpRequest("POST", headers, b'{"jsonrpc":"2.0","method":"notifications/initialized"}'), done
    )
    assert done.status == 202
    return headers


async def test_an_idle_http_session_is_one_parked_task_with_an_empty_nursery() -> None:
    server = Server("lean", "1")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        return text

    endpoint = StreamableHTTP(server.serve_session)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        sessions = [await _open(endpoint) for _ in range(5)]
        call = msgspec.json.encode(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "echo", "arguments": {"text": "x"}},
            }
        )
        sink = _Sink()
        await endpoint.handle(HttpRequest("POST", sessions[0], call), sink)
        assert msgspec.json.decode(sink.body)["result"]["content"][0]["text"] == "x"
        await trio.testing.wait_all_tasks_blocked()

        assert endpoint._nursery is not None
        session_tasks = list(endpoint._nursery.child_tasks)
        assert len(session_tasks) == 5
        for task in session_tasks:
            [session_nursery] = task.child_nurseries
            assert not session_nursery.child_tasks  # no reader, writer or handler left
        nursery.cancel_scope.cancel()


async def test_http_feeds_frames_that_came_before_the_engine_in_order_and_a_pull_engine_still_works() -> None:
    # A serve_session of one's own that reads with channel.receive() (no
    # attach_receiver) gets every frame, in order, and its answers go out.
    seen: list[Any] = []

    async def echo_engine(channel: Any) -> None:
        while True:
            try:
                frame = await channel.receive()
            except trio.EndOfChannel:
                return
            message = msgspec.json.decode(frame.data)
            seen.append(message.get("method"))
            if "id" in message:
                answer = {"jsonrpc": "2.0", "id": message["id"], "result": {"echo": message["method"]}}
                await channel.send(Frame(msgspec.json.encode(answer), message["id"], True))

    endpoint = StreamableHTTP(echo_engine)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        sink = _Sink()
        await endpoint.handle(HttpRequest("POST", ACCEPT, _init()), sink)
        assert msgspec.json.decode(sink.body)["result"] == {"echo": "initialize"}
        headers = {**ACCEPT, "mcp-session-id": sink.headers["mcp-session-id"]}
        for i in range(3):
            note = msgspec.json.encode({"jsonrpc": "2.0", "method": f"notifications/n{i}"})
            await endpoint.handle(HttpRequest("POST", headers, note), _Sink())
        sink = _Sink()
        ping = msgspec.json.encode({"jsonrpc": "2.0", "id": 7, "method": "ping"})
        await endpoint.handle(HttpRequest("POST", headers, ping), sink)
        assert msgspec.json.decode(sink.body) == {"jsonrpc": "2.0", "id": 7, "result": {"echo": "ping"}}
        assert seen == ["initialize", "notifications/n0", "notifications/n1", "notifications/n2", "ping"]
        sink = _Sink()
        await endpoint.handle(HttpRequest("DELETE", headers), sink)
        assert sink.status == 200
        assert endpoint.sessions == {}
        nursery.cancel_scope.cancel()


async def test_a_post_to_a_session_whose_engine_closed_its_input_gets_404() -> None:
    # The engine closed the channel (it is ending) but the HTTP layer has not
    # forgotten the session yet: a POST gets "Session not found", not silence.
    ended = trio.Event()

    async def closing_engine(channel: Any) -> None:
        frame = await channel.receive()
        message = msgspec.json.decode(frame.data)
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": {}}
        await channel.send(Frame(msgspec.json.encode(answer), message["id"], True))
        await channel.aclose()
        ended.set()
        await trio.sleep_forever()

    endpoint = StreamableHTTP(closing_engine)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        sink = _Sink()
        await endpoint.handle(HttpRequest("POST", ACCEPT, _init()), sink)
        headers = {**ACCEPT, "mcp-session-id": sink.headers["mcp-session-id"]}
        with trio.fail_after(5):
            await ended.wait()
        assert headers["mcp-session-id"] in endpoint.sessions  # not forgotten yet
        for body in (
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            b'{"jsonrpc":"2.0","id":2,"method":"ping"}',
        ):
            sink = _Sink()
            with trio.fail_after(5):
                await endpoint.handle(HttpRequest("POST", headers, body), sink)
            assert sink.status == 404, body
            assert msgspec.json.decode(sink.body)["error"]["message"] == "Session not found"
        nursery.cancel_scope.cancel()
