"""The mcp-trio command."""

from __future__ import annotations

import pytest

from mcp_trio._cli import main
from mcp_trio.types import _versions


def test_versions_lists_every_revision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["versions"]) == 0
    out = capsys.readouterr().out
    for version in _versions.SUPPORTED_VERSIONS:
        assert version in out
    assert "batching" in out and "stateless" in out


def test_codegen_check_passes_options_through(mcp_schema_dir: object, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "--check", "--schema-dir", str(mcp_schema_dir)]) == 0
