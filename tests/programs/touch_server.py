"""A server (over stdio) whose resources a test changes at will: tool ``touch`` tells the
subscribers of a URI that it changed, ``exit`` ends the process at once (a lost upstream)."""

from __future__ import annotations

import os

import trio

from mcp_trio.server import Server

server = Server("touch", "1.0")


@server.resource("live://value", mime_type="text/plain")
def value() -> str:
    return str(os.getpid())


@server.tool
async def touch(uri: str) -> str:
    """Tell the subscribers of ``uri`` that it changed."""
    await server.notify_resource_updated(uri)
    return "touched"


@server.tool
def exit() -> str:
    """End the process at once."""
    os._exit(3)


if __name__ == "__main__":
    trio.run(server.serve_stdio)
