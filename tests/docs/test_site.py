"""The documentation site's facts come from where the package keeps them (docs/_hooks.py): the
version from mcp_trio/_version.py, the repository link from pyproject.toml's [project.urls].

(No tier marker: the hook is read as a module; building the site is .ci/run's job.)
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests._support.paths import ROOT


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "docs" / "_hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checkout(tmp_path: Path, urls: str, version: str = '__version__ = "1.2.3"\n') -> Path:
    (tmp_path / "mcp_trio").mkdir(parents=True)
    (tmp_path / "mcp_trio" / "_version.py").write_text(version)
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "mcp-trio"\n\n[project.urls]\n{urls}')
    return tmp_path


def test_the_facts_are_this_checkouts() -> None:
    facts = _hooks().site_facts()
    namespace: dict[str, Any] = {}
    exec((ROOT / "mcp_trio" / "_version.py").read_text(), namespace)
    assert facts["version"] == namespace["__version__"]


def test_the_repository_is_pyprojects_when_it_names_one(tmp_path: Path) -> None:
    hooks = _hooks()
    without = _checkout(tmp_path / "a", 'Specification = "https://modelcontextprotocol.io/specification"\n')
    assert hooks.site_facts(without) == {"version": "1.2.3", "repository": None}
    with_ = _checkout(tmp_path / "b", 'Repository = "https://git.example/mcp-trio"\n')
    assert hooks.site_facts(with_) == {"version": "1.2.3", "repository": "https://git.example/mcp-trio"}


def test_a_version_file_without_a_version_is_refused(tmp_path: Path) -> None:
    root = _checkout(tmp_path, "", version="VERSION = '1'\n")
    with pytest.raises(ValueError, match="no __version__"):
        _hooks().site_facts(root)


def test_the_config_shows_the_version_and_takes_no_repo_url_of_its_own() -> None:
    hooks = _hooks()
    config = hooks.on_config({"repo_url": None, "copyright": "MIT License"})
    assert config["copyright"] == f"mcp-trio {hooks.site_facts()['version']} · MIT License"
    assert config["repo_url"] == hooks.site_facts()["repository"]
    with pytest.raises(ValueError, match=r"\[project.urls\] Repository"):
        hooks.on_config({"repo_url": "https://elsewhere.example", "copyright": ""})
