"""The same echo server on mcp-trio's low-level session API (no ``Server``), for comparison.

``benchmarks/echo_server.py`` (the high-level :class:`~mcp_trio.server.Server`)
is what the targets measure; this one shows what the engine and transport
cost on their own: one ``tools/call`` handler that validates nothing beyond
what the session core does, like the SDK's low-level server.

Run with ``python benchmarks/echo_lowlevel.py``.
"""

from __future__ import annotations

from typing import Any

import trio

from mcp_trio import McpError, RequestContext, open_session, open_stdio_server_channel

TOOLS = {
    "tools": [
        {
            "name": "echo",
            "description": "Return the text unchanged.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
        {
            "name": "sleep",
            "description": "Sleep for ms milliseconds.",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "number"}},
                "required": ["ms"],
            },
        },
    ]
}


async def call_tool(ctx: RequestContext, params: Any) -> Any:
    args = params.arguments if isinstance(params.arguments, dict) else {}
    if params.name == "echo" and isinstance(args.get("text"), str):
        return {"content": [{"type": "text", "text": args["text"]}]}
    if params.name == "sleep" and isinstance(args.get("ms"), int | float):
        await trio.sleep(args["ms"] / 1000)
        return {"content": [{"type": "text", "text": "slept"}]}
    raise McpError(-32602, f"Unknown tool or bad arguments: {params.name}")


async def list_tools(ctx: RequestContext, params: Any) -> Any:
    return TOOLS


async def main() -> None:
    async with open_stdio_server_channel() as channel:
        async with open_session(
            channel,
            role="server",
            info={"name": "bench-echo-lowlevel", "version": "1.0"},
            capabilities={"tools": {}},
            request_handlers={"tools/call": call_tool, "tools/list": list_tools},
        ) as session:
            await session.closed.wait()


if __name__ == "__main__":
    trio.run(main)
