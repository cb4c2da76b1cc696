"""A server of ours with one tool and nothing else, for the capabilities campaign's tests.

It advertises ``tools`` only, so prompts, resources, completions, logging and tasks are all
capabilities a client must not use with it: ``python tools_only_server.py`` (stdio) or
``mcp-trio serve tests/fuzzing/tools_only_server.py --http 127.0.0.1:0``.
"""

from __future__ import annotations

import trio

from mcp_trio.server import Server

server = Server("tools-only", "1")


@server.tool()
async def echo(text: str) -> str:
    """Say it back."""
    return text


if __name__ == "__main__":
    trio.run(server.serve_stdio)
