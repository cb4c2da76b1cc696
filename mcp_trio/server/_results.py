"""Shaping what handlers return into MCP results: content blocks (text, :class:`Image`,
:class:`Audio`), ``CallToolResult`` (with structured output), resource ``contents`` and
``GetPromptResult``."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import msgspec

from ..types import _versions

if TYPE_CHECKING:
    from ._signature import ToolSignature

__all__ = ["Audio", "Image", "prompt_result", "resource_contents", "tool_result"]


class Image:
    """Binary image content for a tool or prompt result."""

    def __init__(self, data: bytes, mime_type: str = "image/png") -> None:
        self.data = data
        self.mime_type = mime_type

    def block(self) -> dict[str, Any]:
        return {
            "type": "image",
            "data": base64.b64encode(self.data).decode(),
            "mimeType": self.mime_type,
        }


class Audio(Image):
    """Binary audio content for a tool or prompt result."""

    def __init__(self, data: bytes, mime_type: str = "audio/wav") -> None:
        super().__init__(data, mime_type)

    def block(self) -> dict[str, Any]:
        return {
            "type": "audio",
            "data": base64.b64encode(self.data).decode(),
            "mimeType": self.mime_type,
        }


def _block(value: Any) -> dict[str, Any] | None:
    if isinstance(value, Image):
        return value.block()
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    return None


def tool_result(value: Any, sig: ToolSignature | None = None) -> dict[str, Any]:
    """Turn a tool's return value into a ``CallToolResult`` dict.

    ``str`` → one text block; a content block (dict, Struct, :class:`Image`,
    :class:`Audio`) or a list of them → those blocks; a dict with ``content``
    → returned as is; anything else → its JSON as text.  With a structured
    signature the value also becomes ``structuredContent``.
    """
    if sig is not None:
        structured = sig.structured(value)
        shown = structured["result"] if sig.wraps_output else structured
        text = shown if isinstance(shown, str) else msgspec.json.encode(shown).decode()
        return {"content": [{"type": "text", "text": text}], "structuredContent": structured}
    if isinstance(value, msgspec.Struct):
        value = msgspec.to_builtins(value)
    if isinstance(value, dict) and "content" in value and "type" not in value:
        return value
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    block = _block(value)
    if block is not None:
        return {"content": [block]}
    if isinstance(value, list | tuple) and value and all(_block(v) is not None for v in value):
        return {"content": [_block(v) for v in value]}
    if value is None:
        return {"content": []}
    return {"content": [{"type": "text", "text": msgspec.json.encode(value).decode()}]}


def _text_result(text: str, version: str) -> Any:
    """What :func:`tool_result` makes of a ``str``, as the revision's typed
    ``CallToolResult``: valid by construction (``text`` is a ``str``), so the
    session core encodes it without converting a dict against the schema."""
    types = _versions.module_for(version)
    return types.CallToolResult(content=[types.TextContent(text=text)])


def resource_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """Turn a resource handler's return value into ``contents``."""
    if isinstance(value, str):
        item: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, bytes | bytearray):
        item = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode()}
    elif isinstance(value, list):
        return [msgspec.to_builtins(v) for v in value]
    elif isinstance(value, dict):
        item = {"uri": uri, **value}
    else:
        item = {"uri": uri, "text": msgspec.json.encode(value).decode()}
    if mime_type is not None and "mimeType" not in item:
        item["mimeType"] = mime_type
    return [item]


def prompt_result(value: Any, description: str | None) -> dict[str, Any]:
    """Turn a prompt handler's return value into a ``GetPromptResult`` dict."""
    if isinstance(value, dict) and "messages" in value:
        return value
    if isinstance(value, str):
        messages = [{"role": "user", "content": {"type": "text", "text": value}}]
    else:
        messages = []
        for m in value:
            if isinstance(m, msgspec.Struct):
                m = msgspec.to_builtins(m)
            if isinstance(m, str):
                m = {"role": "user", "content": {"type": "text", "text": m}}
            elif isinstance(m, Image):
                m = {"role": "user", "content": m.block()}
            elif "role" not in m:
                m = {"role": "user", "content": _block(m) or m}
            messages.append(m)
    result: dict[str, Any] = {"messages": messages}
    if description:
        result["description"] = description
    return result
