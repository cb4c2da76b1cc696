"""Engine tests' scaffolding: a server session whose handlers are stepped and recorded (``served``,
``Steps``, ``remembering``), one call over it, in-memory pipes, and the server's capabilities."""

from __future__ import annotations

import contextvars
import json
import os
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.lowlevel
import trio.testing

from mcp_trio import Frame, RequestContext, Session, new_session
from mcp_trio.transports._base import BufferedInput
from mcp_trio.transports.stdio import StreamChannel, _PipeStream

INFO = {"name": "t", "version": "1"}


INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": INFO},
}


class Steps(trio.abc.Instrument):
    """Counts task steps, so a test can tell whether two things happened in
    one, and the tasks started."""

    def __init__(self) -> None:
        self.count = 0
        self.spawned: list[str] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.spawned.append(task.name)


class RecordingPipe(_PipeStream):
    """A pipe end that notes the task step of each read and each atomic write."""

    def __init__(self, fd: int, steps: Steps, log: list[tuple[str, int, bytes]]) -> None:
        super().__init__(fd)
        self._steps = steps
        self._log = log

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = await super().receive_some(max_bytes)
        self._log.append(("read", self._steps.count, data))
        return data

    def send_all_nowait(self, data: bytes) -> None:
        super().send_all_nowait(data)
        self._log.append(("write", self._steps.count, data))


class Peer:
    """The test's side of the pipes: raw JSON lines."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd = write_fd
        self.reader = _PipeStream(read_fd)
        self.buffer = b""

    def send(self, *messages: dict[str, Any]) -> None:
        os.write(self.write_fd, b"".join(json.dumps(m).encode() + b"\n" for m in messages))

    async def receive(self) -> dict[str, Any]:
        with trio.fail_after(5):
            while b"\n" not in self.buffer:
                self.buffer += await self.reader.receive_some(65536)
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    async def answers(self, count: int) -> dict[Any, dict[str, Any]]:
        found: dict[Any, dict[str, Any]] = {}
        while len(found) < count:
            message = await self.receive()
            if "id" in message and "method" not in message:
                found[message["id"]] = message
        return found


@asynccontextmanager
async def served(
    handlers: dict[str, Any], steps: Steps | None = None, **options: Any
) -> AsyncIterator[tuple[Session, Peer, list[Any]]]:
    steps = steps or Steps()
    trio.lowlevel.add_instrument(steps)
    log: list[tuple[str, int, bytes]] = []
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    channel = StreamChannel(RecordingPipe(in_r, steps, log), RecordingPipe(out_w, steps, log))
    session = new_session(
        channel, role="server", info=INFO, capabilities={"tools": {}}, request_handlers=handlers, **options
    )
    peer = Peer(in_w, out_r)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(session.run)
            peer.send(INIT)
            assert (await peer.receive())["result"]["protocolVersion"] == "2025-11-25"
            peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield session, peer, log
            os.close(in_w)  # end of input: the session ends by itself
            with trio.fail_after(5):
                await session.closed.wait()
    finally:
        trio.lowlevel.remove_instrument(steps)
        await peer.reader.aclose()


def call(id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def remembering(var: contextvars.ContextVar[str], *, see_scope: bool = False) -> Any:
    """A ``tools/call`` handler that answers with what ``var`` holds, then sets
    it to the call's ``text`` (which no later request may see); ``see_scope``:
    it also reads ``ctx.cancel_scope``."""

    async def remember(ctx: RequestContext, params: Any) -> Any:
        seen = var.get()
        var.set(params.arguments["text"])
        if see_scope:
            ctx.cancel_scope  # noqa: B018 - only reading it
        return {"content": [{"type": "text", "text": seen}]}

    return remember


class Pipe(trio.abc.Channel[Frame]):
    """One end of an in-memory transport that logs every frame, with two knobs
    that shift where a cancellation lands in a handler:

    * ``send_delay``: checkpoints before each frame goes out (a slow pipe: the
      session's writer stays busy, so a handler's next send waits for room);
    * ``read_delay``: checkpoints between the arrival of a frame and its
      delivery, together with every frame that arrived meanwhile and with no
      checkpoint in between (as one read from a stdio pipe yields many lines).
    """

    def __init__(
        self, send: trio.MemorySendChannel[Frame], receive: trio.MemoryReceiveChannel[Frame]
    ) -> None:
        self._send = send
        self._receive = receive
        self._ahead: deque[Frame] = deque()
        self.log: list[tuple[str, Any]] = []
        self.send_delay = 0
        self.read_delay = 0

    async def send(self, value: Frame) -> None:
        self.log.append(("out", json.loads(value.data)))
        for _ in range(self.send_delay):
            await trio.lowlevel.checkpoint()
        await self._send.send(value)

    async def receive(self) -> Frame:
        if not self._ahead:
            self._ahead.append(await self._receive.receive())
            for _ in range(self.read_delay):
                await trio.lowlevel.checkpoint()
            while True:
                try:
                    self._ahead.append(self._receive.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    break
        frame = self._ahead.popleft()
        self.log.append(("in", json.loads(frame.data)))
        return frame

    async def aclose(self) -> None:
        await self._send.aclose()
        await self._receive.aclose()


class BufferedPipe(Pipe, BufferedInput):
    """A :class:`Pipe` that tells the session how many frames it holds (as stdio's channel does),
    so a request read last is handled in the reader's own task while a successor reads on."""

    def buffered(self) -> int:
        return len(self._ahead)


def pipe_pair(*, relay: bool = False) -> tuple[Pipe, Pipe]:
    """Two connected ends; with ``relay``, :class:`BufferedPipe` ends (the reader relay)."""
    a_send, b_receive = trio.open_memory_channel[Frame](64)
    b_send, a_receive = trio.open_memory_channel[Frame](64)
    kind = BufferedPipe if relay else Pipe
    return kind(a_send, a_receive), kind(b_send, b_receive)


SERVER_CAPS = {"tools": {}, "logging": {}, "prompts": {}}


def tool_result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}
