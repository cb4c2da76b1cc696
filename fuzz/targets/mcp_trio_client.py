"""A client written with mcp-trio, for ``mcp-trio fuzz --client`` (the URL is the last argument).

It connects over Streamable HTTP (or, after ``--stdio``, launches the rest of the command
line as its stdio server), answers sampling, elicitation and roots requests, then
lists and calls what a typical client does: tools, resources, prompts, a completion, the
log level and a ping.  An error a call gets back (a JSON-RPC error, a result that does not
decode, a timeout) is printed and the next call goes on; the exit status is 0 when the
session itself ended normally and 1 when it broke (the fuzzer reports that as a crash)::

    mcp-trio fuzz --client ".venv/bin/python fuzz/targets/mcp_trio_client.py" --max-examples 20

Over stdio::

    mcp-trio fuzz --client ".venv/bin/python fuzz/targets/mcp_trio_client.py --stdio" --client-transport stdio

With ``--bare`` it declares no capability at all (no sampling, elicitation or roots handler),
which is what the ``capabilities`` campaign needs to send it requests it did not negotiate::

    mcp-trio fuzz --client ".venv/bin/python fuzz/targets/mcp_trio_client.py --bare" --campaign capabilities
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from mcp_trio.client import Client, connect_http, connect_stdio

CALL_TIMEOUT = 10.0


async def sample(params: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "fuzz"}, "model": "none"}


async def elicit(params: Any) -> dict[str, Any]:
    return {"action": "decline"}


def _calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    return [
        ("tools/list", lambda: client.list_tools(timeout=CALL_TIMEOUT)),
        ("tools/call", lambda: client.call_tool("echo", {"text": "hi"}, timeout=CALL_TIMEOUT)),
        ("resources/list", lambda: client.list_resources(timeout=CALL_TIMEOUT)),
        ("resources/read", lambda: client.read_resource("fuzz://greeting", timeout=CALL_TIMEOUT)),
        ("prompts/list", lambda: client.list_prompts(timeout=CALL_TIMEOUT)),
        ("prompts/get", lambda: client.get_prompt("summarize", {"text": "x"}, timeout=CALL_TIMEOUT)),
        ("logging/setLevel", lambda: client.set_log_level("info", timeout=CALL_TIMEOUT)),
        ("ping", lambda: client.ping(timeout=CALL_TIMEOUT)),
    ]


async def run(server: list[str], bare: bool = False) -> None:
    """``server``: ``[URL]``, or a stdio server's command line."""
    handlers: dict[str, Any] = (
        {}
        if bare
        else {"sampling": sample, "elicitation": elicit, "roots": [{"uri": "file:///tmp", "name": "tmp"}]}
    )
    options: dict[str, Any] = {"name": "fuzz-target-mcp-trio-client", "version": "1", **handlers}
    connected = (
        connect_http(server[0], cache=False, **options)
        if len(server) == 1 and "://" in server[0]
        else connect_stdio(server[0], *server[1:], **options)
    )
    async with connected as client:
        for name, call in _calls(client):
            try:
                await call()
            except Exception as exc:  # the server's answer was refused: that is the client working
                print(f"{name}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)


def main() -> int:
    args = sys.argv[1:]
    if "--stdio" in args:
        at = args.index("--stdio")
        options, server = args[:at], args[at + 1 :]
    else:
        options, server = args[:-1], args[-1:]
    if not server:
        print(
            "usage: mcp_trio_client.py [--bare] SERVER_URL | [--bare] --stdio SERVER_COMMAND...",
            file=sys.stderr,
        )
        return 2
    try:
        trio.run(run, server, "--bare" in options)
    except BaseException as exc:  # the session broke: say how, exit 1
        print(f"session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
