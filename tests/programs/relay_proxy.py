"""``tests/programs/relay_upstream.py`` behind ``proxy()``, served over stdio, for the tests of
the stdio relay.  ``RELAY_TIMEOUT``: the proxy's timeout; ``RELAY_OFF=1``: ``stdio_relay=False``;
``RELAY_METRICS``: a file the proxy's ``mcp_upstream_requests_total``,
``mcp_upstream_relayed_total`` and ``mcp_requests_*`` lines are written to when its input
ends; ``RELAY_MIDDLEWARE=1``: a middleware on the proxy; ``RELAY_UPSTREAM``: another upstream
command line (a JSON list).
Run as a script, or with ``mcp-trio serve``."""

import json
import os
import sys
from pathlib import Path

import trio

from mcp_trio.middleware import CallNext, RequestInfo, Result
from mcp_trio.proxy import proxy
from mcp_trio.server import prometheus_text

ROOT = Path(__file__).resolve().parent.parent.parent
UPSTREAM = json.loads(os.environ.get("RELAY_UPSTREAM", "null")) or [
    sys.executable,
    str(ROOT / "tests" / "programs" / "relay_upstream.py"),
]

server = proxy(
    UPSTREAM,
    timeout=float(os.environ.get("RELAY_TIMEOUT", "60")),
    stdio_relay=os.environ.get("RELAY_OFF") != "1",
    backoff=0.05,
)


async def passing(request: RequestInfo, call_next: CallNext) -> Result:
    return await call_next(request)


if os.environ.get("RELAY_MIDDLEWARE") == "1":
    server.add_middleware(passing)


async def main() -> None:
    await server.serve_stdio()
    metrics = os.environ.get("RELAY_METRICS")
    if metrics:
        wanted = ("mcp_upstream_re", "mcp_requests_")
        lines = [line for line in prometheus_text(server).splitlines() if line.startswith(wanted)]
        await trio.Path(metrics).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    trio.run(main)
