"""The official SDK's low-level server (``mcp.server.lowlevel.Server``) with echo and sleep.

Run with ``python benchmarks/peers/sdk_lowlevel.py stdio`` or ``... http PORT [--json]``
(uvicorn, as ``MCPServer.run("streamable-http")`` does).  ``--stateless`` serves the SDK's
stateless mode (``stateless_http=True``: no sessions, a fresh transport per request), and
``--workers N`` runs it in N uvicorn worker processes sharing the port (``uvicorn --workers``:
the app is then built in each worker by :func:`app_from_environment`).
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio  # noqa: E402
import mcp_types as types  # noqa: E402
from _args import parse  # noqa: E402
from mcp.server.lowlevel import Server  # noqa: E402
from mcp.server.stdio import stdio_server  # noqa: E402

TOOLS = [
    types.Tool(
        name="echo",
        description="Return the text unchanged.",
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    ),
    types.Tool(
        name="sleep",
        description="Sleep for ms milliseconds.",
        input_schema={
            "type": "object",
            "properties": {"ms": {"type": "number"}},
            "required": ["ms"],
        },
    ),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "echo":
        return types.CallToolResult(content=[types.TextContent(text=str(args["text"]))])
    if params.name == "sleep":
        await anyio.sleep(float(args["ms"]) / 1000)
        return types.CallToolResult(content=[types.TextContent(text="slept")])
    return types.CallToolResult(
        content=[types.TextContent(text=f"Unknown tool: {params.name}")], is_error=True
    )


server = Server("bench-sdk-lowlevel", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


#: How :func:`app_from_environment` builds the app in each uvicorn worker: "json,stateless,HOST".
APP_ENV = "BENCH_SDK_LOWLEVEL_APP"


def app_from_environment() -> Any:
    """The Streamable HTTP app as :data:`APP_ENV` describes it (uvicorn's factory, per worker)."""
    json_response, stateless, host = os.environ[APP_ENV].split(",", 2)
    return server.streamable_http_app(
        json_response=json_response == "1", stateless_http=stateless == "1", host=host
    )


def main() -> None:
    args = parse(scaling=True)
    if args.transport == "stdio":
        anyio.run(serve_stdio)
        return
    import uvicorn

    if args.workers == 1 and not args.stateless:
        app = server.streamable_http_app(json_response=args.json, host=args.host)
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
        return
    os.environ[APP_ENV] = f"{int(args.json)},{int(args.stateless)},{args.host}"
    uvicorn.run(
        "sdk_lowlevel:app_from_environment",
        factory=True,
        workers=args.workers,
        host=args.host,
        port=args.port,
        log_level="warning",
    )


if __name__ == "__main__":
    main()
