"""The engine's direct answer: a lone answer written by its handler's task.

``HandlerRunner.write_now`` lets a handler write its answer through the transport's
synchronous ``send_nowait`` instead of waking the writer task, but only while
the writer is parked on an empty outbox and no other request is running.
These tests drive the engine over an in-memory transport whose server end has
such a ``send_nowait`` and records which path every message took, and check
the rules that make it safe: nothing overtakes a frame queued earlier,
concurrent answers still go through the writer, and a refused ``send_nowait``
loses nothing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from mcp_trio import RequestContext, open_session
from mcp_trio.transports._base import DirectOutput, Frame
from mcp_trio.transports.memory import MemoryChannel

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


class RecordingChannel(MemoryChannel, DirectOutput):
    """A memory channel with an all-or-nothing ``send_nowait``, like stdio's pipes.

    ``paths`` lists ``(path, message)`` in the order the messages were put on
    the wire; ``refuse`` makes ``send_nowait`` raise ``trio.WouldBlock``, and
    ``hold`` (when set) makes the writer's ``send`` wait until it is set.
    """

    def __init__(
        self, send: trio.MemorySendChannel[Frame], receive: trio.MemoryReceiveChannel[Frame]
    ) -> None:
        super().__init__(send, receive)
        self.paths: list[tuple[str, dict[str, Any]]] = []
        self.refuse = False
        self.hold: trio.Event | None = None

    def send_nowait(self, frame: Frame) -> None:
        if self.refuse:
            raise trio.WouldBlock
        self._send.send_nowait(frame)
        self.paths.append(("direct", json.loads(frame.data)))

    async def send(self, value: Frame) -> None:
        if self.hold is not None:
            await self.hold.wait()
        self.paths.append(("writer", json.loads(value.data)))
        await super().send(value)


@asynccontextmanager
async def serving(handlers: dict[str, Any]) -> AsyncIterator[tuple[MemoryChannel, RecordingChannel]]:
    """A server session on a recording channel, initialized; yields (client end, server end)."""
    a_send, b_recv = trio.open_memory_channel[Frame](64)
    b_send, a_recv = trio.open_memory_channel[Frame](64)
    client, server = MemoryChannel(a_send, a_recv), RecordingChannel(b_send, b_recv)
    async with open_session(
        server,
        role="server",
        info={"name": "s", "version": "1"},
        capabilities={"tools": {}, "logging": {}},
        request_handlers=handlers,
    ):
        await client.send(Frame(json.dumps(INIT).encode()))
        with trio.fail_after(5):
            await client.receive()
        await client.send(Frame(b'{"jsonrpc":"2.0","method":"notifications/initialized"}'))
        server.paths.clear()
        yield client, server
        await client.aclose()


def call(id: int, name: str, meta: dict[str, Any] | None = None) -> Frame:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if meta is not None:
        params["_meta"] = meta
    return Frame(json.dumps({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).encode())


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


async def receive(client: MemoryChannel) -> dict[str, Any]:
    with trio.fail_after(5):
        return json.loads((await client.receive()).data)


async def test_a_lone_answer_is_written_by_its_handler() -> None:
    async def tool(ctx: RequestContext, params: Any) -> Any:
        return text(params.name)

    async with serving({"tools/call": tool}) as (client, server):
        for i in range(1, 6):
            await client.send(call(i, f"t{i}"))
            answer = await receive(client)
            assert answer["id"] == i and answer["result"]["content"][0]["text"] == f"t{i}"
        assert [path for path, _ in server.paths] == ["direct"] * 5


async def test_what_the_handler_sent_first_arrives_first() -> None:
    # Progress and a notification queued for the writer before the answer:
    # the answer never overtakes them, whichever path it takes.
    async def tool(ctx: RequestContext, params: Any) -> Any:
        await ctx.report_progress(1.0)
        await ctx.notify("notifications/message", {"level": "info", "data": "x"})
        return text("done")

    async with serving({"tools/call": tool}) as (client, server):
        for i in range(1, 21):
            await client.send(call(i, "p", {"progressToken": f"tok{i}"}))
            got = [await receive(client) for _ in range(3)]
            assert [m.get("method") for m in got] == [
                "notifications/progress",
                "notifications/message",
                None,
            ]
            assert got[2]["id"] == i
        assert len(server.paths) == 60


async def test_no_direct_write_while_the_writer_is_busy() -> None:
    # The writer is stuck in a send: the next answer must wait behind it.
    release = trio.Event()

    async def tool(ctx: RequestContext, params: Any) -> Any:
        if params.name == "notify-first":
            await ctx.notify("notifications/message", {"level": "info", "data": "first"})
        return text(params.name)

    async with serving({"tools/call": tool}) as (client, server):
        server.hold = release
        await client.send(call(1, "notify-first"))
        await trio.testing.wait_all_tasks_blocked()
        await client.send(call(2, "second"))
        await trio.testing.wait_all_tasks_blocked()
        assert server.paths == []  # nothing passed the held writer
        server.hold = None
        release.set()
        got = [await receive(client) for _ in range(3)]
        assert got[0].get("method") == "notifications/message"
        assert {m.get("id") for m in got[1:]} == {1, 2}
        assert all(path == "writer" for path, _ in server.paths)


async def test_concurrent_answers_go_through_the_writer() -> None:
    # While other requests run, answers are queued (one write per burst).
    gate = trio.Event()

    async def tool(ctx: RequestContext, params: Any) -> Any:
        if params.name == "slow":
            await gate.wait()
        return text(params.name)

    async with serving({"tools/call": tool}) as (client, server):
        await client.send(call(1, "slow"))
        await client.send(call(2, "fast"))
        assert (await receive(client))["id"] == 2
        gate.set()
        assert (await receive(client))["id"] == 1
        paths = dict((m["id"], path) for path, m in server.paths)
        assert paths[2] == "writer"  # request 1 was still running
        assert paths[1] == "direct"  # the last one running, writer idle


async def test_a_refused_direct_write_loses_nothing() -> None:
    async def tool(ctx: RequestContext, params: Any) -> Any:
        return text(params.name)

    async with serving({"tools/call": tool}) as (client, server):
        server.refuse = True
        for i in range(1, 4):
            await client.send(call(i, f"t{i}"))
            assert (await receive(client))["id"] == i
        assert [path for path, _ in server.paths] == ["writer"] * 3


async def test_errors_and_automatic_replies_still_answer() -> None:
    async def tool(ctx: RequestContext, params: Any) -> Any:
        raise ValueError("boom")

    async with serving({"tools/call": tool}) as (client, server):
        await client.send(call(1, "x"))
        answer = await receive(client)
        assert answer["id"] == 1 and answer["error"]["code"] == -32603
        await client.send(Frame(b'{"jsonrpc":"2.0","id":2,"method":"ping"}'))
        assert await receive(client) == {"jsonrpc": "2.0", "id": 2, "result": {}}
        # The core's own answer (ping) is written at once too: nothing was queued.
        assert [path for path, _ in server.paths] == ["direct", "direct"]
        server.refuse = True
        await client.send(Frame(b'{"jsonrpc":"2.0","id":3,"method":"ping"}'))
        assert await receive(client) == {"jsonrpc": "2.0", "id": 3, "result": {}}
        assert [path for path, _ in server.paths][-1] == "writer"
