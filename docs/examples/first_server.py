"""A first MCP server: one tool and one resource template."""

import trio

from mcp_trio.server import Server

server = Server("first", "1.0")


@server.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.resource("greeting://{name}", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting for someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    trio.run(server.serve_stdio)
