"""A client for the official MCP conformance suite's client mode.

The suite (``@modelcontextprotocol/conformance``) starts a mock server for each
scenario and runs this program with the server's URL as the last argument and
the scenario's name in ``MCP_CONFORMANCE_SCENARIO``::

    python examples/conformance_client.py http://localhost:PORT/mcp

What it does per scenario:

* ``initialize``: connect (initialize + initialized) and end;
* ``tools_call``: list the tools and call ``add_numbers`` with two numbers;
* ``elicitation-sep1034-client-defaults``: call
  ``test_client_elicitation_defaults`` and accept the server's form with the
  defaults its schema gives (:func:`mcp_trio.client.elicitation_defaults`);
* ``sse-retry``: call ``test_reconnection``, whose response stream the server
  closes before answering; the client waits the ``retry`` delay the server
  set, resumes with ``GET`` + ``Last-Event-ID`` and gets the answer there.

Any other scenario connects and lists the tools if the server has any.  The exit status is 0 when
the scenario's calls succeeded, 1 otherwise (with the reason on stderr).
"""

from __future__ import annotations

import os
import sys
from typing import Any

import trio

from mcp_trio.client import Client, connect_http, elicitation_defaults

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"


async def accept_defaults(params: Any) -> dict[str, Any]:
    """Accept a form elicitation with the defaults of its schema."""
    return {"action": "accept", "content": elicitation_defaults(params.requestedSchema)}


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    tools = {t.name for t in await client.list_all_tools()}
    if tool not in tools:
        raise RuntimeError(f"the server offers no tool {tool!r} (it has: {', '.join(sorted(tools)) or 'none'})")
    result = await client.call_tool(tool, arguments)
    print(f"{tool}: {_text(result)}", file=sys.stderr)
    if result.isError:
        raise RuntimeError(f"{tool} failed: {_text(result)}")


async def run(url: str, scenario: str) -> None:
    async with connect_http(
        url,
        name="mcp-trio-conformance-client",
        version="1.0.0",
        elicitation=accept_defaults,
    ) as client:
        print(f"connected: {client.session.protocol_version} {client.session.peer_info}", file=sys.stderr)
        if scenario == "tools_call":
            await _call(client, "add_numbers", {"a": 5, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            await _call(client, "test_client_elicitation_defaults", {})
        elif scenario == "sse-retry":
            await _call(client, "test_reconnection", {})
        elif "tools" in client.server_capabilities:
            await client.list_all_tools()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: conformance_client.py [...] SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get(SCENARIO_ENV, "initialize")
    try:
        trio.run(run, args[-1], scenario)
    except Exception as exc:  # the harness reads the exit status; say why on stderr
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
