"""Transports and their options: Streamable HTTP (stateless, JSON answers, the hypercorn front
door, the 2024-11-05 HTTP+SSE transport beside it) and WebSocket (the wsproto front door)."""

from functools import partial

import trio
from first_server import server

from mcp_trio.client import connect_http, connect_websocket, open_client
from mcp_trio.transports.http.client import open_legacy_sse_client


async def show(label: str, client) -> None:
    result = await client.call_tool("add", {"a": 1, "b": 2})
    print(f"{label}: {client.protocol_version}, add -> {result.content[0].text}")


async def main() -> None:
    # Stateless Streamable HTTP with JSON answers only: no sessions to keep, any process
    # behind a load balancer can answer; here an old revision on it
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, stateless=True, response_mode="json")
        (url,) = await nursery.start(serve)
        async with connect_http(url, versions=["2025-06-18"]) as client:
            await show("stateless HTTP", client)
        nursery.cancel_scope.cancel()

    # hypercorn (ASGI: HTTP/2, TLS) with the 2024-11-05 transport at /sse for old clients
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, front_door="hypercorn", legacy_sse=True)
        (url,) = await nursery.start(serve)
        async with connect_http(url, http_options={"headers": {"X-Team": "docs"}}) as client:
            await show("hypercorn", client)
        sse_url = url.removesuffix("/mcp") + "/sse"
        async with (
            open_legacy_sse_client(sse_url) as channel,
            open_client(channel, versions=["2024-11-05"]) as client,
        ):
            await show("HTTP+SSE", client)
        nursery.cancel_scope.cancel()

    # WebSocket on the lean wsproto front door (exact keepalive and close codes)
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_websocket, "127.0.0.1", 0, front_door="wsproto")
        (url,) = await nursery.start(serve)
        async with connect_websocket(url) as client:
            await show("WebSocket", client)
        nursery.cancel_scope.cancel()


trio.run(main)
