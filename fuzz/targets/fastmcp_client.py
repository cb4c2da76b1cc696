"""A client written with FastMCP (PyPI ``fastmcp``), for ``mcp-trio fuzz --client``.

The fuzzer appends its server's URL (or, after ``--stdio``, the command of a stdio server).  The
client lists and calls what a typical client does (tools, resources, prompts, a ping), printing
each call's error and going on; the exit status is 0 when the session itself ended normally and 1
when it broke.  Run from the environment of ``python -m fuzz.campaigns`` (``fastmcp`` pinned in
``fuzz/requirements.txt``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _client_cli import CALL_TIMEOUT, call_each, main  # noqa: E402
from fastmcp import Client  # noqa: E402
from fastmcp.client.transports import StdioTransport  # noqa: E402


async def run(server: list[str]) -> None:
    """``server``: ``[URL]``, or a stdio server's command line."""
    target: Any = (
        server[0]
        if len(server) == 1 and "://" in server[0]
        else StdioTransport(command=server[0], args=server[1:])
    )
    async with Client(target, timeout=CALL_TIMEOUT) as client:
        await call_each(
            [
                ("ping", client.ping),
                ("tools/list", client.list_tools),
                ("tools/call", lambda: client.call_tool("echo", {"text": "hi"}, raise_on_error=False)),
                ("resources/list", client.list_resources),
                ("resources/read", lambda: client.read_resource("fuzz://greeting")),
                ("prompts/list", client.list_prompts),
            ]
        )


if __name__ == "__main__":
    sys.exit(main(run, "fastmcp_client.py"))
