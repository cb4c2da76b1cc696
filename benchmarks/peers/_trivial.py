"""What the trivial HTTP responders answer: the least work that still looks like MCP.

A POST body is parsed with the standard ``json`` module.  A request gets
``{"jsonrpc": "2.0", "id": <its id>, "result": {"content": [{"type": "text",
"text": "ok"}]}}`` (``initialize`` also gets an ``Mcp-Session-Id``); a
notification gets 202.  No session table, no validation: a ceiling.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import trio
from _args import parse

JSON_HEADERS = [(b"content-type", b"application/json")]


def answer(body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, headers, body) for one POST body."""
    try:
        message: Any = json.loads(body)
    except ValueError:
        return 400, JSON_HEADERS, b'{"error": "bad json"}'
    if not isinstance(message, dict) or "id" not in message:
        return 202, [], b""
    params = message.get("params")
    arguments = params.get("arguments") if isinstance(params, dict) else None
    text = arguments.get("text", "ok") if isinstance(arguments, dict) else "ok"
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    headers = list(JSON_HEADERS)
    if message.get("method") == "initialize":
        result = {
            "protocolVersion": message.get("params", {}).get("protocolVersion", "2025-11-25"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "trivial", "version": "1.0"},
        }
        headers.append((b"mcp-session-id", uuid.uuid4().hex.encode()))
    data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
    return 200, headers, data


def serve_http(name: str, connection: Callable[[trio.SocketStream], Awaitable[None]]) -> None:
    """Serve ``connection`` on the port of the command line (``http PORT``), for peer ``name``."""
    args = parse()
    if args.transport != "http":
        sys.exit(f"{name} speaks HTTP only")
    trio.run(partial(trio.serve_tcp, connection, args.port, host=args.host))
