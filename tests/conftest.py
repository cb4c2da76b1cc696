from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# Tests run the generator and examples from the source tree.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def schema_dir() -> Path | None:
    """The official schemas, if this machine has them (see codegen/_sources.py)."""
    env = os.environ.get("MCP_TRIO_SCHEMA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(ROOT.parent / "shared" / "mcp-schema")
    for c in candidates:
        if (c / "2025-11-25" / "schema.json").exists():
            return c
    return None


@pytest.fixture
def mcp_schema_dir() -> Path:
    found = schema_dir()
    if found is None:
        pytest.skip("the official MCP schemas are not available on this machine")
    return found
