"""``examples/everything.py`` behind ``proxy()``: the server ``mcp-trio serve`` loads for the
conformance suite through a proxy (tests/conformance/test_proxy_suite.py).  The upstream runs over
stdio as a subprocess; ``MCP_PROXY_OFFER`` lists (comma-separated) the revisions the proxy offers
its clients, each over an upstream session of its own."""

import os
import sys
from pathlib import Path

from mcp_trio.proxy import proxy

ROOT = Path(__file__).resolve().parents[2]
ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

server = proxy(
    [sys.executable, str(ROOT / "examples" / "everything.py")],
    env=ENV,
    offer=os.environ.get("MCP_PROXY_OFFER", "2025-11-25").split(","),
)
