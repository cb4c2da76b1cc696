"""Middleware around every request: a custom one, the shipped access log, timing and rate limit.

The server and its client run in one program over an in-memory pair (the same happens over
stdio, HTTP or WebSocket). The first middleware listed is the outermost.
"""

import logging
import sys

import trio

from mcp_trio import INVALID_PARAMS, McpError
from mcp_trio.client import connect_server
from mcp_trio.middleware import AccessLog, CallNext, RateLimit, RequestInfo, Result, Timing
from mcp_trio.server import Server


class ReadOnly:
    """Refuses the tools whose name says they write; passes everything else on."""

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        if request.method == "tools/call" and request.name and request.name.startswith("delete_"):
            raise McpError(INVALID_PARAMS, f"{request.name} is disabled: this server is read-only")
        return await call_next(request)


# The access log is off until its logger lets INFO through; here its lines go to stdout,
# with the fields each record carries (the duration left out: it differs from run to run).
access = logging.getLogger("mcp_trio.access")
access.setLevel(logging.INFO)
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(
    logging.Formatter("access: %(mcp_method)s %(mcp_name)s id=%(mcp_request_id)s %(mcp_outcome)s")
)
access.addHandler(handler)

timing = Timing()
server = Server("middleware-demo", "1.0", middleware=[AccessLog(), timing, ReadOnly()])
server.add_middleware(RateLimit(rate=0.1, burst=3, methods={"tools/call"}))  # innermost


@server.tool
async def lookup(key: str) -> str:
    """Reads a value."""
    return f"value of {key}"


@server.tool
async def delete_everything() -> str:
    """Never runs here."""
    return "gone"


async def main() -> None:
    async with connect_server(server) as client:
        print((await client.call_tool("lookup", {"key": "a"})).content[0].text)
        for tool, arguments in [
            ("delete_everything", {}),
            ("lookup", {"key": "b"}),
            ("lookup", {"key": "c"}),
            ("lookup", {"key": "d"}),
        ]:
            try:
                await client.call_tool(tool, arguments)
            except McpError as exc:
                print(f"{tool}: error {exc.code}: {exc.message.split(':')[0]}")
    calls = timing.stats()["tools/call"]
    print(f"timing: {calls.count} tools/call, {calls.errors} refused")


trio.run(main)
