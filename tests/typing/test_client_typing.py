"""mypy --strict on tests/typing/client_calls.py: the client's public types stay precise."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


@pytest.mark.slow
def test_the_client_calls_type_check() -> None:
    pytest.importorskip("mypy")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",  # this file's errors only, not the library's
            "--no-incremental",
            "--cache-dir=/dev/null",
            str(HERE / "client_calls.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
