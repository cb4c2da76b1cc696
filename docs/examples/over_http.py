"""first_server.py's server over Streamable HTTP, then over WebSocket and HTTP on one port,
with a client for each, in one program (port 0: the system picks a free port)."""

from functools import partial

import trio
from first_server import server

from mcp_trio.client import connect_http, connect_websocket


async def main() -> None:
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(server.serve_http, "127.0.0.1", 0)
        async with connect_http(url) as client:
            result = await client.call_tool("add", {"a": 20, "b": 22})
            print("Streamable HTTP:", result.content[0].text)
        nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_websocket, "127.0.0.1", 0, http=True)
        ws_url, http_url = await nursery.start(serve)
        async with connect_websocket(ws_url) as client:
            result = await client.call_tool("add", {"a": 1, "b": 1})
            print("WebSocket:", result.content[0].text)
        async with connect_http(http_url) as client:
            result = await client.call_tool("add", {"a": 2, "b": 2})
            print("Streamable HTTP on the same port:", result.content[0].text)
        nursery.cancel_scope.cancel()


trio.run(main)
