"""Drive a stdio MCP server with the official Python SDK's client; used by the interop tests.

Usage: sdk_client.py [--mode legacy|auto] [--sleep SECONDS] [--cancel-after SECONDS] -- CMD [ARG...]
       sdk_client.py [options] --url URL [--transport streamable|sse]

Launches CMD with the SDK's stdio client (or connects to URL with its Streamable HTTP or
legacy HTTP+SSE client), then: connects (``legacy``: the initialize handshake;
``auto``: the SDK's server/discover probe with its initialize fallback), pings, lists the tools,
calls ``echo``, calls ``progress`` with a progress callback, starts ``sleep`` and cancels the
calling scope after ``--cancel-after`` seconds (the SDK then sends ``notifications/cancelled``),
calls ``echo`` again, and waits until the cancelled sleep would have finished to see whether a
late answer for it still arrived. It prints ONE JSON line with what it observed and exits 0; on
any failure it prints the error to stderr and exits 1. The server's stderr is captured and
returned in the JSON (``server_stderr``). Runs on anyio (asyncio); never import it from trio.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import traceback
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import Implementation


class _LateResponses(logging.Handler):
    """Counts answers the SDK's dispatcher dropped because nobody waited for them any more."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "dropping response for unknown/late request id" in record.getMessage():
            self.count += 1


def _text(result: Any) -> str | None:
    for block in result.content:
        if getattr(block, "type", None) == "text":
            return str(block.text)
    return None


async def run(args: argparse.Namespace, errlog: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": args.mode}

    late = _LateResponses()
    dispatcher_log = logging.getLogger("mcp.shared.jsonrpc_dispatcher")
    dispatcher_log.addHandler(late)
    dispatcher_log.setLevel(logging.DEBUG)
    dispatcher_log.propagate = False

    t0 = time.monotonic()
    timings: dict[str, float] = {}
    out["timings"] = timings

    def mark(name: str) -> None:
        timings[name] = round(time.monotonic() - t0, 3)

    if args.url is None:
        command, *argv = args.command
        env = {k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ}
        params = StdioServerParameters(command=command, args=argv, env=env)
        transport: Any = stdio_client(params, errlog=errlog)
    elif args.transport == "sse":
        transport = sse_client(args.url)
    else:
        transport = streamable_http_client(args.url)
    info = Implementation(name="sdk-interop-client", version="1.0")
    async with Client(transport, mode=args.mode, client_info=info, cache=None) as client:
        mark("connected")
        session = client.session
        out["protocol_version"] = client.protocol_version
        server_info = client.server_info
        out["server_info"] = (
            None if server_info is None else server_info.model_dump(mode="json", exclude_none=True)
        )
        out["server_capabilities"] = client.server_capabilities.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )

        try:
            await session.send_ping()
            out["ping"] = "ok"
        except Exception as exc:  # reported, not fatal: ping is gone from 2026-07-28
            out["ping"] = f"{type(exc).__name__}: {exc}"

        tools = await session.list_tools()
        out["tools"] = [tool.name for tool in tools.tools]

        out["echo"] = _text(await session.call_tool("echo", {"text": "héllo ☃ from the SDK"}))

        progress: list[list[Any]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append([value, total, message])

        result = await session.call_tool("progress", {"steps": 4}, progress_callback=on_progress)
        out["progress_result"] = _text(result)
        out["progress"] = progress

        started = time.monotonic()
        with anyio.move_on_after(args.cancel_after) as scope:
            await session.call_tool("sleep", {"seconds": args.sleep})
        out["cancel_caught"] = scope.cancelled_caught
        out["cancel_elapsed"] = round(time.monotonic() - started, 3)
        out["cancelled_promptly"] = scope.cancelled_caught and out["cancel_elapsed"] < args.cancel_after + 1.0

        out["echo_after_cancel"] = _text(await session.call_tool("echo", {"text": "after"}))

        # Wait past the moment the cancelled sleep would have answered: a server that ignored
        # notifications/cancelled would send a late answer, which the dispatcher drops and logs.
        await anyio.sleep(max(0.0, started + args.sleep + 0.3 - time.monotonic()))
        out["echo_after_wait"] = _text(await session.call_tool("echo", {"text": "still here"}))
        out["late_responses"] = late.count
        mark("done")
    mark("closed")

    errlog.seek(0)
    out["server_stderr"] = errlog.read()[-4000:]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="legacy", help="legacy, auto, or a modern version")
    parser.add_argument("--sleep", type=float, default=1.0, help="seconds the cancelled sleep asks for")
    parser.add_argument("--cancel-after", type=float, default=0.3)
    parser.add_argument("--url", help="an HTTP server to connect to instead of CMD")
    parser.add_argument("--transport", choices=("streamable", "sse"), default="streamable")
    parser.add_argument("command", nargs="*", help="the server command line (after --)")
    args = parser.parse_args()
    if (args.url is None) == (not args.command):
        parser.error("give either --url or a server command")
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        try:
            out = anyio.run(run, args, errlog)
        except BaseException:
            traceback.print_exc()
            errlog.seek(0)
            print("--- server stderr ---\n" + errlog.read()[-4000:], file=sys.stderr)
            return 1
    print(json.dumps(out, ensure_ascii=False, sort_keys=True), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
