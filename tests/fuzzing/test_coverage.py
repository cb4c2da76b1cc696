"""Coverage feedback (``mcp-trio fuzz --coverage``): the Python bootstrap records what a real
process runs and tells it over its side channel while the process lives, its scope, and a
campaign against a server of ours that reports what it reached (the Node side: tests/interop)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

import hypothesis
import pytest
import sniffio

from mcp_trio._cli import main
from mcp_trio.fuzzing import FuzzConfig, StdioTarget, run, runner
from mcp_trio.fuzzing._coverage import NodeCoverage, PythonCoverage, coverage_feed, detect_kind
from tests._support.fuzzing import EVERYTHING

TINY = """\
import sys


def grade(n):
    if n > 10:
        return "big"
    return "small"


for line in sys.stdin:
    print(grade(int(line)), flush=True)
"""


def reached(feed: PythonCoverage, sort: str, path: Path) -> set[str]:
    items = cast(set[tuple[str, str, str]], feed.reached)
    return {item[2] for item in items if item[:2] == (sort, str(path.resolve()))}


def tiny(tmp_path: Path, feed: PythonCoverage, before: str = "") -> tuple[Path, subprocess.Popen[str]]:
    script = tmp_path / "tiny.py"
    script.write_text(before + TINY)
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=feed.environ({"PATH": os.environ.get("PATH", "")}),
        text=True,
    )
    return script, proc


def ask(proc: subprocess.Popen[str], n: int) -> str:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{n}\n")
    proc.stdin.flush()
    return proc.stdout.readline()


def collect_until(feed: PythonCoverage, done: Callable[[], bool]) -> int:
    """Read the side channel until ``done()`` (the process writes every 20 ms; a busy machine may
    be late): the new locations, all reads added up."""
    new = 0
    deadline = time.monotonic() + 5
    while not done() and time.monotonic() < deadline:
        new += feed.collect(wait=True)
    time.sleep(0.1)  # (anything more it wrote)
    return new + feed.collect()


def test_the_bootstrap_reports_new_lines_over_its_side_channel_while_the_process_runs(
    tmp_path: Path,
) -> None:
    feed = PythonCoverage()
    script, proc = tiny(tmp_path, feed)
    try:
        assert ask(proc, 3) == "small\n"  # (stdout carries the program's output, nothing else)
        assert collect_until(feed, lambda: "7" in reached(feed, "line", script)) > 0
        assert {"1", "4", "5", "7", "10", "11"} <= reached(feed, "line", script)
        assert "6" not in reached(feed, "line", script)  # the branch not taken yet
        assert {"5:7", "10:11"} <= reached(feed, "arc", script)
        assert feed.collect(wait=True) == 0  # nothing new ran since
        assert ask(proc, 30) == "big\n"
        # the line of the other branch and its arc, nothing else (the return from it: 6 -> 11 is
        # not an arc within one frame)
        assert collect_until(feed, lambda: "6" in reached(feed, "line", script)) == 2
        assert "6" in reached(feed, "line", script) and "5:6" in reached(feed, "arc", script)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and err == ""
        # the side channel: one file for the process, each location written once
        [channel] = feed.directory.glob("py-*.cov")
        assert channel.name == f"py-{proc.pid}.cov"
        records = channel.read_text().splitlines()
        [fid] = [r.split("\t")[1] for r in records if r == f"F\t{r.split(chr(9))[1]}\t{script.resolve()}"]
        lines = [n for r in records if r.startswith(f"L\t{fid}\t") for n in r.split("\t")[2].split(",")]
        assert sorted(lines, key=int) == ["1", "4", "5", "6", "7", "10", "11"]
    finally:
        proc.kill()
        proc.communicate()
        feed.close()


def test_the_standard_library_is_out_of_scope_and_include_narrows_it(tmp_path: Path) -> None:
    stdlib = sysconfig.get_paths()["stdlib"]
    wide = PythonCoverage()
    try:
        script, proc = tiny(tmp_path, wide, "import sniffio\n")
        assert ask(proc, 1) == "small\n"
        proc.communicate(timeout=10)
        wide.collect()
        files = {item[1] for item in cast(set[tuple[str, str, str]], wide.reached)}
        assert str(script.resolve()) in files
        assert not any(f.startswith(stdlib + os.sep) for f in files), sorted(files)[:5]
        # what the program is built on, in site-packages (a virtual environment's too), counts
        assert str(Path(sniffio.__file__).resolve()) in files, sorted(files)
    finally:
        wide.close()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    narrow = PythonCoverage(include=[str(elsewhere)])
    try:
        script, proc = tiny(tmp_path, narrow)
        assert ask(proc, 1) == "small\n"
        proc.communicate(timeout=10)
        assert narrow.collect() == 0 and narrow.to_json()["lines"] == 0
    finally:
        narrow.close()


def test_auto_tells_python_from_node_by_the_command() -> None:
    assert detect_kind([sys.executable, "server.py"]) == "python"
    assert detect_kind(["python3.12", "-m", "pkg"]) == "python"
    assert detect_kind(["/usr/bin/node", "dist/index.js", "stdio"]) == "node"
    assert detect_kind(["npx", "-y", "@scope/server"]) == "node"
    assert detect_kind(["./run-server", "server.mjs"]) == "node"
    assert detect_kind(["./run-server"]) is None
    assert isinstance(coverage_feed("auto", ["node", "x.js"]), NodeCoverage)
    with pytest.raises(ValueError, match="--coverage python or --coverage node"):
        coverage_feed("auto", ["./run-server"])


def test_a_campaign_with_coverage_reports_what_it_reached(tmp_path: Path) -> None:
    out = tmp_path / "out"
    status = main(
        [
            "fuzz",
            "--stdio",
            f"{sys.executable} {EVERYTHING}",
            "--coverage",
            "auto",
            "--campaign",
            "valid",
            "--campaign",
            "invalid",
            "--max-examples",
            "15",
            "--out",
            str(out),
        ]
    )
    report = json.loads((out / "report.json").read_text())
    assert status == 0 and report["outcome"] == "passed" and report["findings"] == []
    for campaign in report["campaigns"]:
        coverage = campaign["coverage"]
        assert coverage["kind"] == "python"
        assert coverage["lines"] > 100 and coverage["arcs"] > 100 and coverage["files"] > 1
        assert coverage["run_total"] >= coverage["lines"] + coverage["arcs"]
    summary = (out / "summary.txt").read_text()
    assert summary.count("coverage: ") == 2 and "lines" in summary and "(Python)" in summary


def test_coverage_is_for_stdio_targets(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["fuzz", "--http", "http://127.0.0.1:9/mcp", "--coverage", "auto"])
    assert exited.value.code == 2
    assert "--coverage is for --stdio targets only" in capsys.readouterr().err


@pytest.mark.parametrize("steer", [True, False])
def test_each_generated_example_scores_its_new_coverage(monkeypatch: pytest.MonkeyPatch, steer: bool) -> None:
    scores: list[tuple[float, str]] = []
    real = hypothesis.target

    def spy(observation: float, *, label: str = "") -> float:
        scores.append((observation, label))
        return real(observation, label=label)

    monkeypatch.setattr(runner, "target", spy)
    feed = PythonCoverage()
    try:
        server = StdioTarget([sys.executable, EVERYTHING], env=feed.environ(os.environ))
        cfg = FuzzConfig(server, campaigns=["valid"], max_examples=8, coverage=feed, steer=steer)
        [stats] = run(cfg)
    finally:
        feed.close()
    assert not stats.aborted and stats.findings == []
    assert stats.coverage is not None and stats.coverage["steered"] is steer and stats.coverage["lines"] > 100
    if not steer:
        assert scores == []
        return
    assert len(scores) == stats.examples and {label for _, label in scores} == {"new coverage"}
    # the first example reaches code nothing reached before (the handshake's process was new)
    assert scores[0][0] > 0
    assert sum(score for score, _ in scores) <= stats.coverage["lines"] + stats.coverage["arcs"]


def test_the_targets_own_sitecustomize_still_runs(tmp_path: Path) -> None:
    own = tmp_path / "own"
    own.mkdir()
    (own / "sitecustomize.py").write_text("import os\nos.environ['OWN_SITECUSTOMIZE'] = 'ran'\n")
    feed = PythonCoverage()
    try:
        env = feed.environ({"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(own)})
        code = "import os, sys; print(os.environ.get('OWN_SITECUSTOMIZE'), sys.gettrace() is not None)"
        argv = [sys.executable, "-c", code]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=20)
        assert done.stdout == "ran True\n", done.stderr
    finally:
        feed.close()


@pytest.mark.parametrize(
    ("options", "timeout"),
    [([], 5.0), (["--coverage", "python"], 20.0), (["--coverage", "python", "--timeout", "3"], 3.0)],
)
def test_a_recording_python_target_gets_a_longer_default_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, options: list[str], timeout: float
) -> None:
    # A traced Python process answers several times slower (the pinned Python SDK: 0.17x its
    # speed on 3.11): waiting 5 s for it made false findings.  --timeout still decides.
    import mcp_trio.fuzzing as fuzzing

    seen: list[float] = []

    def fake_run(cfg: FuzzConfig) -> list[object]:
        seen.append(cfg.timeout)
        raise fuzzing.TargetFailed("stopped here", [])

    monkeypatch.setattr(fuzzing, "run", fake_run)
    argv = ["fuzz", "--stdio", f"{sys.executable} {EVERYTHING}", "--out", str(tmp_path), *options]
    assert main(argv) == 2
    assert seen == [timeout]
