"""A fuzzing target served over Streamable HTTP as a real process (``serve_http``), the hand-made
Streamable HTTP server of the fuzzing tests (``sse_server``), and where the everything example is."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from tests._support.paths import ROOT

EVERYTHING = str(ROOT / "examples" / "everything.py")


@contextlib.contextmanager
def serve_http(script: str, log: Path) -> Iterator[str]:
    """``mcp-trio serve SCRIPT --http 127.0.0.1:0`` in a process of its own; yields its URL
    (read from its stderr), and stops it on exit."""
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_trio._cli", "serve", script, "--http", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL,
            stderr=err,
            cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 20
        url = None
        while url is None and time.monotonic() < deadline and proc.poll() is None:
            found = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", log.read_text())
            url = found.group(1) if found else None
            time.sleep(0.05)
        assert url, "the server did not start: " + log.read_text()[-2000:]
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def sse_server(mode: str) -> Iterator[str]:
    """``tests/fuzzing/sse_server.py MODE`` (a standard-library Streamable HTTP server with one
    flaw) in a process of its own; yields its URL and kills it on exit."""
    script = str(ROOT / "tests" / "fuzzing" / "sse_server.py")
    with subprocess.Popen([sys.executable, script, mode], stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            yield proc.stdout.readline().strip()
        finally:
            proc.kill()
