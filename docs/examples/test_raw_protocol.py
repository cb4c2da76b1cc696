"""How a server answers what a client really sends, broken messages included: mcp_trio.testing's
raw JSON-RPC peer (run with pytest and pytest-trio, ``trio_mode = true``)."""

from mcp_trio.server import Server
from mcp_trio.testing import serve_raw

server = Server("demo", "1.0")


@server.tool
async def add(a: int, b: int = 2) -> int:
    "Add two numbers."
    return a + b


async def test_a_call_and_a_broken_message():
    async with serve_raw(server) as peer:
        await peer.initialize()  # initialize, then notifications/initialized
        answer = await peer.request("tools/call", {"name": "add", "arguments": {"a": 40}})
        assert answer["result"]["structuredContent"] == {"result": 42}

        await peer.send(b'{"jsonrpc": "2.0", "id": 7, "method": ')  # not even JSON
        assert (await peer.receive())["error"]["code"] == -32700  # Parse error

        assert (await peer.request("ping"))["result"] == {}  # and the session goes on
