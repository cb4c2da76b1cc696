"""A server whose one tool tells which process answered (``mcp-trio serve --workers`` tests)."""

from __future__ import annotations

import os

from mcp_trio.server import Server

server = Server("pid-server", "1.0")


@server.tool
def pid() -> str:
    """The id of the process serving this request."""
    return str(os.getpid())


@server.tool
async def nap(seconds: float) -> str:
    """Sleep, then tell which process answered."""
    import sys

    import trio

    print(f"nap started in {os.getpid()}", file=sys.stderr, flush=True)
    await trio.sleep(seconds)
    return str(os.getpid())
