"""Every code block of the README runs as printed.

Each block is preceded by an HTML comment (invisible on PyPI and in rendered Markdown) saying what
it is: ``file: NAME`` (written to a folder as NAME), ``output: NAME`` (what ``python NAME`` prints
there) or ``check: KIND`` (a shell block, checked as its kind says). A block without one fails.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
import trio

from benchmarks._run_targets import targets
from mcp_trio.client import connect_http, connect_stdio
from tests._support.examples import ROOT, TIMEOUT, run_script, served

pytestmark = pytest.mark.docs

README = (ROOT / "README.md").read_text()
BLOCK = re.compile(r"(?:<!-- (\w+): ([^>]*?) -->\n)?```(\w*)\n(.*?)```", re.S)
BLOCKS = [(m.group(1), m.group(2), m.group(3), m.group(4)) for m in BLOCK.finditer(README)]
FILES = {arg: code for kind, arg, _, code in BLOCKS if kind == "file"}
OUTPUTS = {arg: text for kind, arg, _, text in BLOCKS if kind == "output"}
CHECKS = {arg.split()[0]: (arg, code) for kind, arg, _, code in BLOCKS if kind == "check"}


def test_every_block_says_what_it_is() -> None:
    assert len(BLOCKS) == README.count("```") // 2
    for kind, arg, lang, code in BLOCKS:
        assert kind in ("file", "output", "check"), f"a block has no marker:\n{code}"
        if kind == "file":
            assert lang == "python", arg
    assert set(OUTPUTS) <= set(FILES)
    assert set(CHECKS) == {"install", "quick-start", "serve-http", "dev"}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name, code in FILES.items():
        (tmp_path / name).write_text(code)
    return tmp_path


@pytest.mark.parametrize("script", sorted(OUTPUTS))
def test_a_script_prints_what_the_readme_shows(script: str, folder: Path) -> None:
    assert run_script(folder / script, folder) == OUTPUTS[script]


async def test_the_server_file_is_served_over_http(folder: Path) -> None:
    """``mcp-trio serve demo.py --http ...``: the import does not run the stdio server."""
    arg, code = CHECKS["serve-http"]
    argv = shlex.split(code.strip())
    assert argv[:3] == ["mcp-trio", "serve", arg.split()[1]] and argv[3] == "--http"
    argv[4] = "127.0.0.1:0"
    with trio.fail_after(TIMEOUT):
        async with served(*argv[2:], cwd=folder) as url:
            assert url.endswith("/mcp")
            async with connect_http(url) as client:
                assert [t.name for t in await client.list_all_tools()] == ["add", "greet"]
                result = await client.call_tool("add", {"a": 1, "b": 2})
                assert result.structuredContent == {"result": 3}


def test_the_install_lines_name_real_extras() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    lines = [line.split("#")[0].strip() for line in CHECKS["install"][1].splitlines()]
    assert lines[0] == "pip install mcp-trio"
    for line in lines[1:]:
        (named,) = re.fullmatch(r"pip install 'mcp-trio\[([\w,]+)\]'", line).groups()  # type: ignore[union-attr]
        assert set(named.split(",")) <= set(extras), line
    # the list of the extras is one table (tests/docs/test_extras.py checks it): the README points there
    assert "docs/getting-started.md" in CHECKS["install"][1]


async def test_the_quick_start_serves_the_everything_example() -> None:
    """The quick start's first command: an editable install, then the everything server over stdio."""
    steps = [shlex.split(step) for step in CHECKS["quick-start"][1].strip().split("&&")]
    assert steps[0] == ["python3", "-m", "venv", ".venv"]
    assert steps[1] == [".venv/bin/pip", "install", "-q", "-e", "."]
    assert steps[2][:2] == [".venv/bin/mcp-trio", "serve"]
    example = ROOT / steps[2][2]
    command = [sys.executable, "-m", "mcp_trio._cli", "serve", str(example)]
    with trio.fail_after(TIMEOUT):
        async with connect_stdio(*command, cwd=str(ROOT)) as client:
            names = {tool.name for tool in await client.list_all_tools()}
            result = await client.call_tool("test_simple_text")
    assert "test_simple_text" in names and not result.isError


def test_the_development_command_is_what_ci_runs() -> None:
    command = CHECKS["dev"][1].strip()
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert any(line == command or line.startswith(f"{command} || ") for line in lines), command


def test_links_work_on_pypi() -> None:
    """PyPI shows the README without the repository: no relative link or image."""
    targets_ = re.findall(r"\]\(([^)]+)\)", README) + re.findall(r'src="([^"]+)"', README)
    assert targets_, "the README links somewhere"
    for target in targets_:
        assert re.match(r"https://", target), f"not an absolute https link: {target}"


def test_the_figures_are_the_last_runs() -> None:
    results = json.loads((ROOT / "benchmarks" / "results.json").read_text())
    figures = {t.name: t.value for t in targets(results)}
    section = README.split("## Benchmarks", 1)[1].split("\n## ", 1)[0]
    section = " ".join(section.split())
    for name, digits in [
        ("stdio sequential (one CPU) vs SDK low-level", 1),
        ("stdio sequential (one CPU) vs raw trio line echo", 2),
        ("stdio pipelined (256 in flight) vs SDK low-level", 1),
        ("HTTP ×64, h11 front door vs SDK best mode (sdk)", 1),
        ("HTTP ×64 p99 latency, h11 front door vs SDK (sdk)", 2),
        ("memory per idle HTTP session vs SDK (JSON mode)", 2),
        ("cold start, SDK low-level / ours", 1),
        ("codec, full wire path vs SDK (geometric mean)", 1),
        ("stdio sequential (one CPU) vs TypeScript SDK", 2),
        ("HTTP ×64 (CPUs of their own), h11 front door vs TypeScript SDK", 2),
        ("HTTP ×64 (CPUs of their own), httptools front door vs TypeScript SDK", 2),
        ("HTTP ×64 (CPUs of their own) server CPU per request, httptools front door vs TypeScript SDK", 2),
    ]:
        value = figures[name]
        assert value is not None, name
        assert f"{value:.{digits}f}×" in section, (name, value)
    # a claim against another implementation comes with its run-by-run range (the lowest and
    # highest ratio of the run's repeats), so that "faster" is read only where every run agrees
    spreads = {t.name: t.spread for t in targets(results)}
    for name in [
        "stdio sequential (one CPU) vs SDK low-level",
        "stdio sequential (one CPU) vs TypeScript SDK",
        "HTTP ×64 (CPUs of their own), h11 front door vs TypeScript SDK",
        "HTTP ×64 (CPUs of their own) server CPU per request, h11 front door vs TypeScript SDK",
        "HTTP ×64 (CPUs of their own), httptools front door vs TypeScript SDK",
        "HTTP ×64 (CPUs of their own) server CPU per request, httptools front door vs TypeScript SDK",
    ]:
        spread = spreads[name]
        assert spread is not None, name
        assert f"[{spread[0]:.2f}× to {spread[1]:.2f}×" in section, (name, spread)
