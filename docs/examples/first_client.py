"""Launch first_server.py over stdio, list its tools, call one, read a resource."""

import sys

import trio

from mcp_trio.client import connect_stdio


async def main() -> None:
    async with connect_stdio(sys.executable, "first_server.py") as client:
        print("connected to", client.server_info["name"], "in", client.protocol_version)
        for tool in await client.list_all_tools():
            print(f"tool {tool.name}: {tool.description}")
        result = await client.call_tool("add", {"a": 2, "b": 3})
        print("add(2, 3) =", result.structuredContent["result"])
        read = await client.read_resource("greeting://Ada")
        print(read.contents[0].text)


trio.run(main)
