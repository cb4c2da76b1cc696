"""The HTTP front doors every HTTP test runs through.

``h11`` and ``httptools`` are the lean door (one server, parsing with h11 or with llhttp);
``hypercorn`` is the ASGI one."""

from __future__ import annotations

#: Every front door of serve_http / mcp-trio serve --front-door.
DOORS = ["h11", "httptools", "hypercorn"]
#: The lean door's two parsers (serve_h11's ``parser``).
LEAN_DOORS = ["h11", "httptools"]


def is_lean(door: str) -> bool:
    """Whether ``door`` is the lean door (with either parser)."""
    return door in LEAN_DOORS
