"""Opaque pagination cursors: a kind prefix and a position, URL-safe base64."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .. import _jsonrpc as rpc
from .._exceptions import McpError

__all__ = ["decode_cursor", "encode_cursor", "page"]


def encode_cursor(kind: str, position: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{position}".encode()).decode()


def decode_cursor(cursor: Any, kind: str, upper: int) -> int:
    """The position in ``cursor``; -32602 unless it is one of ours in ``1..upper``."""
    try:
        text = base64.urlsafe_b64decode(str(cursor).encode()).decode()
        prefix, sep, number = text.partition(":")
        if prefix != kind or not sep:
            raise ValueError
        position = int(number)
    except (ValueError, UnicodeDecodeError, binascii.Error):
        raise McpError(rpc.INVALID_PARAMS, f"Invalid cursor: {cursor!r}") from None
    if not 0 < position <= upper:
        raise McpError(rpc.INVALID_PARAMS, f"Invalid cursor: {cursor!r}")
    return position


def page(params: Any, items: list[dict[str, Any]], key: str, size: int) -> dict[str, Any]:
    """The page of ``items`` (as ``key``) that the ``cursor`` of the list request's ``params``
    asks for, at most ``size`` of them, with the ``nextCursor`` of the next page if any."""
    cursor = getattr(params, "cursor", None)  # (a str, None or UNSET)
    start = 0
    if isinstance(cursor, str):
        start = decode_cursor(cursor, "o", len(items))
    end = start + size
    result: dict[str, Any] = {key: items[start:end]}
    if end < len(items):
        result["nextCursor"] = encode_cursor("o", end)
    return result
