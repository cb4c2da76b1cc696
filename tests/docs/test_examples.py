"""The documentation's examples run, and print what the pages show.

The guide pages hold no code of their own: every Python block includes a file of
``docs/examples/`` (``--8<-- "NAME.py"``), and what it prints is ``NAME.out`` beside it, included
the same way. Here each ``NAME.py`` with a ``NAME.out`` runs and must print exactly that; each
``test_*.py`` runs under pytest and must pass; every other file is a server that a page serves
with ``mcp-trio serve``, and is served as the page says. The shell and JSON blocks of the pages
are checked too: each command is one this test knows how to check, and checks.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
import tomllib
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
import trio

from mcp_trio.client import connect_http, connect_stdio, connect_websocket
from tests._support.examples import ROOT, TIMEOUT, example_env, run_script, served

pytestmark = pytest.mark.docs

DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
# The pages written as a guide (the design notes keep their own sketches).
GUIDE = sorted(
    [DOCS / "index.md", DOCS / "getting-started.md", DOCS / "migrating.md", DOCS / "about-docs.md"]
    + [DOCS / "middleware.md"]
    + list((DOCS / "guide").glob("*.md"))
)
BLOCK = re.compile(r"^( *)```(\w*)\n(.*?)^\1```", re.S | re.M)  # indented: in tabs
INCLUDE = re.compile(r'--8<-- "([^"]+)"')

SCRIPTS = sorted(p.name for p in EXAMPLES.glob("*.py") if p.with_suffix(".out").exists())
TESTS = sorted(p.name for p in EXAMPLES.glob("test_*.py"))


def _blocks(page: Path) -> list[tuple[str, str]]:
    return [(m.group(2), textwrap.dedent(m.group(3))) for m in BLOCK.finditer(page.read_text())]


def _sh_lines(*prefixes: str) -> list[str]:
    """The commands of the pages' shell blocks that start with one of ``prefixes``."""
    lines = []
    for page in GUIDE:
        for lang, code in _blocks(page):
            if lang == "sh":
                lines += [ln.split("#")[0].strip() for ln in code.splitlines() if ln.startswith(prefixes)]
    return sorted(set(lines))


def _serve_lines() -> list[str]:
    return _sh_lines("mcp-trio serve")


CLIENT_COMMANDS = (
    "mcp-trio list ",
    "mcp-trio call ",
    "mcp-trio inspect ",
    "mcp-trio read ",
    "mcp-trio prompt ",
)


def _client_lines() -> list[str]:
    return _sh_lines(*CLIENT_COMMANDS)


def test_the_guide_pages_exist() -> None:
    assert all(page.is_file() for page in GUIDE)
    assert SCRIPTS and TESTS


@pytest.mark.parametrize("page", GUIDE, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_block_is_an_example_file_or_checked(page: Path) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(pyproject["optional-dependencies"])
    included = set()
    for lang, code in _blocks(page):
        includes = INCLUDE.findall(code)
        if lang in ("python", "text"):
            assert includes and code.strip() == f'--8<-- "{includes[0]}"', (
                f"{page.name}: a {lang} block that is not an included example file:\n{code}"
            )
            assert (EXAMPLES / includes[0]).is_file(), includes[0]
            included.add(includes[0])
            if lang == "text":
                assert includes[0].endswith((".out", ".txt"))
        elif lang == "sh":
            for line in code.splitlines():
                command = line.split("#")[0].strip()
                if not command:
                    continue
                if command.startswith("pip install -r "):
                    assert (ROOT / command.split()[-1]).is_file(), command
                elif command in ("mkdocs serve", "mkdocs build --strict"):
                    pass  # .ci/run builds the site strictly
                elif command.startswith("pip install"):
                    for word in shlex.split(command)[2:]:
                        match = re.fullmatch(r"mcp-trio(?:\[([\w,]+)\])?|pytest|pytest-trio", word)
                        assert match, command
                        assert set(filter(None, (match.group(1) or "").split(","))) <= extras
                elif command.startswith("mcp-trio serve"):
                    assert command in _serve_lines()  # served below
                elif command.startswith(CLIENT_COMMANDS):
                    assert command in _client_lines()  # run below
                elif command.startswith("mcp-trio install "):
                    assert command in _sh_lines("mcp-trio install ")  # run below
                elif command.startswith(("python ", "pytest")):
                    script = command.split()[-1]
                    assert script == "pytest" or (EXAMPLES / script).is_file(), command
                else:
                    raise AssertionError(f"{page.name}: a command this test cannot check: {line}")
        elif lang == "toml":  # a config file of `mcp-trio serve --config`, served by a serve line
            assert includes and code.strip() == f'--8<-- "{includes[0]}"', code
            assert includes[0].endswith(".toml"), includes[0]
            assert any(f"--config {includes[0]}" in line for line in _serve_lines()), includes[0]
            tomllib.loads((EXAMPLES / includes[0]).read_text())
            included.add(includes[0])
        elif lang == "json":
            config = json.loads(code)
            for entry in config["mcpServers"].values():
                assert entry["command"] == "mcp-trio" and entry["args"][0] == "serve"
                assert (EXAMPLES / Path(entry["args"][1]).name).is_file()
                assert entry["args"][1].startswith("/")
        else:
            raise AssertionError(f"{page.name}: a {lang or 'plain'} block")
    for name in included:
        if name.endswith(".py") and (EXAMPLES / name).with_suffix(".out").exists():
            # the page that shows a script shows what it prints
            assert name[:-3] + ".out" in included, f"{page.name} shows {name} without its output"


def test_every_example_is_shown_somewhere() -> None:
    shown = {name for page in GUIDE for _, code in _blocks(page) for name in INCLUDE.findall(code)}
    files = {p.name for p in EXAMPLES.iterdir() if p.suffix in (".py", ".out", ".txt", ".toml")}
    assert files <= shown, sorted(files - shown)


def test_the_layout_names_what_is_there() -> None:
    """``layout.txt`` (the home page's tree): every folder it names exists."""
    parent = ROOT
    for line in (EXAMPLES / "layout.txt").read_text().splitlines():
        match = re.match(r"( *)(\w+)/ ", line)
        if match is None:
            continue
        indent, name = match.groups()
        if not indent:
            parent = ROOT / name
            assert parent.is_dir(), name
        else:
            assert (parent / name).is_dir(), f"{parent.name}/{name}"


@pytest.mark.parametrize("script", SCRIPTS)
def test_an_example_prints_what_its_page_shows(script: str) -> None:
    expected = (EXAMPLES / script).with_suffix(".out").read_text()
    assert run_script(EXAMPLES / script, EXAMPLES) == expected


FASTMCP = "fastmcp==4.1.2"  # the version benchmarks/requirements.txt measures


@pytest.fixture(scope="session")
def fastmcp_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """An interpreter with FastMCP: a virtual environment of its own, since FastMCP
    pins its own version of the SDK (the test extra's may differ)."""
    venv = tmp_path_factory.mktemp("fastmcp-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", FASTMCP], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"installing {FASTMCP} failed:\n{done.stderr[-2000:]}"
    return str(python)


@pytest.mark.parametrize("server", ["sdk_server.py", "fastmcp_server.py"])
def test_the_other_libraries_servers_answer_the_same(server: str, request: pytest.FixtureRequest) -> None:
    """migrating.md: the same server written with the SDK and with FastMCP, same answers.

    The SDK is in the ``test`` extra; FastMCP pins its own SDK, so its server runs in an
    environment of its own.
    """
    python = request.getfixturevalue("fastmcp_python") if server == "fastmcp_server.py" else sys.executable
    done = subprocess.run(
        [sys.executable, "compare.py", server, python],
        cwd=EXAMPLES,
        env=example_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (EXAMPLES / "compare.out").read_text()


@pytest.mark.parametrize("test_file", TESTS)
def test_an_example_test_file_passes(test_file: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test_file],
        cwd=EXAMPLES,
        env=example_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("line", _serve_lines())
async def test_a_serve_line_serves(line: str) -> None:
    argv = shlex.split(line)[2:]
    with trio.fail_after(TIMEOUT):
        if "--http" in argv or "--ws" in argv:
            flag = "--http" if "--http" in argv else "--ws"
            argv[argv.index(flag) + 1] = "127.0.0.1:0"
            connect = connect_http if flag == "--http" else connect_websocket
            async with served(*argv, cwd=EXAMPLES) as url, connect(url) as client:
                assert await client.list_all_tools()
        else:
            async with connect_stdio(
                sys.executable, "-m", "mcp_trio._cli", "serve", *argv, cwd=str(EXAMPLES), env=example_env()
            ) as client:
                assert await client.list_all_tools()


@pytest.mark.parametrize("line", _sh_lines("mcp-trio install "))
def test_an_install_line_runs(line: str, tmp_path: Path) -> None:
    """``mcp-trio install`` lines: run with ``--dry-run`` in a temporary HOME, they print the
    configuration with an entry starting the example they name."""
    argv = shlex.split(line)[1:]
    env = {**example_env(), "HOME": str(tmp_path), "APPDATA": str(tmp_path)}
    env.pop("XDG_CONFIG_HOME", None)
    done = subprocess.run(
        [sys.executable, "-m", "mcp_trio._cli", *argv, "--dry-run"],
        cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    servers = json.loads(done.stdout)["servers" if argv[1] == "vscode" else "mcpServers"]
    assert any(str(EXAMPLES / argv[2]) in server["args"][-1] for server in servers.values())
    assert list(tmp_path.iterdir()) == []  # nothing written


@pytest.mark.parametrize("line", _client_lines())
async def test_a_client_command_line_runs(line: str) -> None:
    """``mcp-trio list | call | inspect | read | prompt`` lines: run against the example they name (a URL: the
    page's server, served on a free port); they must succeed and print something."""
    argv = [sys.executable if word == "python" else word for word in shlex.split(line)[1:]]
    argv = [re.sub(r"^python ", f"{sys.executable} ", word) for word in argv]
    url = next((word for word in argv if re.match(r"(http|ws)://", word)), None)
    async with AsyncExitStack() as stack:
        if url is not None:
            flag = "--http" if url.startswith("http") else "--ws"
            argv[argv.index(url)] = await stack.enter_async_context(
                served("first_server.py", flag, "127.0.0.1:0", cwd=EXAMPLES)
            )
        with trio.fail_after(TIMEOUT):
            done = await trio.run_process(
                [sys.executable, "-m", "mcp_trio._cli", *argv],
                cwd=EXAMPLES,
                env=example_env(),
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.strip(), line
