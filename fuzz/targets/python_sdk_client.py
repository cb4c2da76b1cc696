"""A client written with the official Python SDK (PyPI ``mcp``), for ``mcp-trio fuzz --client``.

The fuzzer appends its server's URL.  The client connects over Streamable HTTP (or, after
``--stdio``, launches the rest of the command line as its stdio server) with the
initialize handshake, answers sampling, elicitation and roots requests, then lists and calls
what a typical client does: tools, resources, prompts, the log level and a ping.  An error a
call gets back is printed and the next call goes on; the exit status is 0 when the session
itself ended normally and 1 when it broke.  Run it from an isolated install of ``mcp`` (see
``docs/fuzz-findings.md``), e.g.::

    mcp-trio fuzz --client "/tmp/sdk-venv/bin/python fuzz/targets/python_sdk_client.py" \\
        --max-examples 100 --timeout 3 --seed 1 --out /tmp/fuzz-sdk-client
    mcp-trio fuzz --client "/tmp/sdk-venv/bin/python fuzz/targets/python_sdk_client.py --stdio" \
        --client-transport stdio --max-examples 100 --timeout 3 --seed 1 --out /tmp/fuzz-sdk-stdio-client
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mcp_types as types  # noqa: E402
from _client_cli import CALL_TIMEOUT, call_each, main  # noqa: E402
from mcp.client.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402


async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="fuzz"), model="none"
    )


async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="decline")


async def roots(context: Any) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp", name="tmp")])


def _calls(client: Client) -> list[tuple[str, Callable[[], Awaitable[Any]]]]:
    return [
        ("tools/list", lambda: client.list_tools()),
        ("tools/call", lambda: client.call_tool("echo", {"text": "hi"})),
        ("resources/list", lambda: client.list_resources()),
        ("resources/read", lambda: client.read_resource("fuzz://greeting")),
        ("prompts/list", lambda: client.list_prompts()),
        ("prompts/get", lambda: client.get_prompt("summarize", {"text": "x"})),
        ("logging/setLevel", lambda: client.set_logging_level("info")),
        ("ping", lambda: client.send_ping()),
    ]


async def run(server: list[str]) -> None:
    """``server``: ``[URL]``, or a stdio server's command line."""
    target: Any = (
        server[0]
        if len(server) == 1 and "://" in server[0]
        else StdioServerParameters(command=server[0], args=server[1:])
    )
    async with Client(
        target,
        mode="legacy",
        client_info=types.Implementation(name="fuzz-target-python-sdk-client", version="1"),
        sampling_callback=sample,
        elicitation_callback=elicit,
        list_roots_callback=roots,
        read_timeout_seconds=CALL_TIMEOUT,
        cache=None,
    ) as client:
        await call_each(_calls(client))


if __name__ == "__main__":
    sys.exit(main(run, "python_sdk_client.py"))
