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

from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeAlias

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
    "JSONValue",
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


JSONValue: TypeAlias = "dict[str, JSONValue] | list[JSONValue] | str | int | float | bool | None"
"""A JSON value as decoded: what :attr:`CallToolResult.data` is when the call gave no
``output_type``."""

if TYPE_CHECKING:
    from typing_extensions import TypeVar

    #: The type of :attr:`CallToolResult.data`: the ``output_type`` given to ``call_tool``
    #: (:data:`JSONValue` when none was).
    OutputT = TypeVar("OutputT", default=JSONValue)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")


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


# ------------------------------------------------------------ shared field sets
# The members most types end with (``annotations``, ``_meta``, ``extra``, a page's
# cursor and cache hints) are keyword-only: msgspec puts keyword-only fields after
# the others, so they stay last (on the wire, in ``to_builtins`` and in the
# constructor).


class _Extensible(_Base, frozen=True, kw_only=True):
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class _Annotated(_Base, frozen=True, kw_only=True):
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class _Page(_Base, frozen=True, kw_only=True):
    nextCursor: str | None = None
    ttlMs: int | None = None
    """2026-07-28: how long the result may be reused (the client's cache honours it)."""
    cacheScope: Literal["public", "private"] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class _Media(_Annotated, frozen=True):
    data: str
    """Base64-encoded."""
    mimeType: str


class _ResourceFields(_Extensible, frozen=True):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    size: int | None = None
    icons: list[Icon] = []
    annotations: Annotations | None = None


# ---------------------------------------------------------------- content blocks


class TextContent(_Annotated, frozen=True, tag_field="type", tag="text"):
    type: ClassVar[Literal["text"]] = "text"
    text: str


class ImageContent(_Media, frozen=True, tag_field="type", tag="image"):
    type: ClassVar[Literal["image"]] = "image"


class AudioContent(_Media, frozen=True, tag_field="type", tag="audio"):
    type: ClassVar[Literal["audio"]] = "audio"


class TextResourceContents(_Extensible, frozen=True):
    uri: str
    text: str
    mimeType: str | None = None


class BlobResourceContents(_Extensible, frozen=True):
    uri: str
    blob: str
    """Base64-encoded."""
    mimeType: str | None = None


ResourceContents: TypeAlias = TextResourceContents | BlobResourceContents


class EmbeddedResource(_Annotated, frozen=True, tag_field="type", tag="resource"):
    type: ClassVar[Literal["resource"]] = "resource"
    resource: ResourceContents


class ResourceLink(_ResourceFields, frozen=True, tag_field="type", tag="resource_link"):
    """A link to a resource the client may read (2025-06-18+)."""

    type: ClassVar[Literal["resource_link"]] = "resource_link"


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


class Tool(_Extensible, frozen=True):
    name: str
    inputSchema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    outputSchema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    icons: list[Icon] = []
    execution: ToolExecution | None = None
    """2025-11-25 only."""


class Notice(_Base, frozen=True):
    """The params of a notification a subscription delivers (:meth:`Client.listen`)."""

    uri: str | None = None
    """``notifications/resources/updated``: the resource that changed."""
    meta: dict[str, Any] = field(default_factory=dict, name="_meta")
    """Holds the subscription id (``io.modelcontextprotocol/subscriptionId``)."""
    extra: dict[str, Any] = {}


class ListToolsResult(_Page, frozen=True):
    tools: list[Tool]


class CallToolResult(_Extensible, Generic[OutputT], frozen=True, dict=True, gc=True):
    """The result of ``tools/call``; ``CallToolResult[Weather]`` when the call passed
    ``output_type=Weather``, whose :attr:`data` is then a ``Weather``.

    ``text`` and ``data`` are read from the fields, not sent: ``msgspec.to_builtins``
    gives the result as received.
    """

    content: list[ContentBlock]
    structuredContent: Any = None
    """2025-06-18+: a JSON object up to 2025-11-25, any JSON value from 2026-07-28
    on (``None`` when absent, or JSON ``null``)."""
    isError: bool = False

    @property
    def text(self) -> str:
        """The text of the :class:`TextContent` blocks of ``content``, joined with a
        newline (``"\\n"``) in their order; ``""`` when there are none.  Other blocks
        (images, resources ...) are left out."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def data(self) -> OutputT:
        """``structuredContent`` decoded into the ``output_type`` the call passed
        (``client.call_tool(name, args, output_type=Weather)``: a ``Weather``); without
        one, ``structuredContent`` as received, a :data:`JSONValue` (``None`` when
        absent)."""
        data: OutputT = vars(self).get("_data", self.structuredContent)
        return data

    def _with_data(self, data: Any) -> None:
        """Set what :attr:`data` gives (the client, once it has decoded it)."""
        vars(self)["_data"] = data


# -------------------------------------------------------------------- resources


class Resource(_ResourceFields, frozen=True):
    pass


class ResourceTemplate(_Extensible, frozen=True):
    uriTemplate: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    icons: list[Icon] = []
    annotations: Annotations | None = None


class ListResourcesResult(_Page, frozen=True):
    resources: list[Resource]


class ListResourceTemplatesResult(_Page, frozen=True):
    resourceTemplates: list[ResourceTemplate]


class ReadResourceResult(_Extensible, frozen=True):
    contents: list[ResourceContents]
    ttlMs: int | None = None
    cacheScope: Literal["public", "private"] | None = None


# ---------------------------------------------------------------------- prompts


class PromptArgument(_Base, frozen=True):
    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False


class Prompt(_Extensible, frozen=True):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = []
    icons: list[Icon] = []


class ListPromptsResult(_Page, frozen=True):
    prompts: list[Prompt]


class PromptMessage(_Base, frozen=True):
    role: Literal["user", "assistant"]
    content: ContentBlock
    extra: dict[str, Any] = {}


class GetPromptResult(_Extensible, frozen=True):
    messages: list[PromptMessage]
    description: str | None = None


# ------------------------------------------------------------------ completions


class Completion(_Base, frozen=True):
    values: list[str]
    total: int | None = None
    hasMore: bool | None = None


class CompleteResult(_Extensible, frozen=True):
    completion: Completion
