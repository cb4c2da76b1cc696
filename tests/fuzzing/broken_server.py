"""A stdio MCP server that advertises only ``tools``, for the capabilities campaign's tests.

``python broken_server.py MODE`` (standard library only).  It answers initialize, ping,
tools/list and tools/call; what it does with a request for a capability it did not advertise
(prompts, resources, completions, logging, tasks) depends on MODE:

* ``good``: -32601 Method not found, as most implementations do.
* ``silent``: no answer at all (JSON-RPC: every request gets a response).
* ``internal-error``: -32603, a standard code but not the one the spec's texts name.
"""

from __future__ import annotations

import json
import sys

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
KNOWN = {
    "ping": {},
    "tools/list": {"tools": []},
    "tools/call": {"content": [{"type": "text", "text": "ok"}], "isError": True},
}


def send(obj: object) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def answer(msg: dict[str, object]) -> None:
    rid, method = msg["id"], msg.get("method")
    if method == "initialize":
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": params.get("protocolVersion", "2025-11-25"),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "broken-capabilities", "version": "1"},
                },
            }
        )
    elif method in KNOWN:
        send({"jsonrpc": "2.0", "id": rid, "result": KNOWN[method]})
    elif (
        MODE == "silent"
        and isinstance(method, str)
        and method.split("/")[0] in ("prompts", "resources", "completion", "logging", "tasks")
    ):
        return
    else:
        code = -32603 if MODE == "internal-error" else -32601
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": f"{method}: not here"}})


def main() -> None:
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
            continue
        if isinstance(msg, dict) and "id" in msg and "method" in msg:
            answer(msg)


if __name__ == "__main__":
    main()
