"""``examples/everything.py`` behind ``proxy()``: the server ``mcp-trio serve`` loads for the
conformance suite through a proxy (tests/conformance/test_proxy_suite.py).  The upstream runs over
stdio as a subprocess; ``MCP_PROXY_VERSION`` names the one revision the proxy negotiates with it
(and so speaks to its clients)."""

import os
import sys
from pathlib import Path

from mcp_trio.proxy import proxy

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

server = proxy(
    [sys.executable, str(ROOT / "examples" / "everything.py")],
    env=ENV,
    versions=[os.environ.get("MCP_PROXY_VERSION", "2025-11-25")],
)
