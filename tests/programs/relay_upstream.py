"""A stdio MCP server (2025-11-25, raw JSON-RPC, no library) for the tests of a proxy's stdio
relay: it tells what it saw.  Tools: ``seen`` answers with the request's id as it arrived (JSON)
and the process id; ``silent`` is never answered; ``slow`` is answered after 0.5 s; ``cancelled``
lists the ``requestId`` of every ``notifications/cancelled`` received; ``exit`` ends the process;
``invalid`` answers with both a result and an error, ``badversion`` with a number for
``jsonrpc``; ``log`` sends a log message, then answers;
``ask`` asks the client for a sampling and answers with its text; ``progress`` reports progress
when the request carries a progress token; ``flood`` sends 5,000 log messages, then answers with
the request's id; ``late`` is answered after 1 s; ``nap`` sleeps 2 s (reading nothing meanwhile),
then answers.  ``slow``, ``late`` and ``nap`` answer with the id as ``seen`` does.  One resource,
``test://seen``, read as the request's id."""

import json
import os
import sys
import time

from _raw_jsonrpc import send, text

cancelled = []
asking = {}  # (the id of our ask -> the id of the call waiting for it)


TOOLS = [
    {"name": name, "inputSchema": {"type": "object"}}
    for name in (
        "seen",
        "silent",
        "slow",
        "cancelled",
        "exit",
        "invalid",
        "log",
        "ask",
        "progress",
        "flood",
        "late",
        "nap",
    )
]


def call(message_id, params):
    name = params["name"]
    if name == "seen":
        text(message_id, json.dumps({"id": message_id, "pid": os.getpid()}))
    elif name == "silent":
        pass
    elif name in ("slow", "late", "nap"):
        time.sleep({"slow": 0.5, "late": 1.0, "nap": 2.0}[name])
        text(message_id, json.dumps({"id": message_id, "pid": os.getpid()}))
    elif name == "cancelled":
        text(message_id, json.dumps(cancelled))
    elif name == "exit":
        os._exit(3)
    elif name == "invalid":
        send(
            {
                "jsonrpc": "2.0",
                "id": message_id,
                "result": {"content": []},
                "error": {"code": 1, "message": "x"},
            }
        )
    elif name == "badversion":
        send({"jsonrpc": 2.0, "id": message_id, "result": {"content": []}})
    elif name == "log":
        send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "hello"},
            }
        )
        text(message_id, "logged")
    elif name == "ask":
        own = f"ask-{len(asking) + 1}"
        asking[own] = message_id
        ask = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
        send({"jsonrpc": "2.0", "id": own, "method": "sampling/createMessage", "params": ask})
    elif name == "flood":
        for n in range(5000):
            send(
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": n}}
            )
        text(message_id, json.dumps({"id": message_id, "pid": os.getpid()}))
    elif name == "progress":
        token = params.get("_meta", {}).get("progressToken")
        if token is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1},
                }
            )
        text(message_id, f"progress {token is not None}")


for line in sys.stdin:
    message = json.loads(line)
    method, message_id = message.get("method"), message.get("id")
    if method == "notifications/cancelled":
        cancelled.append(message["params"]["requestId"])
    elif method is None and message_id in asking:  # (the answer to our ask)
        text(asking.pop(message_id), message["result"]["content"]["text"])
    elif message_id is None:
        continue
    elif method == "initialize":
        result = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}, "resources": {}, "logging": {}},
            "serverInfo": {"name": "relay-upstream", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": message_id, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": message_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        call(message_id, message["params"])
    elif method == "resources/read":
        contents = [{"uri": message["params"]["uri"], "text": json.dumps(message_id)}]
        send({"jsonrpc": "2.0", "id": message_id, "result": {"contents": contents}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": message_id, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": message_id, "error": {"code": -32601, "message": "not here"}})
