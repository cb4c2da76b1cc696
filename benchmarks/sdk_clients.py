"""Each implementation's own client against its own server: what users of each one feel.

Usage::

    python -m benchmarks.sdk_clients KIND stdio DURATION -- SERVER-COMMAND...
    python -m benchmarks.sdk_clients KIND http DURATION URL

``KIND`` is ``ours`` (``mcp_trio.client``, on trio), ``sdk`` (the official
SDK's ``mcp.Client``, handshake mode, no cache) or ``fastmcp``
(``fastmcp.Client``).  For stdio the client launches the server itself.  It
connects, calls ``echo`` for ``DURATION`` seconds after a short warm-up,
checks every answer, and prints one JSON line: ``{"calls", "elapsed",
"p50_ms", "p99_ms"}``.  Each kind runs on its own event loop in its own
process, so the asyncio ones never meet trio.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

TEXT = "hello"
WARMUP = 0.2


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def _loop(call: Callable[[], Awaitable[Any]], duration: float) -> dict[str, float]:
    clock = time.perf_counter
    end = clock() + WARMUP
    while clock() < end:
        if _text(await call()) != TEXT:
            raise RuntimeError("wrong answer")
    latencies = []
    start = clock()
    end = start + duration
    while True:
        t0 = clock()
        result = await call()
        t1 = clock()
        if _text(result) != TEXT:
            raise RuntimeError(f"wrong answer: {result!r}")
        latencies.append(t1 - t0)
        if t1 >= end:
            break
    elapsed = clock() - start
    latencies.sort()
    return {
        "calls": len(latencies),
        "elapsed": elapsed,
        "p50_ms": latencies[len(latencies) // 2] * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
    }


async def _ours(transport: str, target: list[str], duration: float) -> dict[str, float]:
    from mcp_trio.client import connect_http, connect_stdio

    if transport == "stdio":
        connection = connect_stdio(target[0], *target[1:], name="bench")
    else:
        connection = connect_http(target[0], name="bench")
    async with connection as client:
        return await _loop(lambda: client.call_tool("echo", {"text": TEXT}), duration)


async def _sdk(transport: str, target: list[str], duration: float) -> dict[str, float]:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    server: Any = target[0]
    if transport == "stdio":
        server = StdioServerParameters(command=target[0], args=target[1:])
    async with Client(server, mode="legacy", cache=None) as client:
        return await _loop(lambda: client.call_tool("echo", {"text": TEXT}), duration)


async def _fastmcp(transport: str, target: list[str], duration: float) -> dict[str, float]:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport, StreamableHttpTransport

    if transport == "stdio":
        connection: Any = StdioTransport(target[0], target[1:])
    else:
        connection = StreamableHttpTransport(target[0])
    async with Client(connection) as client:
        return await _loop(lambda: client.call_tool("echo", {"text": TEXT}), duration)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 4 or args[1] not in ("stdio", "http"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, transport, duration = args[0], args[1], float(args[2])
    target = args[3:]
    if target[:1] == ["--"]:
        target = target[1:]
    if kind == "ours":
        import trio

        result = trio.run(_ours, transport, target, duration)
    elif kind in ("sdk", "fastmcp"):
        import anyio

        result = anyio.run(_sdk if kind == "sdk" else _fastmcp, transport, target, duration)
    else:
        print(f"unknown client kind {kind!r}", file=sys.stderr)
        return 2
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
