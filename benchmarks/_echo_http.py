"""A server of the benchmarks' over Streamable HTTP on a free port (``bench_proxy``, ``churn``,
``fairness``)."""

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
ECHO = [sys.executable, "-m", "mcp_trio._cli", "serve", "benchmarks/echo_server.py"]


@contextmanager
def http_server(
    argv: list[str] = ECHO, env: dict[str, str] = ENV, door: str = "h11"
) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """``argv`` (a ``serve`` command line; the echo server by default) behind ``door``,
    listening: its port and process."""
    port = free_port()
    process = subprocess.Popen(
        [*argv, "--http", f"127.0.0.1:{port}", "--front-door", door],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port("127.0.0.1", port, 30, lambda: process.poll() is None)
        yield port, process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
