"""A gateway served over Streamable HTTP with its metrics: each backend's requests, by method and
outcome, whether its session is up, its reconnections (port 0: the system picks a free port).

Served from a file the same way: ``mcp-trio serve gateway.toml --http 127.0.0.1:8000
--metrics-path /metrics`` (``--workers 2 --store redis://...``: each worker its own backends).
"""

import sys
import urllib.request
from functools import partial
from pathlib import Path

import trio

from mcp_trio import McpError
from mcp_trio.client import connect_http
from mcp_trio.proxy import Backend, gateway

FIRST = [sys.executable, str(Path(__file__).resolve().parent / "first_server.py")]
front = gateway({"math": Backend(FIRST, timeout=10), "notes": Backend(FIRST)})


async def main() -> None:
    async with trio.open_nursery() as nursery:
        serve = partial(front.serve_http, "127.0.0.1", 0, metrics_path="/metrics")
        (url,) = await nursery.start(serve)
        async with connect_http(url) as client:
            for a in range(3):
                await client.call_tool("math_add", {"a": a, "b": 1})
            try:
                await client.call_tool("notes_subtract", {"a": 1, "b": 1})
            except McpError as error:  # (the backend's own answer, passed on)
                print("notes_subtract:", error.code, error.message)
        scrape = partial(urllib.request.urlopen, url.replace("/mcp", "/metrics"), timeout=10)
        with await trio.to_thread.run_sync(scrape) as response:
            for line in response.read().decode().splitlines():
                if line.startswith(("mcp_upstream_requests", "mcp_upstream_up", "mcp_upstream_reconn")):
                    print(line)
        nursery.cancel_scope.cancel()


trio.run(main)
