"""A stdio MCP server with one tool that runs as a task (used by tests/server/test_tasks.py)."""

from __future__ import annotations

import trio

from mcp_trio.server import Context, Server

server = Server("tasks-stdio", "1.0")


@server.tool(task_support="optional")
async def count(n: int, ctx: Context) -> str:
    """Count to n, slowly."""
    for i in range(n):
        await trio.sleep(0.01)
        await ctx.report_progress(i + 1, n)
    return f"counted to {n}"


if __name__ == "__main__":
    trio.run(server.serve_stdio)
