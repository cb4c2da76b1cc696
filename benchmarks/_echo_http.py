"""``benchmarks/echo_server.py`` over Streamable HTTP on a free port, for the benchmarks that
time a client against it while something else loads it (``churn``, ``fairness``)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks._load_http import free_port, wait_for_port

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@contextmanager
def echo_over_http(door: str) -> Iterator[int]:
    """The echo server behind ``door`` (h11, httptools, hypercorn), listening: its port."""
    port = free_port()
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py"]
    server = subprocess.Popen(
        [*argv, "--http", f"127.0.0.1:{port}", "--front-door", door],
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port("127.0.0.1", port, 30, lambda: server.poll() is None)
        yield port
    finally:
        server.terminate()
        server.wait(10)
