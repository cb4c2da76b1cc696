"""Public modules that moved keep a deprecated alias for one release (CHANGELOG.md)."""

from __future__ import annotations

import importlib
import sys

import pytest

from tests._support.paths import ROOT

MOVED = {
    "mcp_trio.transports.http_client": "mcp_trio.transports.http.client",
    "mcp_trio.transports.http_server": "mcp_trio.transports.http.server",
    "mcp_trio.transports.http.h11_server": "mcp_trio.transports.http.doors.h11",
    "mcp_trio.transports.http.asgi": "mcp_trio.transports.http.doors.asgi",
}


@pytest.mark.parametrize(("old", "new"), MOVED.items())
def test_the_old_name_warns_and_gives_the_same_objects(old: str, new: str) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        alias = importlib.import_module(old)
    moved = importlib.import_module(new)
    assert alias.__all__ == moved.__all__
    assert all(getattr(alias, name) is getattr(moved, name) for name in moved.__all__)
    assert f"`{old}`" in (ROOT / "CHANGELOG.md").read_text()
