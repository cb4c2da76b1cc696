"""The server the soak test attacks (tests/soak): the benchmarks' server (``echo(text)``, fast,
and ``sleep(ms)``, slow) with three more: a big answer, its live memory and what it holds."""

from __future__ import annotations

import ctypes
import gc
import sys

from benchmarks.echo_server import server

__all__ = ["server"]


@server.tool(structured_output=False)
async def blob(kb: int) -> str:
    """Return ``kb`` KiB of text (at most 8 MiB)."""
    return "x" * (min(kb, 8192) * 1024)


@server.tool(structured_output=False)
async def live_memory() -> str:
    """After a full collection, what the process's allocator holds for live objects: the bytes
    in use on the C allocator (glibc's ``mallinfo2``, when ``mcp-trio serve`` runs on it), else
    the blocks of Python's small-object allocator.  The soak test reports it next to RSS: live
    objects, or memory the allocator keeps."""
    gc.collect()
    if sys.getallocatedblocks() == 0:  # not on pymalloc
        info = _mallinfo2()
        return f"{(info.uordblks + info.hblkhd) // 1024} KiB in use (glibc mallinfo2)"
    return f"{sys.getallocatedblocks()} blocks (sys.getallocatedblocks)"


@server.tool(structured_output=False)
async def held() -> str:
    """What the server holds now: its sessions open and its requests in flight, this call and
    its session among them ("SESSIONS REQUESTS").  The soak test reads the live memory once
    both are down to the asking one's."""
    statistics = server.statistics()
    return f"{statistics.sessions_open} {statistics.requests_in_flight}"


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2() -> _MallInfo2:
    function = ctypes.CDLL(None).mallinfo2
    function.restype = _MallInfo2
    return function()  # type: ignore[no-any-return]
