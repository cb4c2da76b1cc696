"""The server the soak test attacks (tests/soak): the benchmarks' server (``echo(text)``, fast,
and ``sleep(ms)``, slow) with two more tools, one with a big answer."""

from __future__ import annotations

import gc
import sys

from benchmarks.echo_server import server

__all__ = ["server"]


@server.tool(structured_output=False)
async def blob(kb: int) -> str:
    """Return ``kb`` KiB of text (at most 8 MiB)."""
    return "x" * (min(kb, 8192) * 1024)


@server.tool(structured_output=False)
async def live_blocks() -> str:
    """After a full collection, the blocks Python's small-object allocator holds (the soak test
    reports them next to RSS: objects still alive, or memory the allocator keeps)."""
    gc.collect()
    return str(sys.getallocatedblocks())
