"""Capabilities the protocol removed are not advertised after their removal.

The 2025-11-25 ``tasks`` capability is replaced by the Tasks extension in
2026-07-28; a server that offers both keeps ``tasks`` for 2025-11-25 sessions
and leaves it out of ``server/discover``.  Checked on the raw bytes of the sans-IO
core (a decoded result would drop the unknown key and hide the mistake).
"""

from __future__ import annotations

import json
from typing import Any

from mcp_trio._core import Outgoing, SessionCore
from mcp_trio.types import _versions

MODERN = "2026-07-28"
EXT = _versions.TASKS_EXTENSION
TASKS = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
SERVER_CAPS: dict[str, Any] = {
    "tools": {"listChanged": True},
    "completions": {},
    "tasks": TASKS,
    "extensions": {EXT: {}},
    "vendor.example/custom": {"on": True},
}


def replies(events: list[Any]) -> list[Any]:
    return [json.loads(e.data) for e in events if isinstance(e, Outgoing)]


def request(id: int, method: str, params: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()


def server() -> SessionCore:
    return SessionCore("server", info={"name": "srv", "version": "1"}, capabilities=SERVER_CAPS)


def test_discover_leaves_out_the_removed_tasks_capability() -> None:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    [reply] = replies(server().receive(request(1, "server/discover", {"_meta": meta})))
    caps = reply["result"]["capabilities"]
    assert "tasks" not in caps
    assert caps == {k: v for k, v in SERVER_CAPS.items() if k != "tasks"}


def test_initialize_in_2025_11_25_keeps_it() -> None:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    }
    [reply] = replies(server().receive(request(1, "initialize", params)))
    assert reply["result"]["capabilities"] == SERVER_CAPS  # newer keys are harmless there


def test_a_modern_client_does_not_declare_the_removed_capability() -> None:
    cli = SessionCore(
        "client",
        info={"name": "cli", "version": "1"},
        capabilities={"sampling": {}, "tasks": {"list": {}}, "extensions": {EXT: {}}},
    )
    cli.use_modern(MODERN, server_capabilities={"tools": {}})
    _id, data = cli.start_request("tools/list")
    declared = json.loads(data)["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"]
    assert declared == {"sampling": {}, "extensions": {EXT: {}}}


def test_capabilities_for() -> None:
    caps = {"tasks": TASKS, "completions": {}, "x-custom": {}}
    assert _versions.capabilities_for(MODERN, caps, "server") == {"completions": {}, "x-custom": {}}
    assert _versions.capabilities_for(MODERN, caps, "client") == {"completions": {}, "x-custom": {}}
    for version in ("2025-11-25", "2024-11-05", "not-a-version"):
        # nothing was removed before 2026-07-28: the very same object comes back
        assert _versions.capabilities_for(version, caps, "server") is caps
