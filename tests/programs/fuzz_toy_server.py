"""A deliberately broken stdio MCP server for the fuzzing tests (no mcp_trio inside).

``python fuzz_toy_server.py MODE``; it answers initialize, ping and tools/list,
and -32601 to other requests.  Its one flaw depends on MODE:

* ``answers-notifications``: it also answers every notification (id null).
* ``crashes``: it exits on a line that is not valid JSON.
* ``junk``: it prints a debug line to stdout before answering tools/list.
* ``internal-error``: -32603 Internal error instead of -32601 (a deviation, not a violation).
* ``no-id``: errors for input whose id cannot be read leave the id out (2025-11-25 and later ask
  for that; JSON-RPC and the earlier revisions want ``"id": null``).
* ``leaks-fds``: it opens a file per message and never closes it.
* ``leaks-memory``: it keeps 2 MB per message.
* ``answers-twice``: every answer to a request is sent twice.
* ``no-ping``: it never answers ping (everything else as ``good``).
* ``speaks-2024``: it answers every initialize with 2024-11-05, the one revision it speaks (legal).
* ``ignores-version``: it answers 2025-11-25 to an initialize for a version that does not exist
  (so it speaks 2025-11-25) and 2024-11-05 to any other, 2025-11-25 included (a MUST broken).
* ``drops-invalid``: it says nothing to input it cannot parse or that is no valid request
  (no -32700, no -32600), as several SDK servers over stdio do.
* ``good``: none.

``FUZZ_TOY_START_DELAY`` (seconds) makes it sleep before it reads its first line, like an
interpreter that takes a while to import on a loaded machine.
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "good"
time.sleep(float(os.environ.get("FUZZ_TOY_START_DELAY", "0")))


def send(obj: object) -> None:
    twice = MODE == "answers-twice" and isinstance(obj, dict) and obj.get("id") is not None
    sys.stdout.write((json.dumps(obj) + "\n") * (2 if twice else 1))
    sys.stdout.flush()


def error(id_: object, code: int, message: str) -> None:
    if MODE == "drops-invalid" and code in (-32700, -32600):
        return
    if MODE == "internal-error" and code == -32601:
        code = -32603
    if MODE == "no-id" and id_ is None:
        send({"jsonrpc": "2.0", "error": {"code": code, "message": message}})
        return
    send({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}})


def answered_version(asked: str) -> str:
    if MODE == "speaks-2024":
        return "2024-11-05"
    if MODE == "ignores-version":
        known = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
        return "2024-11-05" if asked in known else "2025-11-25"
    return "2025-11-25"


LEAKED: list[object] = []

for raw in sys.stdin.buffer:
    line = raw.strip()
    if not line:
        continue
    if MODE == "leaks-fds":
        LEAKED.append(open(__file__, "rb"))  # noqa: SIM115
    elif MODE == "leaks-memory":
        LEAKED.append(bytearray(b"x" * (2 * 1024 * 1024)))
    try:
        msg = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        if MODE == "crashes":
            sys.exit(3)
        error(None, -32700, "Parse error")
        continue
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0" or not isinstance(msg.get("method"), str):
        if isinstance(msg, dict) and "method" not in msg and ("result" in msg or "error" in msg):
            continue
        rid = msg.get("id") if isinstance(msg, dict) else None
        ok = isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
        error(rid if ok else None, -32600, "Invalid Request")
        continue
    method = msg["method"]
    if "id" not in msg:
        if MODE == "answers-notifications":
            send({"jsonrpc": "2.0", "id": None, "result": {}})
        continue
    rid = msg["id"]
    if not (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        error(None, -32600, "Invalid Request")
        continue
    params = msg.get("params")
    if params is not None and not isinstance(params, dict):
        error(rid, -32602, "Invalid params")
    elif method == "initialize":
        version = params.get("protocolVersion") if isinstance(params, dict) else None
        if (
            not isinstance(version, str)
            or not isinstance(params.get("clientInfo"), dict)
            or not isinstance(params.get("capabilities"), dict)
        ):
            error(rid, -32602, "Invalid params")
            continue
        send(
            {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": answered_version(version),
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "toy", "version": "1"},
                },
            }
        )
    elif method == "ping":
        if MODE == "no-ping":
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    elif method == "tools/list":
        if MODE == "junk":
            print("debug: listing tools")
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": []}})
    else:
        error(rid, -32601, f"Method not found: {method}")
