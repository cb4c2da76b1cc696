"""A deliberately broken MCP client over Streamable HTTP (standard library only), for the tests.

Usage: broken_client.py MODE URL.  It initializes, lists the tools and answers every request
the server sends on the response stream, then ends the session.  MODE ``good`` does all of it
right; ``twice`` answers every server request two times (MCP: exactly one response).
"""

from __future__ import annotations

import json
import sys
import urllib.request
from typing import Any

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, message: dict[str, Any], headers: dict[str, str]) -> Any:
    req = urllib.request.Request(url, json.dumps(message).encode(), {**HEADERS, **headers}, method="POST")
    return urllib.request.urlopen(req, timeout=10)


def events(response: Any) -> list[Any]:
    """Every SSE data payload of a response stream, in order (the stream ends with the answer)."""
    out, data = [], []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            out.append("\n".join(data))
            data = []
    return out


def main(mode: str, url: str) -> int:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                       "clientInfo": {"name": "broken", "version": "1"}}}
    with post(url, init, {}) as resp:
        session = resp.headers["Mcp-Session-Id"]
        version = json.loads(resp.read())["result"]["protocolVersion"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": version}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).close()
    with post(url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers) as resp:
        for data in events(resp):
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            if isinstance(msg, dict) and "method" in msg and "id" in msg:
                answer = {"jsonrpc": "2.0", "id": msg["id"],
                          "result": {"roots": []} if msg["method"] == "roots/list" else {}}
                if msg["method"] not in ("ping", "roots/list"):
                    answer = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
                for _ in range(2 if mode == "twice" else 1):
                    post(url, answer, headers).close()
    req = urllib.request.Request(url, headers=headers, method="DELETE")
    urllib.request.urlopen(req, timeout=10).close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[-1]))
