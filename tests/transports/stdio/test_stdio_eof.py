"""Over stdio, the end of the server's input (EOF on stdin) does not drop the
requests already read: they are answered within ``eof_grace``, then the
server exits (a real subprocess server)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests._support.paths import PROGRAMS, ROOT

SERVER = [sys.executable, str(PROGRAMS / "lowlevel_server.py")]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


INIT = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
)


def _script(seconds: float) -> bytes:
    """initialize, initialized, tools/list and a tools/call of ``sleep(seconds)``."""
    call = {"name": "sleep", "arguments": {"seconds": seconds}}
    request = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
    return INIT + json.dumps(request).encode() + b"\n"


def _answers(stdout: bytes) -> dict[int, dict]:
    return {m["id"]: m for m in map(json.loads, stdout.splitlines()) if "id" in m}


def test_requests_read_before_eof_are_answered() -> None:
    for _ in range(10):
        done = subprocess.run(SERVER, input=_script(0.2), capture_output=True, env=ENV, timeout=10)
        answers = _answers(done.stdout)
        assert sorted(answers) == [0, 1, 2], done.stdout
        assert "tools" in answers[1]["result"]
        assert answers[2]["result"]["content"][0]["text"] == "slept"
        assert done.returncode == 0


def test_a_request_longer_than_the_grace_is_cancelled_and_the_server_exits() -> None:
    start = time.monotonic()
    done = subprocess.run(SERVER, input=_script(60), capture_output=True, env=ENV, timeout=15)
    elapsed = time.monotonic() - start
    answers = _answers(done.stdout)
    assert sorted(answers) == [0, 1]  # the sleep was cancelled: no answer
    assert done.returncode == 0
    assert elapsed < 2.0 + 3.0  # eof_grace (default 2 s) + margin for the interpreter's start
