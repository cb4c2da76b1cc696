"""The Streamable HTTP server in process: running it on a door, raw JSON-RPC and SSE over HTTP,
and opening a session by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import h11
import httpx2 as httpx
import msgspec
import trio

from mcp_trio.server import Server
from mcp_trio.transports.http._sse import SSEDecoder
from mcp_trio.transports.http.server import (
    ASGIApp,
    StreamableHTTP,
    serve_h11,
    serve_hypercorn,
)

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


@asynccontextmanager
async def running(
    front_door: str, server: Server, **options: Any
) -> AsyncIterator[tuple[str, StreamableHTTP]]:
    endpoint = StreamableHTTP(server, **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        if front_door == "hypercorn":
            urls = await nursery.start(serve_hypercorn, ASGIApp(endpoint), "127.0.0.1", 0)
        else:
            urls = await nursery.start(partial(serve_h11, endpoint, "127.0.0.1", 0, parser=front_door))
        yield urls[0] + "/mcp", endpoint
        nursery.cancel_scope.cancel()


def rpc(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        message["id"] = id
    if params is not None:
        message["params"] = params
    return message


def init(version: str = "2025-11-25") -> dict[str, Any]:
    return rpc(
        0,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )


async def open_http_session(
    client: httpx.AsyncClient, url: str, version: str = "2025-11-25"
) -> dict[str, str]:
    r = await client.post(url, headers=ACCEPT, json=init(version))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    assert r.json()["result"]["protocolVersion"] == version
    headers = {**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": version}
    r = await client.post(url, headers=headers, json=rpc(None, "notifications/initialized"))
    assert r.status_code == 202 and r.content == b""
    return headers


class RawResponse:
    """A streaming HTTP/1.1 response read with h11 (closing it drops the connection)."""

    def __init__(self, stream: trio.SocketStream, conn: h11.Connection, response: h11.Response) -> None:
        self.stream = stream
        self.conn = conn
        self.status_code = response.status_code
        self.headers = {k.decode(): v.decode() for k, v in response.headers}

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.Data):
                yield bytes(event.data)
            else:
                return


@asynccontextmanager
async def raw_stream(
    url: str, method: str, headers: dict[str, str], json: Any = None
) -> AsyncIterator[RawResponse]:
    hostport, _, path = url.removeprefix("http://").partition("/")
    host, _, port = hostport.partition(":")
    body = msgspec.json.encode(json) if json is not None else b""
    stream = await trio.open_tcp_stream(host, int(port))
    try:
        conn = h11.Connection(h11.CLIENT)
        fields = [("host", hostport), ("content-length", str(len(body))), *headers.items()]
        await stream.send_all(conn.send(h11.Request(method=method, target="/" + path, headers=fields)))
        await stream.send_all(conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage()))
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Response):
                break
        yield RawResponse(stream, conn, event)
    finally:
        await stream.aclose()


def events(body: bytes) -> list[Any]:
    decoder = SSEDecoder()
    return [(e.id, msgspec.json.decode(e.data)) for e in decoder.feed(body)]


class _Sink:
    """A Responder that keeps what it is sent (for driving the endpoint directly)."""

    def __init__(self) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""

    async def start(self, status: int, headers: Any) -> None:
        self.status = status
        self.headers = dict(headers)

    async def send(self, data: bytes) -> None:
        self.body += data

    async def end(self) -> None:
        pass
