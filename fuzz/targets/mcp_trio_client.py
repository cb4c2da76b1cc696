"""A client written with mcp-trio, for ``mcp-trio fuzz --client`` (the URL is the last argument).

It connects over Streamable HTTP, answers sampling, elicitation and roots requests, then
lists and calls what a typical client does: tools, resources, prompts, a completion, the
log level and a ping.  An error a call gets back (a JSON-RPC error, a result that does not
decode, a timeout) is printed and the next call goes on; the exit status is 0 when the
session itself ended normally and 1 when it broke (the fuzzer reports that as a crash)::

    mcp-trio fuzz --client ".venv/bin/python fuzz/targets/mcp_trio_client.py" --max-examples 20

With ``--bare`` it declares no capability at all (no sampling, elicitation or roots handler),
which is what the ``capabilities`` campaign needs to send it requests it did not negotiate::

    mcp-trio fuzz --client ".venv/bin/python fuzz/targets/mcp_trio_client.py --bare" --campaign capabilities
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import trio

from mcp_trio.client import Client, connect_http

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


async def run(url: str, bare: bool = False) -> None:
    handlers: dict[str, Any] = {} if bare else {
        "sampling": sample, "elicitation": elicit, "roots": [{"uri": "file:///tmp", "name": "tmp"}]}
    async with connect_http(url, name="fuzz-target-mcp-trio-client", version="1", cache=False,
                            **handlers) as client:
        for name, call in _calls(client):
            try:
                await call()
            except Exception as exc:  # the server's answer was refused: that is the client working
                print(f"{name}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: mcp_trio_client.py [...] SERVER_URL", file=sys.stderr)
        return 2
    try:
        trio.run(run, sys.argv[-1], "--bare" in sys.argv[1:-1])
    except BaseException as exc:  # the session broke: say how, exit 1
        print(f"session failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
