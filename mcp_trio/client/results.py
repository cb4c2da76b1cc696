"""The results :class:`~mcp_trio.client.Client` returns: one set of types for every revision.

Whatever revision the session negotiated, ``call_tool`` returns a
:class:`CallToolResult`, ``list_all_tools`` a ``list[Tool]`` and so on.  These
are frozen :class:`msgspec.Struct`\\ s, so ``msgspec.to_builtins(result)`` gives
the wire JSON back (fields left at their default are omitted; a non-empty
``extra`` and an :class:`UnknownContent` come out under their own names).

Rules:

* Attribute names are the wire names (``structuredContent``, ``isError``,
  ``inputSchema`` ...), as in the specification and the generated wire types,
  so a field read in the specification is read the same way here and code
  written against the generated types keeps working; only ``_meta`` is
  ``meta`` (as there).  Snake-case aliases would give every field two names.
* Nothing is ever ``msgspec.UNSET``.  A field the peer left out (or that its
  revision does not have) is ``None``, except where an empty value means the
  same: ``isError`` is ``False`` (the specification's default), lists
  (``Prompt.arguments``, ``Tool.icons`` ...) are ``[]``, and ``extra`` is ``{}``.
* Content blocks are a union (:data:`ContentBlock`) told apart by class
  (``isinstance``) or by ``type``; a block of a type this package does not know
  is an :class:`UnknownContent` holding the block as sent.
* ``extra`` holds the members the peer sent that none of these types define
  (a newer revision's, an extension's), as sent.  Members the negotiated
  revision does not define but a later one does are read into their fields.
  The client logs a warning the first time it sees each (see ``strict`` in
  :func:`~mcp_trio.client.open_client` to reject them instead).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

from msgspec import Struct, field

__all__ = [
    "Annotations",
    "AudioContent",
    "BlobResourceContents",
    "CallToolResult",
    "CompleteResult",
    "Completion",
    "ContentBlock",
    "EmbeddedResource",
    "GetPromptResult",
    "Icon",
    "ImageContent",
    "ListPromptsResult",
    "ListResourceTemplatesResult",
    "ListResourcesResult",
    "ListToolsResult",
    "LogLevel",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "ReadResourceResult",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "Notice",
    "TextContent",
    "TextResourceContents",
    "Tool",
    "ToolAnnotations",
    "ToolExecution",
    "UnknownContent",
]


#: A log level (the RFC 5424 severities), for ``Client.set_log_level``.
LogLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]


class _Base(Struct, frozen=True, kw_only=True, omit_defaults=True, gc=False):
    pass


class Annotations(_Base, frozen=True):
    """Hints about a content block or resource for the client."""

    audience: list[Literal["user", "assistant"]] | None = None
    priority: float | None = None
    lastModified: str | None = None


class Icon(_Base, frozen=True):
    """An icon of a tool, resource or prompt (2025-11-25+)."""

    src: str
    mimeType: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None


# ---------------------------------------------------------------- content blocks


class TextContent(_Base, frozen=True, tag_field="type", tag="text"):
    type: ClassVar[Literal["text"]] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ImageContent(_Base, frozen=True, tag_field="type", tag="image"):
    type: ClassVar[Literal["image"]] = "image"
    data: str
    """Base64-encoded."""
    mimeType: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class AudioContent(_Base, frozen=True, tag_field="type", tag="audio"):
    type: ClassVar[Literal["audio"]] = "audio"
    data: str
    """Base64-encoded."""
    mimeType: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class TextResourceContents(_Base, frozen=True):
    uri: str
    text: str
    mimeType: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class BlobResourceContents(_Base, frozen=True):
    uri: str
    blob: str
    """Base64-encoded."""
    mimeType: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents


class EmbeddedResource(_Base, frozen=True, tag_field="type", tag="resource"):
    type: ClassVar[Literal["resource"]] = "resource"
    resource: ResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ResourceLink(_Base, frozen=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read (2025-06-18+)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    size: int | None = None
    icons: list[Icon] = []
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class UnknownContent(_Base, frozen=True):
    """A content block of a type this package does not know, kept as sent.

    Attributes:
        raw: The block as the peer sent it (its ``type`` included).
    """

    raw: dict[str, Any]

    @property
    def type(self) -> str:
        """The block's ``type``, as sent."""
        return str(self.raw.get("type"))


ContentBlock: TypeAlias = (
    TextContent | ImageContent | AudioContent | EmbeddedResource | ResourceLink | UnknownContent
)

# ------------------------------------------------------------------------ tools


class ToolAnnotations(_Base, frozen=True):
    title: str | None = None
    readOnlyHint: bool | None = None
    destructiveHint: bool | None = None
    idempotentHint: bool | None = None
    openWorldHint: bool | None = None


class ToolExecution(_Base, frozen=True):
    """How a tool may be run (2025-11-25, with tasks)."""

    taskSupport: str | None = None
    """``"forbidden"`` (the default when absent), ``"optional"`` or ``"required"``:
    whether a ``tools/call`` may (or must) ask for a task."""


class Tool(_Base, frozen=True):
    name: str
    inputSchema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    outputSchema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] = []
    execution: ToolExecution | None = None
    """2025-11-25 only."""
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class Notice(_Base, frozen=True):
    """The params of a notification a subscription delivers (:meth:`Client.listen`)."""

    uri: str | None = None
    """``notifications/resources/updated``: the resource that changed."""
    meta: dict[str, Any] = field(default_factory=dict, name="_meta")
    """Holds the subscription id (``io.modelcontextprotocol/subscriptionId``)."""
    extra: dict[str, Any] = {}


class ListToolsResult(_Base, frozen=True):
    tools: list[Tool]
    nextCursor: str | None = None
    ttlMs: int | None = None
    """2026-07-28: how long the result may be reused (the client's cache honours it)."""
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class CallToolResult(_Base, frozen=True):
    content: list[ContentBlock]
    structuredContent: Any = None
    """2025-06-18+: a JSON object up to 2025-11-25, any JSON value from 2026-07-28
    on (``None`` when absent, or JSON ``null``)."""
    isError: bool = False
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


# -------------------------------------------------------------------- resources


class Resource(_Base, frozen=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    size: int | None = None
    icons: list[Icon] = []
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ResourceTemplate(_Base, frozen=True):
    uriTemplate: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    icons: list[Icon] = []
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ListResourcesResult(_Base, frozen=True):
    resources: list[Resource]
    nextCursor: str | None = None
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ListResourceTemplatesResult(_Base, frozen=True):
    resourceTemplates: list[ResourceTemplate]
    nextCursor: str | None = None
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ReadResourceResult(_Base, frozen=True):
    contents: list[ResourceContents]
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


# ---------------------------------------------------------------------- prompts


class PromptArgument(_Base, frozen=True):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


class Prompt(_Base, frozen=True):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = []
    icons: list[Icon] = []
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ListPromptsResult(_Base, frozen=True):
    prompts: list[Prompt]
    nextCursor: str | None = None
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class PromptMessage(_Base, frozen=True):
    role: Literal["user", "assistant"]
    content: ContentBlock
    extra: dict[str, Any] = {}


class GetPromptResult(_Base, frozen=True):
    messages: list[PromptMessage]
    description: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


# ------------------------------------------------------------------ completions


class Completion(_Base, frozen=True):
    values: list[str]
    total: int | None = None
    hasMore: bool | None = None


class CompleteResult(_Base, frozen=True):
    completion: Completion
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}
