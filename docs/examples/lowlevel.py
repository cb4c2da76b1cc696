"""The low-level session API: handlers per method on one side, requests on the other."""

import trio

from mcp_trio import INVALID_PARAMS, McpError, open_memory_transport_pair, open_session

ECHO = {
    "name": "echo",
    "description": "Echo a text.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


async def list_tools(ctx, params):
    result = {"tools": [ECHO]}
    if ctx.version >= "2026-07-28":  # this revision's lists say how long they may be cached
        result |= {"ttlMs": 0, "cacheScope": "public"}
    return result


async def call_tool(ctx, params):
    # params is the revision's typed CallToolRequestParams, already validated
    if params.name != "echo":
        raise McpError(INVALID_PARAMS, f"Unknown tool: {params.name}")
    for step in (1, 2):
        await ctx.report_progress(step, 2)  # sent only if the caller asked for progress
    return {"content": [{"type": "text", "text": params.arguments["text"]}]}


async def run_server(channel):
    async with open_session(
        channel,
        role="server",
        info={"name": "echo", "version": "1.0"},
        capabilities={"tools": {}},
        request_handlers={"tools/list": list_tools, "tools/call": call_tool},
    ) as session:
        await session.closed.wait()  # until the client goes away


async def progress(done, total, message):
    print(f"  progress {done}/{total}")


async def main() -> None:
    for versions in (["2025-03-26"], None):  # an old revision, then the newest
        server_end, client_end = open_memory_transport_pair()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run_server, server_end)
            async with open_session(
                client_end, role="client", info={"name": "demo", "version": "1.0"}, versions=versions
            ) as session:
                version = await session.connect()  # probe 2026-07-28, else initialize
                tools = await session.request("tools/list")
                result = await session.request(
                    "tools/call",
                    {"name": "echo", "arguments": {"text": "hi"}},
                    timeout=10,
                    on_progress=progress,
                )
                print(
                    version,
                    session.peer_info["name"],
                    [t.name for t in tools.tools],
                    type(result).__name__,
                    result.content[0].text,
                )
                try:
                    await session.request("tools/call", {"name": "nope", "arguments": {}})
                except McpError as exc:
                    print("  error", exc.code, exc.message)


trio.run(main)
