"""A deliberately broken MCP client over stdio (standard library only), for the tests.

Usage: broken_stdio_client.py MODE SERVER_COMMAND...  It launches the server, initializes,
lists the tools and answers every request the server sends meanwhile, then closes the
server's stdin and waits for it.  MODE ``good`` does all of it right; ``twice`` answers
every server request two times (MCP: exactly one response); ``batch`` (2025-03-26) sends
``tools/list`` and ``ping`` as one JSON-RPC batch and needs one array holding both answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


class Peer:
    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def send(self, message: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self) -> Any:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise EOFError("the server closed its stdout")
        return json.loads(line)


def until_answered(peer: Peer, ids: set[Any], mode: str) -> list[Any]:
    """Read until every id of ``ids`` is answered (a batch answer counts for its members),
    answering the server's requests on the way; returns what answered them."""
    got = []
    while ids:
        message = peer.receive()
        waiting = len(ids)
        for m in message if isinstance(message, list) else [message]:
            if "method" in m and "id" in m:
                answer = {
                    "jsonrpc": "2.0",
                    "id": m["id"],
                    "result": {"roots": []} if m["method"] == "roots/list" else {},
                }
                if m["method"] not in ("ping", "roots/list"):
                    answer = {"jsonrpc": "2.0", "id": m["id"], "error": {"code": -32601, "message": "no"}}
                for _ in range(2 if mode == "twice" else 1):
                    peer.send(answer)
            elif m.get("id") in ids:
                ids.discard(m["id"])
        if len(ids) < waiting:
            got.append(message)
    return got


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    peer = Peer(argv)
    version = "2025-03-26" if mode == "batch" else "2025-11-25"
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "broken", "version": "1"},
            },
        }
    )
    until_answered(peer, {1}, mode)
    peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    if mode == "batch":
        peer.send(
            [
                {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                {"jsonrpc": "2.0", "id": 3, "method": "ping"},
            ]
        )
        [answer] = until_answered(peer, {2, 3}, mode)
        if not isinstance(answer, list) or {m["id"] for m in answer} != {2, 3}:
            return 1
    else:
        peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        until_answered(peer, {2}, mode)
    assert peer.proc.stdin is not None
    peer.proc.stdin.close()
    return 0 if peer.proc.wait(10) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
