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
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (once for the module)."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
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
            str(ROOT),
        ],
        check=True,
        cwd=dist,
        capture_output=True,
    )
    (built,) = dist.glob("mcp_trio-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Iterator[Path]:
    """A fresh venv with the wheel installed; yields its ``bin`` folder."""
    base = tmp_path_factory.mktemp("wheel")
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
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield env_dir / "bin"


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
    assert "is not pinned in schema/revisions.toml (pinned: 2024-11-05" in bad.stderr


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


def test_the_sdist_builds_the_wheel_and_holds_no_tests(tmp_path: Path) -> None:
    """No tests rather than some: the suite needs the whole repository (MANIFEST.in says why)."""
    subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o", str(tmp_path), str(ROOT)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
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
