"""JSON-RPC messages as dicts, for tests that write the wire by hand."""

from __future__ import annotations

from typing import Any


def request(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    """A request (``params`` left out when None)."""
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": method,
        **({"params": params} if params is not None else {}),
    }


def note(method: str, params: Any = None) -> dict[str, Any]:
    """A notification (``params`` left out when None)."""
    return {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}


def result(id: Any, value: Any) -> dict[str, Any]:
    """A result response."""
    return {"jsonrpc": "2.0", "id": id, "result": value}
