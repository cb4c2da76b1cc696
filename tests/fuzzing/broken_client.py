"""A deliberately broken MCP client over Streamable HTTP (standard library only), for the tests.

Usage: broken_client.py MODE URL.  It initializes, lists the tools and answers every request
the server sends on the response stream, then ends the session.  MODE ``good`` does all of it
right; ``twice`` answers every server request two times (MCP: exactly one response);
``obliging`` answers every server request with an empty result, even those of capabilities it
never declared (it declares ``roots`` only); ``batch`` sends ``tools/list`` and ``ping`` as one
JSON-RPC batch (right in 2025-03-26 only) and needs both answers; ``lenient``, ``no-batches`` and
``chatty`` mishandle what no valid id names (see :func:`answers`); ``fragile`` exits with status 3
on a request whose id is no string or integer.  ``stateless`` speaks
2026-07-28 (``server/discover``, then ``tools/list``, each with its ``_meta`` and the
``MCP-Protocol-Version`` and ``Mcp-Method`` headers); ``stateless-no-method`` leaves out
``Mcp-Method`` (a header every 2026-07-28 request MUST carry).
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post(url: str, message: Any, headers: dict[str, str]) -> Any:
    req = urllib.request.Request(url, json.dumps(message).encode(), {**HEADERS, **headers}, method="POST")
    return urllib.request.urlopen(req, timeout=10)


def events(response: Any) -> Iterator[str]:
    """Every SSE data payload of a response stream, in order, each as it comes (the stream ends
    with the answer)."""
    data: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line.startswith("data:"):
            data.append(line[5:].lstrip(" "))
        elif not line and data:
            yield "\n".join(data)
            data = []


def stateless(url: str, method_header: bool) -> int:
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    for n, method in enumerate(("server/discover", "tools/list"), 1):
        headers = {"MCP-Protocol-Version": "2026-07-28", **({"Mcp-Method": method} if method_header else {})}
        with post(
            url, {"jsonrpc": "2.0", "id": n, "method": method, "params": {"_meta": meta}}, headers
        ) as resp:
            stream = "event-stream" in resp.headers.get("Content-Type", "")
            answers = list(events(resp)) if stream else [resp.read()]
        if not any(json.loads(a).get("id") == n for a in answers):
            return 1
    return 0


def answers(msg: Any, mode: str) -> list[Any]:
    """What this client answers to one message of the server: a request with its own id gets an
    answer; one whose id is no string or integer, and an empty batch, get -32600 with id null; a
    batch's members are answered one by one (``batched``: in one array).  ``lenient`` answers a
    request with an invalid id with a result all the same; ``no-batches`` ignores every batch;
    ``chatty`` answers a request without an id (a notification) with -32600 too."""
    invalid = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "invalid request"}}
    if isinstance(msg, list):
        if mode == "no-batches":
            return []
        return [a for m in msg for a in answers(m, mode)] if msg else [invalid]
    if not isinstance(msg, dict) or "method" not in msg:
        return []
    if "id" not in msg:
        return [invalid] if mode == "chatty" and msg["method"] == "ping" else []
    rid = msg["id"]
    if (isinstance(rid, bool) or not isinstance(rid, int | str)) and mode != "lenient":
        return [invalid]
    if msg["method"] not in ("ping", "roots/list") and mode != "obliging":
        return [{"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}}]
    return [{"jsonrpc": "2.0", "id": rid, "result": {"roots": []} if msg["method"] == "roots/list" else {}}]


def main(mode: str, url: str) -> int:
    if mode.startswith("stateless"):
        return stateless(url, method_header=mode == "stateless")
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "broken", "version": "1"},
        },
    }
    with post(url, init, {}) as resp:
        session = resp.headers["Mcp-Session-Id"]
        version = json.loads(resp.read())["result"]["protocolVersion"]
    headers = {"Mcp-Session-Id": session, "MCP-Protocol-Version": version}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers).close()
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    body: Any = [tools_list, {"jsonrpc": "2.0", "id": 3, "method": "ping"}] if mode == "batch" else tools_list
    answered: set[Any] = set()
    with post(url, body, headers) as resp:
        for data in events(resp):
            try:
                msg = json.loads(data)
            except ValueError:
                continue
            if isinstance(msg, dict) and "method" not in msg:
                answered.add(msg.get("id"))
            if (
                mode == "fragile"
                and isinstance(msg, dict)
                and "id" in msg
                and (isinstance(msg["id"], bool) or not isinstance(msg["id"], int | str))
            ):
                return 3  # (dies of a request whose id is no string or integer)
            given = answers(msg, mode)
            if mode == "batched" and isinstance(msg, list) and msg:
                try:  # (a revision without batches refuses it: 400)
                    post(url, given, headers).close()
                except urllib.error.HTTPError:
                    pass
                continue
            for answer in given:
                for _ in range(2 if mode == "twice" else 1):
                    post(url, answer, headers).close()
    if mode == "batch" and answered != {2, 3}:
        print(f"batch answers: {sorted(answered)}", file=sys.stderr)
        return 1
    req = urllib.request.Request(url, headers=headers, method="DELETE")
    urllib.request.urlopen(req, timeout=10).close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[-1]))
