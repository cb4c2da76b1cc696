"""The server the soak test attacks (tests/soak): a fast tool, a slow one, one with a big answer."""

from __future__ import annotations

import trio

from mcp_trio.server import Server

server = Server("soak", "1.0")


@server.tool(structured_output=False)
async def fast(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(structured_output=False)
async def slow(ms: float) -> str:
    """Sleep for ``ms`` milliseconds (at most 10 s), then answer "slept"."""
    await trio.sleep(min(ms, 10_000) / 1000)
    return "slept"


@server.tool(structured_output=False)
async def blob(kb: int) -> str:
    """Return ``kb`` KiB of text (at most 8 MiB)."""
    return "x" * (min(kb, 8192) * 1024)
