"""A floor for a proxy in trio: the echo server started as a child, and every frame relayed
between the two pipes by two trio tasks, the request ids rewritten (``_relay_frames``); no
session, no handler, no scheduling but the relay's own.  ``bench_proxy``'s "stdio trio relay".

Run with ``python benchmarks/peers/relay_trio.py``.
"""

from __future__ import annotations

import os
import subprocess
from functools import partial

import trio

from benchmarks.peers._relay_frames import ECHO, Ids, lines


async def main() -> None:
    ids = Ids()
    stdin, stdout = trio.lowlevel.FdStream(os.dup(0)), trio.lowlevel.FdStream(os.dup(1))
    async with trio.open_nursery() as nursery:
        child: trio.Process = await nursery.start(
            partial(trio.run_process, ECHO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, check=False)
        )
        assert child.stdin is not None and child.stdout is not None
        upstream_in, upstream_out = child.stdin, child.stdout

        async def up() -> None:
            buffer = bytearray()
            while data := await stdin.receive_some(65536):
                frames = [ids.up(line) for line in lines(buffer, data)]
                if frames:
                    await upstream_in.send_all(b"".join(frames))
            await upstream_in.aclose()

        nursery.start_soon(up)
        buffer = bytearray()
        while data := await upstream_out.receive_some(65536):
            frames = [ids.down(line) for line in lines(buffer, data)]
            if frames:
                await stdout.send_all(b"".join(frames))
        nursery.cancel_scope.cancel()


if __name__ == "__main__":
    trio.run(main)
