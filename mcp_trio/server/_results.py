"""Shaping what handlers return into MCP results: content blocks (text, :class:`Image`,
:class:`Audio`), ``CallToolResult`` (with structured output), resource ``contents`` and
``GetPromptResult`` (from :class:`UserMessage` / :class:`AssistantMessage` among others)."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import msgspec

from ..types import _versions

if TYPE_CHECKING:
    from ._signature import ToolSignature

__all__ = [
    "AssistantMessage",
    "Audio",
    "Image",
    "Message",
    "MessageContent",
    "UserMessage",
    "prompt_result",
    "resource_contents",
    "tool_result",
]


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


MessageContent: TypeAlias = str | Image | Mapping[str, Any]
"""What a prompt message holds: text, an :class:`Image` or :class:`Audio`, or one content
block as the specification writes it (an embedded resource, a resource link ...)."""


class Message:
    """One message of a prompt's result, for a prompt function to return (alone or in a
    list) instead of the protocol's dict: ``Message("Hi", role="assistant")``, or
    :class:`UserMessage` / :class:`AssistantMessage`.

    Attributes:
        content: A ``str`` (a text block), an :class:`Image` or :class:`Audio`, or a
            content block dict with its ``type`` (``{"type": "resource", ...}``).
        role: ``"user"`` or ``"assistant"``.
    """

    __slots__ = ("content", "role")

    def __init__(self, content: MessageContent, role: Literal["user", "assistant"] = "user") -> None:
        if role not in ("user", "assistant"):
            raise ValueError(f"a prompt message's role is 'user' or 'assistant', not {role!r}")
        if not isinstance(content, str | Image) and not (
            isinstance(content, Mapping) and isinstance(content.get("type"), str)
        ):
            raise TypeError(
                f"a prompt message holds a str, an Image, an Audio or a content block dict with a "
                f"'type', not {type(content).__name__}"
                + (" (a dict without 'type')" if isinstance(content, Mapping) else "")
                + "; for several blocks return several messages"
            )
        self.content = content
        self.role = role

    def wire(self) -> dict[str, Any]:
        """The ``PromptMessage`` as sent."""
        content = self.content
        if isinstance(content, str):
            block: dict[str, Any] = {"type": "text", "text": content}
        elif isinstance(content, Image):
            block = content.block()
        else:
            block = dict(content)
        return {"role": self.role, "content": block}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Message):
            return NotImplemented
        return (self.role, self.content) == (other.role, other.content)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.content!r}, role={self.role!r})"


class UserMessage(Message):
    """A message of the user, for a prompt's result: ``UserMessage("Review this code")``."""

    __slots__ = ()

    def __init__(self, content: MessageContent) -> None:
        super().__init__(content, "user")

    def __repr__(self) -> str:
        return f"UserMessage({self.content!r})"


class AssistantMessage(Message):
    """A message of the assistant, for a prompt's result: ``AssistantMessage("Gladly.")``."""

    __slots__ = ()

    def __init__(self, content: MessageContent) -> None:
        super().__init__(content, "assistant")

    def __repr__(self) -> str:
        return f"AssistantMessage({self.content!r})"


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
    """Turn a resource handler's return value into ``contents``: a ``str`` is text,
    ``bytes`` a base64 blob, anything else (a dict, a list, a number, a Struct or dataclass)
    its JSON as text, ``application/json`` unless the resource declares its ``mimeType``."""
    if isinstance(value, str):
        item: dict[str, Any] = {"uri": uri, "text": value}
    elif isinstance(value, bytes | bytearray):
        item = {"uri": uri, "blob": base64.b64encode(bytes(value)).decode()}
    else:
        try:
            text = msgspec.json.encode(value).decode()
        except (TypeError, msgspec.EncodeError) as exc:
            raise TypeError(
                f"resource {uri}: its function returned a {type(value).__name__}, which has no JSON "
                f"form ({exc}); return str, bytes or a JSON value (dict, list, Struct, dataclass ...)"
            ) from None
        item = {"uri": uri, "text": text, "mimeType": mime_type or "application/json"}
    if mime_type is not None and "mimeType" not in item:
        item["mimeType"] = mime_type
    return [item]


def prompt_result(value: Any, description: str | None) -> dict[str, Any]:
    """Turn a prompt handler's return value into a ``GetPromptResult`` dict."""
    if isinstance(value, dict) and "messages" in value:
        return value
    if isinstance(value, str | Message):
        value = [value]
    messages = []
    for m in value:
        if isinstance(m, Message):
            m = m.wire()
        elif isinstance(m, msgspec.Struct):
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
