"""mcp_trio.types (package surface) and mcp_trio.types._versions."""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

import msgspec
import pytest

import mcp_trio.types
from mcp_trio.types import _versions
from tests._support.types import REVISIONS


def test_supported_versions() -> None:
    assert _versions.SUPPORTED_VERSIONS == tuple(reversed(REVISIONS))  # newest first
    assert _versions.LATEST_VERSION == "2026-07-28" == _versions.SUPPORTED_VERSIONS[0]


@pytest.mark.parametrize("rev", REVISIONS)
def test_module_for(rev: str) -> None:
    mod = _versions.module_for(rev)
    assert isinstance(mod, ModuleType)
    assert mod.PROTOCOL_VERSION == rev
    assert mod is getattr(mcp_trio.types, "v" + rev.replace("-", "_"))


def test_module_for_unknown_version() -> None:
    with pytest.raises(ValueError, match="unsupported protocol version '2023-01-01'"):
        _versions.module_for("2023-01-01")


def test_eras() -> None:
    assert [v for v in REVISIONS if _versions.is_stateless(v)] == ["2026-07-28"]
    assert _versions.is_stateless("2027-01-01")
    assert _versions.is_stateless("draft")
    assert not _versions.is_stateless("garbage")
    assert [v for v in REVISIONS if _versions.supports_batching(v)] == ["2025-03-26"]


def test_decoder_for_is_cached() -> None:
    mod = _versions.module_for("2025-11-25")
    decoder = _versions.decoder_for(mod.CallToolResult)
    assert decoder is _versions.decoder_for(mod.CallToolResult)
    assert isinstance(decoder, msgspec.json.Decoder)
    result = decoder.decode(b'{"content": [{"type": "text", "text": "x"}]}')
    assert _versions.encode(result) == b'{"content":[{"type":"text","text":"x"}]}'
    assert _versions.encoder is _versions.encoder


def test_package_exports() -> None:
    from mcp_trio.types import UNSET, MethodSpec, RequestId, UnsetType

    assert UNSET is msgspec.UNSET and UnsetType is msgspec.UnsetType
    assert RequestId == int | str
    assert MethodSpec.__name__ == "MethodSpec"
    for name in ("v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25", "v2026_07_28"):
        assert name in dir(mcp_trio.types)
        assert name in mcp_trio.types.__all__
    with pytest.raises(AttributeError):
        mcp_trio.types.v1999_01_01  # noqa: B018


def test_revision_modules_load_lazily() -> None:
    name = "mcp_trio.types.v2025_03_26"
    saved = sys.modules.pop(name, None)
    saved_attr = mcp_trio.types.__dict__.pop("v2025_03_26", None)
    try:
        importlib.reload(mcp_trio.types)
        assert name not in sys.modules
        mod = mcp_trio.types.v2025_03_26
        assert name in sys.modules and mod.PROTOCOL_VERSION == "2025-03-26"
    finally:
        if saved is not None:
            sys.modules[name] = saved
            mcp_trio.types.v2025_03_26 = saved  # type: ignore[attr-defined]
        elif saved_attr is not None:
            mcp_trio.types.v2025_03_26 = saved_attr  # type: ignore[attr-defined]
