"""Running documentation examples: as scripts in a folder of their own, and against a server.

Used by the tests of the README and of the documentation's examples, so an example that no longer
runs, or prints something else than the page shows, fails the suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path

import trio

from tests._support.paths import ROOT

TIMEOUT = 60


def example_env() -> dict[str, str]:
    """The environment an example runs in: this checkout importable, nothing else changed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in docs/examples
    # nor a .hypothesis folder (the fuzzing example)
    storage = os.path.join(tempfile.gettempdir(), "mcp-trio-docs-hypothesis")
    env["HYPOTHESIS_STORAGE_DIRECTORY"] = storage
    return env


def run_script(script: Path, cwd: Path) -> str:
    """Run ``python script`` in ``cwd`` (at most :data:`TIMEOUT` s); its stdout, or fail."""
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=example_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stderr}"
    return done.stdout


@asynccontextmanager
async def served(*serve_args: str, cwd: Path) -> AsyncIterator[str]:
    """``mcp-trio serve *serve_args`` as a subprocess; yields the URL it prints, then stops it."""
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", *serve_args]
    async with trio.open_nursery() as nursery:
        process = await nursery.start(
            partial(
                trio.run_process,
                argv,
                cwd=cwd,
                env=example_env(),
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
        )
        seen = b""
        with trio.fail_after(TIMEOUT):
            while (found := re.search(rb"at ((?:http|ws)://\S+)", seen)) is None:
                chunk = await process.stderr.receive_some()
                assert chunk, f"mcp-trio serve ended before serving:\n{seen.decode()}"
                seen += chunk
        try:
            yield found.group(1).decode()
        finally:
            process.terminate()
            nursery.cancel_scope.deadline = trio.current_time() + 10
