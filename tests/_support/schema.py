"""Where the official MCP schemas are on this machine (``../shared/mcp-schema`` beside the checkout,
or ``$MCP_TRIO_SCHEMA_DIR``)."""

from __future__ import annotations

import os
from pathlib import Path

from tests._support.paths import ROOT


def schema_dir() -> Path | None:
    """The official schemas, if this machine has them (see codegen/_sources.py)."""
    env = os.environ.get("MCP_TRIO_SCHEMA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "mcp-schema")
    for c in candidates:
        if (c / "2025-11-25" / "schema.json").exists():
            return c
    return None
