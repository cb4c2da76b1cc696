"""A stdio MCP server (2025-06-18, raw JSON-RPC, no library) that misbehaves on request, for the
proxy's tests: tool ``silent`` is never answered, ``twice`` is answered twice, ``flood`` sends
5,000 log notifications before its answer, ``exit`` ends the process at once (a lost upstream),
``pid`` answers with the process id and the number of ``initialize`` requests it saw,
``malformed`` answers with a result that is not a CallToolResult (content not a list)."""

import json
import os
import sys

from _raw_jsonrpc import send, text

initialized = 0


TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in ("silent", "twice", "flood", "exit", "pid", "malformed")
]

for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if message_id is None:
        continue
    if method == "initialize":
        initialized += 1
        result = {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "misbehaving", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": message_id, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = message["params"]["name"]
        if name == "silent":
            continue
        if name == "twice":
            text(message_id, "first")
            text(message_id, "second")
        elif name == "flood":
            for n in range(5000):
                note = {"level": "info", "data": f"flood {n}"}
                send({"jsonrpc": "2.0", "method": "notifications/message", "params": note})
            text(message_id, "flooded")
        elif name == "malformed":
            send({"jsonrpc": "2.0", "id": message_id, "result": {"content": "not a list"}})
        elif name == "exit":
            os._exit(3)
        else:
            text(message_id, f"{os.getpid()} {initialized}")
    else:
        send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32601, "message": "not here"}})
