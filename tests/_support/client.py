"""A client connected to a server in memory, and a raw JSON-RPC peer that answers whatever a
test scripts (results the client must check or refuse)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypedDict

import msgspec
import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import Client, open_client
from mcp_trio.server import Server
from mcp_trio.transports import Frame


class Point(TypedDict):
    x: int
    y: int


def make_server() -> Server:
    server = Server("results", "1.0")

    @server.tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool
    def boom() -> str:
        raise ValueError("no")

    @server.tool
    def point() -> Point:
        return {"x": 1, "y": 2}

    @server.resource("test://note", mime_type="text/plain")
    def note() -> str:
        return "a note"

    @server.resource("test://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01"

    @server.prompt
    def plain(topic: str) -> str:
        """About a topic."""
        return f"talk about {topic}"

    @server.completion("plain", "topic")
    def topics(value: str, context_arguments: dict[str, str]) -> list[str]:
        return [t for t in ("trio", "tasks") if t.startswith(value)]

    return server


@asynccontextmanager
async def connected(version: str, server: Server | None = None, **options: Any) -> AsyncIterator[Client]:
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start((server or make_server()).serve_session, a)
        with trio.fail_after(10):
            async with open_client(b, versions=[version], **options) as client:
                yield client
        nursery.cancel_scope.cancel()


INIT_CAPS = {"tools": {}, "prompts": {}, "resources": {}}


async def raw_server(channel: Any, version: str, answer: Callable[[str, Any], Any]) -> None:
    """A peer that answers ``initialize`` and then whatever ``answer(method, params)`` gives."""
    while True:
        try:
            frame = await channel.receive()
        except (trio.EndOfChannel, trio.ClosedResourceError):
            return
        message = msgspec.json.decode(frame.data)
        if "id" not in message or "method" not in message:
            continue
        method = message["method"]
        if method == "initialize":
            result = {
                "protocolVersion": version,
                "capabilities": INIT_CAPS,
                "serverInfo": {"name": "raw", "version": "1"},
            }
        else:
            result = answer(method, message.get("params"))
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        await channel.send(Frame(msgspec.json.encode(reply)))


@asynccontextmanager
async def raw_peer(version: str, answer: Callable[[str, Any], Any], **options: Any) -> AsyncIterator[Client]:
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(raw_server, a, version, answer)
        with trio.fail_after(10):
            async with open_client(b, versions=[version], **options) as client:
                yield client
        nursery.cancel_scope.cancel()
