"""What a session costs while nothing happens, and that the lean layout loses nothing.

A session has one nursery; its writer starts with the first frame queued; a
push transport (Streamable HTTP) feeds frames from its own tasks, so an idle
HTTP session is one parked task whose nursery holds no task at all (its handler
task, kept between requests, is swept away once the session has gone quiet).
"""

from __future__ import annotations

import gc
import weakref
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
from mcp_trio._engine import _idle
from mcp_trio._engine._idle import idle_sweep
from mcp_trio.server import Server
from mcp_trio.transports import Frame
from mcp_trio.transports.http.server import HttpRequest, StreamableHTTP
from tests._support.http_server import _Sink

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
        a,
        role="server",
        info=INFO,
        capabilities={"tools": {}},
        request_handlers={"tools/call": echo},
        reader_relay=True,
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
            assert [t.name for t in server._tasks.child_tasks] == ["mcp_trio._engine._writer.Writer.run"]
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


_HANDLER = "mcp_trio._engine._handlers.HandlerRunner.handle_request"  # the name of request handler tasks


class _Spawns(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


def _echo_endpoint() -> StreamableHTTP:
    server = Server("lean", "1")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        return text

    @server.tool(structured_output=False)
    async def nap(seconds: float) -> str:
        await trio.sleep(seconds)
        return "rested"

    return StreamableHTTP(server.serve_session)


def _call(id: int, name: str = "echo", **arguments: Any) -> bytes:
    arguments = arguments or {"text": str(id)}
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    )


async def _answer(endpoint: StreamableHTTP, headers: dict[str, str], body: bytes) -> Any:
    sink = _Sink()
    await endpoint.handle(HttpRequest("POST", headers, body), sink)
    return msgspec.json.decode(sink.body)["result"]["content"][0]["text"]


_SWEEP_TASK = "mcp_trio: idle handler sweep"


def _task_names() -> list[str]:
    """The names of the run's system tasks (the engine's sweep is one)."""
    root = trio.lowlevel.current_root_task()
    assert root is not None
    return [task.name for nursery in root.child_nurseries for task in nursery.child_tasks]


def _session_nurseries(endpoint: StreamableHTTP) -> list[trio.Nursery]:
    assert endpoint._nursery is not None
    nurseries = []
    for task in endpoint._nursery.child_tasks:
        [session_nursery] = task.child_nurseries
        nurseries.append(session_nursery)
    return nurseries


async def test_an_idle_http_session_is_one_parked_task_with_an_empty_nursery(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    # Between requests a session keeps the task that handled its last one, for
    # the next; once a sweep found it idle and the next one still does, it ends.
    monkeypatch.setattr(_idle, "SWEEP_EVERY", 0.05)
    endpoint = _echo_endpoint()
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        sessions = [await _open(endpoint) for _ in range(5)]
        assert await _answer(endpoint, sessions[0], _call(2)) == "2"
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(len(n.child_tasks) for n in _session_nurseries(endpoint)) == [0, 0, 0, 0, 1]
        assert len(idle_sweep().sessions) == 1
        assert _SWEEP_TASK in _task_names()

        await trio.sleep(0.2)  # (two sweeps at least)
        assert len(_session_nurseries(endpoint)) == 5
        for session_nursery in _session_nurseries(endpoint):
            assert not session_nursery.child_tasks  # no reader, writer or handler left
        assert not idle_sweep().sessions
        assert _SWEEP_TASK not in _task_names()  # the sweep ends with the last idle task
        assert await _answer(endpoint, sessions[0], _call(3)) == "3"  # a new one takes the next
        nursery.cancel_scope.cancel()


async def test_requests_one_after_another_are_handled_by_one_task() -> None:
    endpoint = _echo_endpoint()
    spawns = _Spawns()
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        headers = await _open(endpoint)
        trio.lowlevel.add_instrument(spawns)
        try:
            for id in range(2, 12):
                assert await _answer(endpoint, headers, _call(id)) == str(id)
            # A request that waits, then two at once: the kept task takes the
            # first, a task of its own the second, and both are answered.
            assert await _answer(endpoint, headers, _call(20, "nap", seconds=0.01)) == "rested"
            async with trio.open_nursery() as both:
                for id in (21, 22):
                    both.start_soon(_answer, endpoint, headers, _call(id, "nap", seconds=0.05))
        finally:
            trio.lowlevel.remove_instrument(spawns)
        assert spawns.names.count(_HANDLER) == 2
        nursery.cancel_scope.cancel()


async def test_a_request_taken_by_the_kept_task_can_be_cancelled() -> None:
    endpoint = _echo_endpoint()
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        headers = await _open(endpoint)
        assert await _answer(endpoint, headers, _call(2)) == "2"
        await trio.testing.wait_all_tasks_blocked()
        assert len(idle_sweep().sessions) == 1

        async def cancel_soon() -> None:
            await trio.sleep(0.05)
            cancel = b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}'
            await endpoint.handle(HttpRequest("POST", headers, cancel), _Sink())

        sink = _Sink()
        with trio.fail_after(5):
            async with trio.open_nursery() as both:
                both.start_soon(cancel_soon)
                await endpoint.handle(HttpRequest("POST", headers, _call(3, "nap", seconds=60)), sink)
        assert b"rested" not in sink.body  # cancelled: no answer
        assert await _answer(endpoint, headers, _call(4)) == "4"  # and the session goes on
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


class _Waiting:
    """A session's request runner whose handler task waits (for the sweep)."""

    def sweep_idle_handler(self) -> bool:
        return True


async def test_the_sweep_keeps_no_session_alive_after_its_end(autojump_clock: trio.testing.MockClock) -> None:
    # A session swept, then ended (discarded) while the sweep waits for its next
    # round, is freed at once, not a round later with all it holds.
    sweep = idle_sweep()
    first, second = _Waiting(), _Waiting()
    refs = [weakref.ref(first), weakref.ref(second)]
    sweep.add(first)
    sweep.add(second)
    await trio.sleep(_idle.SWEEP_EVERY * 1.5)  # (one sweep went over both; the next is due)
    assert _SWEEP_TASK in _task_names()
    sweep.discard(first)
    sweep.discard(second)
    del first, second
    gc.collect()
    assert [ref() for ref in refs] == [None, None]
    await trio.sleep(_idle.SWEEP_EVERY)
    assert _SWEEP_TASK not in _task_names()  # (and the sweep ends with the last one)
