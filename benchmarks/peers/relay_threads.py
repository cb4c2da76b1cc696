"""A floor for a proxy outside any event loop: the echo server started as a child, and every
frame relayed between the two pipes by two OS threads doing blocking reads and writes, the
request ids rewritten (``_relay_frames``).  ``bench_proxy``'s "stdio thread relay".

Run with ``python benchmarks/peers/relay_threads.py``.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable

from benchmarks.peers._relay_frames import ECHO, Ids, lines


def pump(source: int, sink: int, rewrite: Callable[[bytes], bytes]) -> None:
    buffer = bytearray()
    while data := os.read(source, 65536):
        frames = [rewrite(line) for line in lines(buffer, data)]
        if frames:
            os.write(sink, b"".join(frames))  # (pipes: a blocking write writes it all)


def main() -> None:
    ids = Ids()
    child = subprocess.Popen(ECHO, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    upstream_in = child.stdin.fileno()

    def up() -> None:
        pump(0, upstream_in, ids.up)
        child.stdin.close()  # type: ignore[union-attr]

    threading.Thread(target=up, daemon=True).start()
    pump(child.stdout.fileno(), 1, ids.down)
    child.wait()


if __name__ == "__main__":
    main()
