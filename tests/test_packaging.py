"""The wheel, installed into a fresh virtual environment outside the checkout.

Builds the wheel from this checkout, installs it (without dependencies: the new
environment borrows this one's site-packages for those, but not its editable
``mcp_trio``), and runs the installed ``mcp-trio`` from a folder of its own:
``codegen`` must find its pinned revisions as package data and write to the
current directory, ``serve`` must serve a server file over stdio.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from mcp_trio import open_session, open_stdio_client
from tests._support.paths import ROOT
from tests._support.schema import schema_dir

SCHEMAS = schema_dir()

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout's files (tracked, and new ones not ignored), once for the module.

    The builds run there, not in the checkout: a build without isolation writes its
    ``build/`` and ``mcp_trio.egg-info/`` into the tree it builds, and the wheel and the
    sdist of this module, on two pytest-xdist workers at once, spoiled each other's (each
    worker has a copy of its own; one worker builds one at a time)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    tree = tmp_path_factory.mktemp("source") / "checkout"
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file():  # (not one deleted and not yet committed)
            target = tree / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return tree


def _build(command: list[str], cwd: Path) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory, checkout: Path) -> Path:
    """The wheel built from this checkout (once for the module)."""
    dist = tmp_path_factory.mktemp("dist")
    _build(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(checkout),
        ],
        dist,
    )
    (built,) = dist.glob("mcp_trio-*.whl")
    return built


def _install(base: Path, wheel: Path, *, leave_out: tuple[str, ...] = ()) -> Path:
    """A fresh venv in ``base`` with the wheel installed; returns its ``bin`` folder.

    The dependencies come from this environment, less the top-level entries whose names
    start with one of ``leave_out`` (a folder of links to the rest stands in for it then).
    """
    env_dir = base / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--ignore-installed",
            str(wheel),
        ],
        check=True,
        cwd=base,
        capture_output=True,
        env=_env(),
    )
    assert (site / "mcp_trio" / "__init__.py").is_file()
    # The dependencies come from this environment (added after the install, so pip
    # does not see this environment's mcp-trio); a path line in a .pth file does not
    # run that folder's own .pth files, so the editable mcp_trio stays out of reach.
    deps = Path(sysconfig.get_paths()["purelib"])
    if leave_out:
        links = base / "deps"
        links.mkdir()
        for entry in deps.iterdir():
            if not entry.name.lower().startswith(leave_out) and not entry.name.endswith(".pth"):
                (links / entry.name).symlink_to(entry)
        deps = links
    (site / "deps.pth").write_text(f"{deps}\n")
    return env_dir / "bin"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Iterator[Path]:
    """A fresh venv with the wheel installed; yields its ``bin`` folder."""
    yield _install(tmp_path_factory.mktemp("wheel"), wheel)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MCP_TRIO_SCHEMA_DIR")}
    env["PATH"] = "/usr/bin:/bin"
    return env


def test_the_wheel_ships_no_top_level_codegen_and_the_pins(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"mcp_trio", "mcp_trio_codegen"}
    assert "mcp_trio_codegen/schema/revisions.toml" in names
    assert "mcp_trio/py.typed" in names
    assert not [n for n in names if n.startswith("examples/") or "authorization_server" in n]


def test_installed_packages_come_from_the_venv(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import json, mcp_trio, mcp_trio_codegen, importlib.util;"
        "print(json.dumps([mcp_trio.__file__, mcp_trio_codegen.__file__,"
        " importlib.util.find_spec('codegen') is None]))"
    )
    out = subprocess.run(
        [str(installed / "python"), "-c", probe],
        check=True,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(),
    ).stdout
    mcp_file, codegen_file, no_codegen = json.loads(out)
    venv_root = str(installed.parent)
    assert mcp_file.startswith(venv_root) and codegen_file.startswith(venv_root)
    assert no_codegen


@pytest.mark.skipif(SCHEMAS is None, reason="needs the official schemas (../shared/mcp-schema)")
def test_installed_codegen_writes_to_the_current_directory(installed: Path, tmp_path: Path) -> None:
    assert SCHEMAS is not None
    schema = SCHEMAS / "2025-11-25" / "schema.json"
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [str(installed / "mcp-trio"), "codegen", "--revision", "2099-01-01", "--schema", str(schema)],
        capture_output=True,
        text=True,
        cwd=work,
        env=_env(),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    written = work / "v2099_01_01.py"
    assert written.is_file(), (done.stdout, done.stderr)
    assert "class CallToolRequest(" in written.read_text()
    site_types = next(installed.parent.glob("lib/python*/site-packages/mcp_trio/types"))
    assert not list(site_types.glob("v2099*")), "codegen wrote into the installed package"
    # the pins are package data: an unknown pinned revision is named from them
    bad = subprocess.run(
        [str(installed / "mcp-trio"), "codegen", "--revision", "2099-01-01", "--no-download"],
        capture_output=True,
        text=True,
        cwd=work,
        env=_env(),
        timeout=120,
    )
    assert bad.returncode == 2
    assert "is not pinned in mcp_trio_codegen/schema/revisions.toml (pinned: 2024-11-05" in bad.stderr


def _codegen(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "mcp-trio"), "codegen", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=_env(),
        timeout=300,
    )


@pytest.mark.skipif(SCHEMAS is None, reason="needs the official schemas (../shared/mcp-schema)")
def test_installed_codegen_checks_the_installed_modules(installed: Path, tmp_path: Path) -> None:
    """From a folder holding no modules, --check compares with the installed mcp_trio/types."""
    assert SCHEMAS is not None
    done = _codegen(installed, tmp_path, "--check", "--schema-dir", str(SCHEMAS))
    assert done.returncode == 0, done.stderr
    assert "5 module(s) up to date" in done.stdout
    assert list(tmp_path.iterdir()) == []
    # --output-dir is compared instead when given; the hint is a command that exists here
    (tmp_path / "out").mkdir()
    stale = _codegen(
        installed,
        tmp_path,
        "--check",
        "--revision",
        "2025-06-18",
        "--schema-dir",
        str(SCHEMAS),
        "--output-dir",
        "out",
    )
    assert stale.returncode == 1
    assert "out/v2025_06_18.py" in stale.stderr
    assert "run `mcp-trio codegen --output-dir out`" in stale.stderr
    assert "python -m codegen" not in stale.stderr
    # the draft revision: generated from the schema directory's draft/, loaded, compared
    if (SCHEMAS / "draft" / "schema.json").is_file():
        draft = _codegen(
            installed, tmp_path, "--draft", "--schema-dir", str(SCHEMAS), "--output-dir", "draft"
        )
        assert draft.returncode == 0, draft.stderr
        assert "## 2026-07-28 → draft" in draft.stdout
        assert (tmp_path / "draft" / "vdraft.py").is_file()


def test_installed_codegen_help_names_itself_and_the_schema_sources(installed: Path, tmp_path: Path) -> None:
    done = _codegen(installed, tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: mcp-trio codegen ")
    assert "python -m codegen" not in done.stdout
    text = " ".join(done.stdout.split())
    assert "they are not shipped with mcp-trio" in text
    assert "in mcp_trio_codegen/schema/revisions.toml" in text
    assert "1. --schema-dir DIR: DIR/<revision>/schema.json" in text
    assert "$MCP_TRIO_SCHEMA_DIR" in text
    assert "github.com/modelcontextprotocol/modelcontextprotocol at commit b0f60ba5409d" in text
    assert "shared/mcp-schema" not in text  # (a checkout's default only)
    # a missing schema names the installed command and the same sources
    empty = tmp_path / "empty"
    empty.mkdir()
    missing = _codegen(installed, tmp_path, "--check", "--schema-dir", str(empty), "--revision", "2025-11-25")
    assert missing.returncode == 2
    assert "1. mcp-trio codegen --schema-dir DIR" in missing.stderr
    assert "pinned in mcp_trio_codegen/schema/revisions.toml" in missing.stderr


def test_installed_codegen_without_the_extra_names_it(
    tmp_path_factory: pytest.TempPathFactory, wheel: Path, tmp_path: Path
) -> None:
    bare = _install(tmp_path_factory.mktemp("bare"), wheel, leave_out=("datamodel_code_generator",))
    done = _codegen(bare, tmp_path, "--check")
    assert done.returncode == 2
    assert "datamodel-code-generator is not installed" in done.stderr
    assert "pip install 'mcp-trio[codegen]'" in done.stderr
    assert ".[codegen]" not in done.stderr and "-e " not in done.stderr
    if SCHEMAS is not None:  # --diff reads the schemas only: no generator needed
        diffed = _codegen(bare, tmp_path, "--diff", "2025-06-18", "2025-11-25", "--schema-dir", str(SCHEMAS))
        assert diffed.returncode == 0, diffed.stderr
        assert "- added `tasks/get` (either side;" in diffed.stdout
        as_json = _codegen(
            bare, tmp_path, "--diff", "2025-11-25", "2026-07-28", "--json", "--schema-dir", str(SCHEMAS)
        )
        assert as_json.returncode == 0, as_json.stderr
        removed = {c["method"] for c in json.loads(as_json.stdout)["requests"] if c["change"] == "removed"}
        assert {"initialize", "ping", "tasks/get"} <= removed


async def test_installed_serve_runs_a_server_file(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "small.py").write_text(
        textwrap.dedent(
            """
            from mcp_trio.server import Server

            server = Server("small", "1.0")

            @server.tool
            def double(n: int) -> int:
                "Twice n."
                return 2 * n
            """
        )
    )
    argv = [str(installed / "mcp-trio"), "serve", "small.py"]
    with trio.fail_after(30):
        async with open_stdio_client(argv, env=_env(), cwd=tmp_path) as proc:
            async with open_session(
                proc.channel, role="client", info={"name": "t", "version": "1"}
            ) as client:
                await client.connect()
                assert client.peer_info["name"] == "small"
                result = await client.request("tools/call", {"name": "double", "arguments": {"n": 21}})
                assert result.content[0].text == "42"
            await proc.process.wait()
        assert proc.process.returncode == 0


def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_test_extra_pulls_every_other_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    assert {"http", "auth", "fuzz", "codegen"} <= set(extras)
    wanted = _requirement_names(project["dependencies"]) | _requirement_names(extras["test"])
    for name, requirements in extras.items():
        if name not in ("test", "docs"):
            assert _requirement_names(requirements) <= wanted, name


def test_the_sdist_builds_the_wheel_and_holds_no_tests(tmp_path: Path, checkout: Path) -> None:
    """No tests rather than some: the suite needs the whole repository (MANIFEST.in says why)."""
    _build(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(tmp_path), str(checkout)],
        tmp_path,
    )
    (sdist,) = tmp_path.glob("mcp_trio-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
        top_pkg_info = next(
            m for m in tar.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO")
        )
        pkg_info = tar.extractfile(top_pkg_info)
        assert pkg_info is not None
        metadata = pkg_info.read().decode()
    assert not [n for n in names if n == "tests" or n.startswith("tests/")]
    for needed in (
        "LICENSE",
        "README.md",
        "pyproject.toml",
        "setup.py",
        "mcp_trio/py.typed",
        "mcp_trio/server/__init__.py",
        "codegen/__main__.py",
        "schema/revisions.toml",
    ):
        assert needed in names, needed
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    assert "Classifier: Framework :: Trio" in metadata
    assert "Project-URL: " in metadata
    for extra in ("http", "auth", "fuzz", "codegen", "test"):
        assert f"Provides-Extra: {extra}" in metadata
