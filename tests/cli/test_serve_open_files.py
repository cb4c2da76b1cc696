"""``mcp-trio serve`` raises its limit on open files to the hard limit at start, and keeps
``--max-connections`` within what that limit allows (a connection flood would otherwise meet
the limit first, and accept() would fail for every client). Real processes, started with a
low limit."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mcp_trio._cli._tuning import FD_RESERVE
from tests._support.cli import ROOT

# Sets the limit, then becomes ``python -m mcp_trio._cli ARGS`` (the same process).
_LAUNCH = (
    "import os, resource, sys; "
    "soft, hard = int(sys.argv[1]), int(sys.argv[2]); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)); "
    "os.execv(sys.executable, [sys.executable, '-m', 'mcp_trio._cli', *sys.argv[3:]])"
)


@contextmanager
def serving_with_limit(
    soft: int, hard: int, *options: str
) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    """``mcp-trio serve examples/everything.py --http`` under the limit ``soft``:``hard``; yields
    the process and its stderr lines up to its announcement."""
    argv = [sys.executable, "-c", _LAUNCH, str(soft), str(hard), "serve", "examples/everything.py"]
    proc = subprocess.Popen(
        [*argv, "--http", "127.0.0.1:0", *options],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines: list[str] = []
        while not lines or "Streamable HTTP at" not in lines[-1]:
            line = proc.stderr.readline()
            assert line, f"the server ended: {''.join(lines)}"
            lines.append(line)
        yield proc, lines
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def open_files_limit(pid: int) -> tuple[int, int]:
    """The soft and hard limits on open files of process ``pid`` (from /proc)."""
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no open files limit in /proc")


def test_serve_raises_its_open_files_limit_to_the_hard_limit() -> None:
    with serving_with_limit(256, 4096) as (proc, lines):
        assert open_files_limit(proc.pid) == (4096, 4096)
        assert not any("--max-connections" in line for line in lines), lines


def test_max_connections_is_kept_within_the_open_files_limit() -> None:
    with serving_with_limit(300, 300, "--max-connections", "1000") as (proc, lines):
        assert open_files_limit(proc.pid) == (300, 300)
        warning = [line for line in lines if "--max-connections 1000" in line]
        assert warning, lines
        assert f"serving at most {300 - FD_RESERVE} connections" in warning[0]
