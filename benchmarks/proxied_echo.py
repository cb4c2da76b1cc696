"""``benchmarks/echo_server.py`` behind ``proxy()``, for benchmarks/bench_proxy.py: over stdio (the
echo server started as the proxy's child) or, with ``MCP_PROXY_UPSTREAM`` set to its URL, over
Streamable HTTP.  The proxy speaks the load generator's revision (2025-11-25).  ``MCP_PROXY_STDIO_RELAY=0``:
``stdio_relay=False`` (every call through the proxy's sessions)."""

import os
import sys
from pathlib import Path

from mcp_trio.proxy import proxy

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = os.environ.get("MCP_PROXY_UPSTREAM")
ECHO = [sys.executable, "-m", "mcp_trio._cli", "serve", str(ROOT / "benchmarks" / "echo_server.py")]

if UPSTREAM:
    server = proxy(UPSTREAM, versions=["2025-11-25"])
else:
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    relay = os.environ.get("MCP_PROXY_STDIO_RELAY") != "0"
    server = proxy(ECHO, env=env, versions=["2025-11-25"], stdio_relay=relay)
