"""A proxy in front of a stdio server: first_server.py runs as a subprocess, and every request
the client sends the proxy is forwarded to it over one session, opened when the proxy starts.

The client sees the upstream's serverInfo, capabilities and revision; its results and errors
arrive untouched.  The proxy is an ordinary Server: served here in memory, it could as well be
served over Streamable HTTP (``server.serve_http``) or by ``mcp-trio serve``.
"""

import sys

import trio

from mcp_trio import McpError
from mcp_trio.client import connect
from mcp_trio.proxy import proxy

# What connect() takes: a command line, an http(s):// or ws(s):// URL, or a server object;
# and its options, here the revision to speak upstream (which the proxy then speaks itself).
front = proxy([sys.executable, "first_server.py"], versions=["2025-11-25"], timeout=30)


async def main() -> None:
    async with connect(front) as client:
        print("server:", client.server_info["name"], "speaking", client.protocol_version)
        print("tools:", [t.name for t in await client.list_all_tools()])
        print("add:", (await client.call_tool("add", {"a": 2, "b": 3})).structuredContent)
        greeting = await client.read_resource("greeting://Ada")
        print("read:", greeting.contents[0].text)  # type: ignore[union-attr]
        try:
            await client.call_tool("subtract", {"a": 2, "b": 3})
        except McpError as error:  # (the upstream's error, as it sent it)
            print("error:", error.code, error.message)


trio.run(main)
