"""The floor of any relay process written in Python: the echo server started as a child, and
the bytes passed between the two pairs of pipes by two OS threads doing blocking reads and
writes, nothing looked at, nothing rewritten.  ``bench_proxy``'s "stdio copy relay";
``relay_copy.c`` is the same in C.

Run with ``python benchmarks/peers/relay_copy.py``.
"""

from __future__ import annotations

import os
import subprocess
import threading

from benchmarks.peers._relay_frames import ECHO


def pump(source: int, sink: int) -> None:
    while data := os.read(source, 65536):
        os.write(sink, data)  # (pipes: a blocking write writes it all)
    os.close(sink)


def main() -> None:
    child = subprocess.Popen(ECHO, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    threading.Thread(target=pump, args=(0, child.stdin.fileno()), daemon=True).start()
    pump(child.stdout.fileno(), 1)
    child.wait()


if __name__ == "__main__":
    main()
