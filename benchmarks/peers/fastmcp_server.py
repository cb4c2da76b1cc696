"""A FastMCP server with echo and sleep.

Run with ``python benchmarks/peers/fastmcp_server.py stdio`` or ``... http PORT [--json]``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio  # noqa: E402
from _args import parse  # noqa: E402
from fastmcp import FastMCP  # noqa: E402

server = FastMCP("bench-fastmcp")


@server.tool(output_schema=None)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(output_schema=None)
async def sleep(ms: float) -> str:
    """Sleep for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


def main() -> None:
    args = parse()
    if args.transport == "stdio":
        server.run("stdio", show_banner=False, log_level="WARNING")
        return
    server.run(
        "http",
        host=args.host,
        port=args.port,
        json_response=args.json,
        show_banner=False,
        log_level="WARNING",
    )


if __name__ == "__main__":
    main()
