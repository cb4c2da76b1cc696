"""mypy --strict on the user files of tests/typing: the public types stay precise.

client_calls.py holds every public call of the client, server_calls.py every
public decorator of the server and the Context calls, middleware_calls.py
middleware written and installed on both sides, types_calls.py the lossless
decoder and encoder of the message types.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def check(name: str) -> None:
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
            str(HERE / name),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.slow
def test_the_client_calls_type_check() -> None:
    check("client_calls.py")


@pytest.mark.slow
def test_the_server_decorators_type_check() -> None:
    check("server_calls.py")


@pytest.mark.slow
def test_middleware_type_checks() -> None:
    check("middleware_calls.py")


@pytest.mark.slow
def test_the_lossless_codec_type_checks() -> None:
    check("types_calls.py")
