"""The stdio ceiling: a trio program that writes every line of stdin back to stdout.

No JSON, no MCP: the cost of moving one line through trio and two pipes, which
bounds what any trio stdio server can do on this machine.  Each line is
written with its own ``send_all``, as a server writes each answer.  The load
generator checks only the ``id`` of what comes back (the request itself).

Run with ``python benchmarks/peers/raw_trio_echo.py stdio``.
"""

from __future__ import annotations

import os
import sys

import trio


async def main() -> None:
    stdin = trio.lowlevel.FdStream(os.dup(0))
    stdout = trio.lowlevel.FdStream(os.dup(1))
    buffer = bytearray()
    async with stdin, stdout:
        while True:
            data = await stdin.receive_some(65536)
            if not data:
                return
            buffer += data
            start = 0
            while True:
                end = buffer.find(b"\n", start)
                if end < 0:
                    break
                await stdout.send_all(bytes(buffer[start : end + 1]))
                start = end + 1
            del buffer[:start]


if __name__ == "__main__":
    if sys.argv[1:2] not in (["stdio"], []):
        sys.exit("raw_trio_echo speaks stdio only")
    trio.run(main)
