"""A server whose tool tells which process answered, each client limited to 4 calls (a rate too
slow to refill during a test): ``mcp-trio serve --workers`` tests of shared buckets."""

from __future__ import annotations

import os

from mcp_trio.middleware import RateLimit
from mcp_trio.server import Server

server = Server("limited-server", "1.0", middleware=[RateLimit(rate=0.001, burst=4, methods={"tools/call"})])


@server.tool
def pid() -> str:
    """The id of the process serving this request."""
    return str(os.getpid())
