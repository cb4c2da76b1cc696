"""A small MCP server written with the official Python SDK's high-level API (``MCPServer``).

It is a fuzz target for ``mcp-trio fuzz`` (see ``docs/fuzz-findings.md``): two tools, a resource
and a prompt, nothing else. Run it with the venv that has the ``test`` extra (``mcp`` is pinned
there)::

    .venv/bin/mcp-trio fuzz --stdio ".venv/bin/python fuzz/targets/python_sdk_server.py" \
        --revision 2025-11-25 --max-examples 60 --timeout 3 --seed 1 --out /tmp/fuzz-sdk

With ``--http PORT`` it serves Streamable HTTP on ``http://127.0.0.1:PORT/mcp`` instead (the SDK's
defaults: sessions, SSE answers, its DNS-rebinding protection for a localhost host)::

    .venv/bin/python fuzz/targets/python_sdk_server.py --http 8765 &
    .venv/bin/mcp-trio fuzz --http http://127.0.0.1:8765/mcp --campaign http --campaign stateful ...
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

server: MCPServer[Any] = MCPServer("fuzz-target-python-sdk", version="1.0.0", log_level="ERROR")


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.resource("fuzz://greeting")
def greeting() -> str:
    """A fixed text resource."""
    return "hello"


@server.prompt()
def summarize(text: str) -> str:
    """Ask for a summary of the text."""
    return f"Summarize: {text}"


if __name__ == "__main__":
    import sys

    if "--http" in sys.argv:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run("stdio")
