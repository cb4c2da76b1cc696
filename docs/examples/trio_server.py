"""The comparison server, with mcp-trio."""

import trio

from mcp_trio.server import Context, Server

server = Server("notes")


@server.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool
async def count(n: int, ctx: Context) -> str:
    """Count to n, reporting progress."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"counted to {n}"


@server.resource("greeting://{name}")
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Hello, {name}!"


@server.prompt
def review(code: str) -> str:
    """Review a piece of code."""
    return f"Please review:\n{code}"


if __name__ == "__main__":
    trio.run(server.serve_stdio)
