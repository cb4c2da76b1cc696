"""A client written with FastMCP (PyPI ``fastmcp``), for ``mcp-trio fuzz --client``.

The fuzzer appends its server's URL (or, after ``--stdio``, the command of a stdio server).  The
client lists and calls what a typical client does (tools, resources, prompts, a ping), printing
each call's error and going on; the exit status is 0 when the session itself ended normally and 1
when it broke.  Run from the environment of ``python -m fuzz.campaigns`` (``fastmcp`` pinned in
``fuzz/requirements.txt``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

CALL_TIMEOUT = 10.0


async def run(server: list[str]) -> None:
    target: Any = (
        server[0]
        if len(server) == 1 and "://" in server[0]
        else StdioTransport(command=server[0], args=server[1:])
    )
    async with Client(target, timeout=CALL_TIMEOUT) as client:
        calls: list[tuple[str, Any]] = [
            ("ping", client.ping),
            ("tools/list", client.list_tools),
            ("tools/call", lambda: client.call_tool("echo", {"text": "hi"}, raise_on_error=False)),
            ("resources/list", client.list_resources),
            ("resources/read", lambda: client.read_resource("fuzz://greeting")),
            ("prompts/list", client.list_prompts),
        ]
        for name, call in calls:
            try:
                with anyio.fail_after(CALL_TIMEOUT):
                    await call()
            except Exception as exc:  # the server's answer was refused: that is the client working
                print(f"{name}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)


def main() -> int:
    args = sys.argv[1:]
    server = args[args.index("--stdio") + 1 :] if "--stdio" in args else args[-1:]
    if not server:
        print("usage: fastmcp_client.py SERVER_URL | --stdio SERVER_COMMAND...", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")
    try:
        anyio.run(run, server)
    except BaseException as exc:  # the session broke: say how, exit 1
        print(f"session failed: {type(exc).__name__}: {exc!r}"[:2000], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
