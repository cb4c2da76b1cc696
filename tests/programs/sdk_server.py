"""A stdio MCP server written with the official Python SDK (``mcp``), used by the interop tests.

Tools: echo(text), sleep(seconds), progress(steps).

Every inbound message is logged to stderr as one line ``sdk_server: <- {"method": ..., "id": ...,
"params": ...}`` (by a middleware; ``id`` is null for notifications), and a cancelled ``sleep`` logs
``sdk_server: sleep cancelled``, so a test can see what the server received. Runs on anyio
(asyncio); it must never be imported by the trio tests.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer


def log(message: str) -> None:
    print(f"sdk_server: {message}", file=sys.stderr, flush=True)


async def log_inbound(ctx: Any, call_next: Any) -> Any:
    entry = {"method": ctx.method, "id": ctx.request_id, "params": ctx.params}
    log("<- " + json.dumps(entry, default=str, sort_keys=True))
    return await call_next(ctx)


server: MCPServer[Any] = MCPServer(
    "sdk-test-server", version="2.3.0-interop", log_level="WARNING", middleware=[log_inbound]
)


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep for the given number of seconds."""
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        log("sleep cancelled")
        raise
    return "slept"


@server.tool()
async def progress(steps: int, ctx: Context) -> str:
    """Report progress 1..steps of steps, then return "done"."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i}")
        await anyio.sleep(0.01)
    return "done"


if __name__ == "__main__":
    log("starting")
    server.run("stdio")
    log("exiting")
