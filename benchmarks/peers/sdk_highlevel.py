"""The official SDK's high-level server (``mcp.server.mcpserver.MCPServer``) with echo and sleep.

Run with ``python benchmarks/peers/sdk_highlevel.py stdio`` or ``... http PORT [--json]``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio  # noqa: E402
from _args import parse  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402

server: MCPServer[Any] = MCPServer("bench-sdk-highlevel", version="1.0", log_level="WARNING")


@server.tool(structured_output=False)
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
async def sleep(ms: float) -> str:
    """Sleep for ms milliseconds."""
    await anyio.sleep(ms / 1000)
    return "slept"


def main() -> None:
    args = parse()
    if args.transport == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(json_response=args.json, host=args.host)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
