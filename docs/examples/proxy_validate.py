"""A proxy that checks what the server behind it says: a malformed answer is blocked, a second
answer to one request is counted, and the proxy's metrics say so."""

from typing import Any

import msgspec
import trio

from mcp_trio import McpError
from mcp_trio.client import connect
from mcp_trio.proxy import proxy
from mcp_trio.server import prometheus_text
from mcp_trio.transports import Frame, MessageChannel


class Sloppy:
    """A server written by hand, badly: `lookup` answers with content that is not a list, and
    `echo` answers twice."""

    async def serve_session(
        self, channel: MessageChannel, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        task_status.started()
        async for frame in channel:
            message = msgspec.json.decode(frame.data)
            if "id" not in message:
                continue
            method, params = message["method"], message.get("params", {})
            ok = {"content": [{"type": "text", "text": "ok"}]}
            answers: list[dict[str, Any]] = [{"error": {"code": -32601, "message": f"no {method}"}}]
            if method == "initialize":
                info = {"name": "sloppy", "version": "1"}
                answers = [
                    {
                        "result": {
                            "protocolVersion": "2025-06-18",
                            "capabilities": {"tools": {}},
                            "serverInfo": info,
                        }
                    }
                ]
            elif method == "tools/list":
                schema = {"type": "object"}
                answers = [
                    {"result": {"tools": [{"name": n, "inputSchema": schema} for n in ("lookup", "echo")]}}
                ]
            elif method == "tools/call" and params["name"] == "lookup":
                answers = [{"result": {"content": "sunny"}}]  # (content must be a list)
            elif method == "tools/call":
                answers = [{"result": ok}, {"result": ok}]  # (one request, two answers)
            for answer in answers:
                reply = {"jsonrpc": "2.0", "id": message["id"], **answer}
                await channel.send(Frame(msgspec.json.encode(reply)))


checked = proxy(Sloppy(), validate="count,result-schema=block")


async def main() -> None:
    async with connect(checked) as client:
        try:
            await client.call_tool("lookup", {"city": "Oslo"})
        except McpError as error:
            print(f"lookup: error {error.code}: {error.message.split(' (docs/')[0]}")
        print("echo:", (await client.call_tool("echo", {"text": "hi"})).text)
        await trio.sleep(0.1)  # (the second answer comes after the first)
    for line in prometheus_text(checked).splitlines():
        if line.startswith("mcp_validation"):
            print(line)


trio.run(main)
