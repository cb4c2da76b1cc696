"""The mcp-trio server the benchmarks measure: two tools, ``echo(text)`` and ``sleep(ms)``.

Serve it over stdio or Streamable HTTP::

    mcp-trio serve benchmarks/echo_server.py
    mcp-trio serve benchmarks/echo_server.py --http 127.0.0.1:3001 [--front-door hypercorn]

Every peer in ``benchmarks/peers/`` offers the same two tools with the same
answers (one text block, no structured content), so the load generator sends
the same bytes to every server and gets answers of the same size back.
"""

from __future__ import annotations

import trio

from mcp_trio.server import Server

server = Server("bench-echo", "1.0")


@server.tool(structured_output=False)
async def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
async def sleep(ms: float) -> str:
    """Sleep for ``ms`` milliseconds, then answer "slept"."""
    await trio.sleep(ms / 1000)
    return "slept"


if __name__ == "__main__":
    trio.run(server.serve_stdio)
