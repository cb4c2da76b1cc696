"""``mcp-trio serve`` runs the server's lifespan once per process: per worker under
``--workers``, over stdio too, and leaves it on a graceful stop."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import httpx2
import pytest
import trio

from mcp_trio.client import connect_stdio
from tests._support.cli import CALL, FRESH, HEADERS, ROOT, serving

PROGRAM = str(ROOT / "tests" / "programs" / "lifespan_server.py")


def notes(log: Path) -> list[tuple[str, int]]:
    return [(what, int(pid)) for what, pid in (line.split() for line in log.read_text().splitlines())]


def test_each_worker_enters_the_lifespan_once_and_leaves_it_on_sigterm(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    args = [PROGRAM, "--http", "127.0.0.1:0", "--workers", "2", "--stateless"]
    with serving(args, tmp_path, env={"LIFESPAN_LOG": str(log)}) as served:
        served.wait_for("Streamable HTTP at ")
        answers = set()
        with httpx2.Client(timeout=10, limits=FRESH) as client:
            for _ in range(30):
                call = {**CALL, "params": {"name": "pid", "arguments": {}}}
                r = client.post(served.url, headers=HEADERS, json=call)
                assert r.status_code == 200, r.text
                answers.add(r.json()["result"]["content"][0]["text"])
        served.proc.send_signal(signal.SIGTERM)
        code, err = served.finish()
    assert code == 0, err
    workers = {int(a.split(":")[0]) for a in answers}
    assert answers == {f"{pid}: opened in {pid}" for pid in workers}  # (each its own lifespan's value)
    entered = [pid for what, pid in notes(log) if what == "enter"]
    left = [pid for what, pid in notes(log) if what == "exit"]
    assert sorted(entered) == sorted(left) and len(entered) == 2 and len(set(entered)) == 2
    assert workers <= set(entered) and served.proc.pid not in entered


@pytest.mark.trio
async def test_over_stdio_the_lifespan_wraps_the_session(tmp_path: Path) -> None:
    log = tmp_path / "lifespan.log"
    env = {"LIFESPAN_LOG": str(log), "PYTHONPATH": str(ROOT)}
    with trio.fail_after(30):
        async with connect_stdio(sys.executable, "-m", "mcp_trio._cli", "serve", PROGRAM, env=env) as client:
            text = (await client.call_tool("pid")).content[0].text  # type: ignore[union-attr]
            pid = int(text.split(":")[0])
            assert text == f"{pid}: opened in {pid}" and notes(log) == [("enter", pid)]
    assert notes(log) == [("enter", pid), ("exit", pid)]
