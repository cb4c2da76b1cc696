"""Coverage feedback on Node targets (``mcp-trio fuzz --coverage node``): the blocks read from a
real ``NODE_V8_COVERAGE`` output of a tiny script, written while it runs (the preload) and at its
exit, and a campaign against the pinned TypeScript everything server reporting the blocks it
reached.  Node is the one the fuzz campaigns install (``fuzz/campaigns.py``, Node >= 22)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import pytest

from fuzz.campaigns import BY_ID, EV, Installed, cache_dir, install, launched
from mcp_trio._cli import main
from mcp_trio.fuzzing._coverage import NodeCoverage, v8_blocks

pytestmark = [pytest.mark.interop, pytest.mark.slow]

TINY = """\
"use strict";
const readline = require("node:readline");
function grade(n) {
  if (n > 10) {
    return "big";
  }
  return "small";
}
function never() {
  return "never";
}
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  process.stdout.write(grade(Number(line)) + "\\n");
});
"""


BIG = '{\n    return "big";\n  }'


@pytest.fixture(scope="module")
def node() -> Installed:
    installed = install(cache_dir(), need_python=False, need_node=True)
    if EV in installed.missing or installed.node is None:
        pytest.fail(f"Node and the npm targets could not be installed: {installed.missing}")
    return installed


def reached(feed: NodeCoverage) -> set[tuple[str, str, int, int]]:
    """The blocks the feed has read (its items, as the Node feed makes them)."""
    return cast(set[tuple[str, str, int, int]], feed.reached)


def blocks_named(blocks: set[tuple[str, str, int, int]], script: Path, name: str) -> list[str]:
    text = script.read_text()
    return [text[start:end] for url, fn, start, end in blocks if url == script.as_uri() and fn == name]


def test_the_blocks_of_a_real_v8_coverage_output(node: Installed, tmp_path: Path) -> None:
    script = tmp_path / "tiny.js"
    script.write_text(TINY)
    out = tmp_path / "v8"
    env = {"PATH": os.environ.get("PATH", ""), "NODE_V8_COVERAGE": str(out)}
    run = subprocess.run([str(node.node), str(script)], input="3\n", env=env, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout == "small\n", run.stderr
    [written] = out.glob("coverage-*.json")
    data = json.loads(written.read_text())
    blocks = v8_blocks(data)
    assert {url for url, *_ in blocks} == {script.as_uri()}  # node: internals left out
    grade = blocks_named(blocks, script, "grade")
    assert any(text.startswith("function grade") for text in grade)
    assert BIG not in grade  # the branch not taken
    assert blocks_named(blocks, script, "never") == []  # never called
    assert v8_blocks(data, include=[str(tmp_path / "elsewhere")]) == set()


def until(feed: NodeCoverage, script: Path, done: Callable[[list[str]], bool]) -> list[str]:
    """Read the feed until ``done`` holds of the blocks of ``grade`` (or 10 s): those blocks."""
    deadline = time.monotonic() + 10
    while True:
        feed.collect(wait=True)
        grade = blocks_named(reached(feed), script, "grade")
        if done(grade) or time.monotonic() > deadline:
            return grade


def test_the_preload_reports_blocks_while_the_process_runs(node: Installed, tmp_path: Path) -> None:
    script = tmp_path / "tiny.js"
    script.write_text(TINY)
    feed = NodeCoverage()
    proc = subprocess.Popen(
        [str(node.node), str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=feed.environ({"PATH": os.environ.get("PATH", "")}),
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("3\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "small\n"
        assert "function grade" in "".join(until(feed, script, lambda grade: bool(grade)))
        assert BIG not in blocks_named(reached(feed), script, "grade")
        proc.stdin.write("30\n")
        proc.stdin.flush()
        assert proc.stdout.readline() == "big\n"
        assert BIG in until(feed, script, lambda grade: BIG in grade)  # the branch taken now
        assert {url for url, *_ in reached(feed)} == {script.as_uri()}
    finally:
        proc.kill()
        proc.communicate()
        feed.close()


def test_a_campaign_against_the_ts_everything_server_reports_blocks(node: Installed, tmp_path: Path) -> None:
    with launched(BY_ID["everything-server-stdio"], node) as options:
        command = shlex.split(options[1])
        out = tmp_path / "out"
        status = main(
            [
                "fuzz",
                "--stdio",
                shlex.join(command),
                "--coverage",
                "auto",
                "--campaign",
                "valid",
                "--max-examples",
                "10",
                "--out",
                str(out),
            ]
        )
    report = json.loads((out / "report.json").read_text())
    assert status in (0, 1) and report["outcome"] in ("passed", "failed")
    [campaign] = report["campaigns"]
    assert campaign["coverage"]["kind"] == "node"
    assert campaign["coverage"]["blocks"] > 100 and campaign["coverage"]["scripts"] > 1
