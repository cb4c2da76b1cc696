"""A stdio MCP server on the low-level API, used by the stdio tests.

Tools: echo(text), sleep(seconds), progress(steps), crash(code), print(text).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import trio

from mcp_trio import McpError, RequestContext, open_session, open_stdio_server_channel


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}]}


async def call_tool(ctx: RequestContext, params: Any) -> Any:
    args = params.arguments if isinstance(params.arguments, dict) else {}
    name = params.name
    if name == "echo":
        return text(str(args.get("text", "")))
    if name == "sleep":
        await trio.sleep(float(args.get("seconds", 1000)))
        return text("slept")
    if name == "progress":
        steps = int(args.get("steps", 3))
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
            await trio.sleep(0.01)
        return text("done")
    if name == "crash":
        os._exit(int(args.get("code", 3)))
    if name == "print":
        print(args.get("text", "stray output"))  # must not reach the protocol stream
        return text("printed")
    raise McpError(-32602, f"Unknown tool: {name}")


async def list_tools(ctx: RequestContext, params: Any) -> Any:
    result: dict[str, Any] = {
        "tools": [
            {"name": n, "inputSchema": {"type": "object"}}
            for n in ("echo", "sleep", "progress", "crash", "print")
        ]
    }
    if ctx.version >= "2026-07-28":
        result.update(ttlMs=0, cacheScope="public")  # required from 2026-07-28 on
    return result


async def main() -> None:
    print("lowlevel_server starting", file=sys.stderr)
    async with open_stdio_server_channel(
        max_message_size=int(os.environ.get("MAX_MESSAGE_SIZE", 32 * 1024 * 1024))
    ) as channel:
        async with open_session(
            channel,
            role="server",
            info={"name": "lowlevel-test-server", "version": "1.0"},
            capabilities={"tools": {}},
            request_handlers={"tools/call": call_tool, "tools/list": list_tools},
        ) as session:
            await session.closed.wait()
    print("lowlevel_server exiting", file=sys.stderr)


if __name__ == "__main__":
    trio.run(main)
