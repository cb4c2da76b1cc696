"""The WebSocket doors' connection limits, as the HTTP doors': connections past
``max_connections`` wait in the listen backlog, an open WebSocket is never evicted to make
room, connections that never finish their handshake are, and one address has its share.
Real servers and clients over loopback, on both doors."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_trio.client import connect_websocket
from mcp_trio.server import Server

DOORS = ["wsproto", "hypercorn"]
UPGRADE = (
    b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: mcp\r\n\r\n"
)


def make_server() -> Server:
    server = Server("ws-doors", "1")

    @server.tool
    async def echo(text: str) -> str:
        return text

    return server


@asynccontextmanager
async def serving(door: str, **limits: Any) -> AsyncIterator[tuple[str, int]]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: make_server().serve_websocket(
                "127.0.0.1", 0, front_door=door, task_status=task_status, **limits
            )
        )
        port = int(urls[0].rsplit(":", 1)[1].split("/")[0])
        yield urls[0], port
        nursery.cancel_scope.cancel()


async def connect_raw(port: int, source: str = "127.0.0.1") -> trio.socket.SocketType:
    sock = trio.socket.socket()
    await sock.bind((source, 0))
    await sock.connect(("127.0.0.1", port))
    return sock


@pytest.mark.parametrize("door", DOORS)
async def test_open_websockets_are_never_evicted_and_others_wait_in_the_backlog(door: str) -> None:
    async with serving(door, max_connections=4, max_connections_per_client=4) as (url, port):
        async with AsyncExitStack() as stack:
            clients = [
                await stack.enter_async_context(connect_websocket(url, versions=["2025-06-18"]))
                for _ in range(4)
            ]
            waiting = await connect_raw(port)
            await waiting.send(UPGRADE)
            with trio.move_on_after(1.5):  # (past any grace a slow request would have)
                assert not await waiting.recv(100), "answered past max_connections"
            for client in clients:  # every one still served
                assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"  # type: ignore[union-attr]
        with trio.fail_after(5):  # the clients left: the waiting one is served
            assert (await waiting.recv(100)).startswith(b"HTTP/1.1 101")
        waiting.close()


@pytest.mark.parametrize("door", DOORS)
async def test_connections_that_never_finish_a_handshake_never_block_a_client(door: str) -> None:
    async with serving(door, max_connections=8, max_connections_per_client=2) as (url, port):
        silent = [await connect_raw(port, f"127.0.0.{3 + i % 20}") for i in range(40)]
        await trio.sleep(0.3)
        with trio.fail_after(5):
            async with connect_websocket(url, versions=["2025-06-18"]) as client:
                assert (await client.call_tool("echo", {"text": "in"})).content[0].text == "in"  # type: ignore[union-attr]
        for sock in silent:
            sock.close()


@pytest.mark.parametrize("door", DOORS)
async def test_one_address_has_its_share_of_the_connections(door: str) -> None:
    async with serving(door, max_connections=8, max_connections_per_client=2) as (_, port):
        socks = [await connect_raw(port, "127.0.0.3") for _ in range(4)]
        with trio.fail_after(5):  # past its share, closed at once
            for sock in socks[2:]:
                assert await sock.recv(100) == b""
        for sock in socks:
            sock.close()
