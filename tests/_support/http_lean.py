"""The lean door at the socket: a server made and served in the test, requests posted raw, and a
reader of the answers and their streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import msgspec
import trio

from mcp_trio.server import Context, Server
from mcp_trio.transports.http.server import (
    ASGIApp,
    StreamableHTTP,
    serve_h11,
    serve_hypercorn,
)
from tests._support.doors import is_lean

VERSION = "2025-11-25"


def make_server() -> tuple[Server, dict[str, Any]]:
    server = Server("fast-paths", "1")
    state: dict[str, Any] = {"release": trio.Event(), "started": trio.Event(), "finished": trio.Event()}

    @server.tool
    async def echo(text: str) -> str:
        return text

    @server.tool
    async def big(size: int) -> str:
        return "x" * size

    @server.tool
    async def slow(seconds: float) -> str:
        await trio.sleep(seconds)
        return "slept"

    @server.tool
    async def gated() -> str:
        state["started"].set()
        await state["release"].wait()
        state["finished"].set()
        return "released"

    @server.tool
    async def quiet_poll(ctx: Context) -> str:
        """Ends its response stream before sending anything, then answers."""
        state["closed"] = await ctx.close_stream()
        await state["release"].wait()
        return "polled"

    @server.tool
    async def steps(n: int, ctx: Context) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n)
        return f"{n} steps"

    return server, state


@asynccontextmanager
async def serving(
    front_door: str, server: Server, h11_options: dict[str, Any] | None = None, **options: Any
) -> AsyncIterator[tuple[int, StreamableHTTP]]:
    endpoint = StreamableHTTP(server, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        if is_lean(front_door):
            urls = await nursery.start(
                partial(serve_h11, endpoint, "127.0.0.1", 0, parser=front_door, **(h11_options or {}))
            )
        else:
            urls = await nursery.start(serve_hypercorn, ASGIApp(endpoint), "127.0.0.1", 0)
        yield int(urls[0].rsplit(":", 1)[1]), endpoint
        nursery.cancel_scope.cancel()


def post(body: Any, session_id: str | None = None) -> bytes:
    data = body if isinstance(body, bytes) else msgspec.json.encode(body)
    head = [
        b"POST /mcp HTTP/1.1",
        b"host: 127.0.0.1",
        b"accept: application/json, text/event-stream",
        b"content-type: application/json",
        b"content-length: %d" % len(data),
        b"mcp-protocol-version: " + VERSION.encode(),
    ]
    if session_id is not None:
        head.append(b"mcp-session-id: " + session_id.encode())
    return b"\r\n".join(head) + b"\r\n\r\n" + data


def call(id: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


class Reader:
    """Reads whole HTTP/1.1 responses with a Content-Length or SSE bodies off one socket."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def _fill(self) -> None:
        data = await self.stream.receive_some(65536)
        if not data:
            raise EOFError("the server closed the connection")
        self.buffer += data

    async def response_head(self) -> tuple[int, dict[str, str], bytes]:
        """A response's status and headers (all of a ``HEAD`` answer)."""
        while (end := self.buffer.find(b"\r\n\r\n")) < 0:
            await self._fill()
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        del self.buffer[: end + 4]
        status = int(lines[0].split()[1])
        return status, {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}, b""

    async def response(self) -> tuple[int, dict[str, str], bytes]:
        status, headers, _ = await self.response_head()
        if "content-length" in headers:
            length = int(headers["content-length"])
            while len(self.buffer) < length:
                await self._fill()
            body = bytes(self.buffer[:length])
            del self.buffer[:length]
            return status, headers, body
        assert headers.get("transfer-encoding") == "chunked", headers
        return status, headers, b""

    async def chunk(self) -> bytes:
        """The next chunk of a chunked body (b"" at its end)."""
        while (end := self.buffer.find(b"\r\n")) < 0:
            await self._fill()
        size = int(bytes(self.buffer[:end]).split(b";")[0], 16)
        while len(self.buffer) < end + 2 + size + 2:
            await self._fill()
        data = bytes(self.buffer[end + 2 : end + 2 + size])
        del self.buffer[: end + 2 + size + 2]
        return data


async def open_session(port: int) -> tuple[trio.SocketStream, Reader, str]:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    reader = Reader(stream)
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    await stream.send_all(post(init))
    status, headers, body = await reader.response()
    assert status == 200, body
    session_id = headers["mcp-session-id"]
    await stream.send_all(post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id))
    status, _, _ = await reader.response()
    assert status == 202
    return stream, reader, session_id
