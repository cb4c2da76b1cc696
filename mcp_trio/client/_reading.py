"""Reading a result into the types of :mod:`.results`; tolerant of a peer's extras, or strict.

The params of the server's asks (sampling, elicitation) are read the same
way into the types of :mod:`.asks` (:func:`ask_params`).

Rules:

* The session hands the result over as a plain ``dict`` (see ``result_type``
  of ``Session.request``); each object in it is read once into its type.
  Plain objects are converted by msgspec, which checks every member's type;
  the members holding content blocks, resource contents, prompt messages and
  list items are read here, one by one.
* A member the negotiated revision does not define for an object, a content
  block of a type it does not define (``resource_link`` in 2025-03-26), and a
  content block of a type no revision defines are *deviations*.  Tolerant (the
  default): read anyway (into its field if a later revision defines it, into
  ``extra`` or an :class:`UnknownContent` otherwise) and logged, as a warning
  the first time this client sees it, at debug level after.  Strict: the call
  fails with :class:`RemoteProtocolError`.
* Anything else wrong (a missing member, a member of the wrong type, a block
  without a ``type``) fails the call either way, naming the JSON path.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any, TypeVar, cast

import msgspec

from .._exceptions import RemoteProtocolError
from ..types import _versions
from .asks import (
    CreateMessageParams,
    SamplingContent,
    SamplingMessage,
    ToolResultContent,
    ToolUseContent,
)
from .results import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
    UnknownContent,
)

log = logging.getLogger("mcp_trio.client")

T = TypeVar("T")
ROOT = "$.result"

_BLOCKS: dict[Any, type] = {
    "text": TextContent,
    "image": ImageContent,
    "audio": AudioContent,
    "resource": EmbeddedResource,
    "resource_link": ResourceLink,
}


class Reader:
    """What reading one result needs: the revision, the mode, the warnings already given."""

    __slots__ = ("version", "strict", "method", "warned")

    def __init__(self, version: str, strict: bool, method: str, warned: set[str]) -> None:
        self.version = version
        self.strict = strict
        self.method = method
        self.warned = warned

    def fail(self, message: str, path: str) -> RemoteProtocolError:
        return RemoteProtocolError(f"invalid result for {self.method}: {message} - at `{path}`")

    def deviation(self, message: str, path: str) -> None:
        """A peer's extra: fatal when strict, logged (once as a warning) otherwise."""
        if self.strict:
            raise self.fail(message + " (strict)", path)
        key = f"{self.method}: {message}"
        if key in self.warned:
            log.debug("%s - at `%s`", key, path)
            return
        self.warned.add(key)
        log.warning("%s - at `%s`; kept (this is logged once; strict=True rejects it)", key, path)


# ------------------------------------------------------------------ the known members


@functools.cache
def _own_members(cls: type) -> frozenset[str]:
    """The wire members ``cls`` reads (``resultType`` is read and dropped)."""
    names = {f.encode_name for f in msgspec.structs.fields(cls) if f.name != "extra"}
    return frozenset(names | {"type", "resultType"})


@functools.cache
def _revision_members(version: str, name: str) -> frozenset[str] | None:
    """The wire members of ``name`` in ``version`` (``None``: no such type there)."""
    wire = getattr(_versions.module_for(version), name, None)
    if wire is None or not hasattr(wire, "__struct_encode_fields__"):
        return None
    members = set(wire.__struct_encode_fields__)
    if wire.__struct_config__.tag_field is not None:
        members.add(wire.__struct_config__.tag_field)
    return frozenset(members)


# Members holding what msgspec cannot read alone, read by this module instead.
_NESTED: dict[type, dict[str, Any]] = {
    CallToolResult: {"content": list[Any]},
    EmbeddedResource: {"resource": Any},
    PromptMessage: {"content": Any},
    GetPromptResult: {"messages": list[Any]},
    ReadResourceResult: {"contents": list[Any]},
    ListToolsResult: {"tools": list[Any]},
    ListResourcesResult: {"resources": list[Any]},
    ListResourceTemplatesResult: {"resourceTemplates": list[Any]},
    ListPromptsResult: {"prompts": list[Any]},
    CreateMessageParams: {"messages": list[Any]},
    SamplingMessage: {"content": Any},
    ToolResultContent: {"content": list[Any]},
}


@functools.cache
def _shallow(cls: Any) -> type:
    """``cls`` with its nested members typed ``Any`` (msgspec checks the rest)."""
    nested = _NESTED[cls]
    members: list[Any] = []
    rename = {}
    for f in msgspec.structs.fields(cls):
        if f.name == "extra":
            continue
        rename[f.name] = f.encode_name
        kind = nested.get(f.name, f.type)
        if f.required:
            members.append((f.name, kind))
        elif f.default is not msgspec.NODEFAULT:
            members.append((f.name, kind, f.default))
        else:
            members.append((f.name, kind, msgspec.field(default_factory=f.default_factory)))
    return msgspec.defstruct(f"_Shallow{cls.__name__}", members, kw_only=True, rename=rename, gc=False)


def _extra(reader: Reader, data: Any, cls: type, path: str) -> dict[str, Any] | None:
    """Check ``data``'s members against the revision; the members ``cls`` does not read."""
    if type(data) is not dict:
        raise reader.fail(f"expected an object, got {type(data).__name__}", path)
    # a type the revision lacks (reported by the caller): the members of ours
    known = _revision_members(reader.version, cls.__name__) or _own_members(cls)
    unknown = data.keys() - known
    if not unknown:
        return None
    names = ", ".join(map(repr, sorted(unknown)))
    reader.deviation(f"{names} not defined for {cls.__name__} in {reader.version}", path)
    own = _own_members(cls)
    return {k: data[k] for k in unknown if k not in own} or None


def _convert(reader: Reader, data: Any, cls: type[T], path: str) -> T:
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError as exc:
        message = f"invalid result for {reader.method}: {_versions.error_message(exc, path)}"
        raise RemoteProtocolError(message) from None


def read(reader: Reader, data: Any, cls: type[T], path: str = ROOT) -> T:
    """``data`` (one object of a result) as ``cls``."""
    extra = _extra(reader, data, cls, path)
    if extra is not None:
        data = {k: v for k, v in data.items() if k not in extra}
    nested = _NESTED.get(cls)
    if nested is None:
        obj = _convert(reader, data, cls, path)
        return obj if extra is None else msgspec.structs.replace(obj, extra=extra)  # type: ignore[type-var]
    shallow: Any = cls  # a class: hashable
    members = msgspec.structs.asdict(_convert(reader, data, _shallow(shallow), path))
    for name in nested:
        members[name] = _READERS[(cls, name)](reader, members[name], f"{path}.{name}")
    if extra is not None:
        members["extra"] = extra
    return cls(**members)


def _items(cls: type) -> Callable[[Reader, Any, str], list[Any]]:
    def read_items(reader: Reader, items: list[Any], path: str) -> list[Any]:
        return [read(reader, item, cls, f"{path}[{i}]") for i, item in enumerate(items)]

    return read_items


def block(reader: Reader, data: Any, path: str) -> ContentBlock:
    """One content block: its type's class, or :class:`UnknownContent`."""
    if type(data) is not dict:
        raise reader.fail(f"expected a content block, got {type(data).__name__}", path)
    kind = data.get("type")
    cls = _BLOCKS.get(kind)
    if cls is None:
        if not isinstance(kind, str):
            raise reader.fail("a content block without a string `type`", path)
        reader.deviation(f"unknown content type {kind!r}", path)
        return UnknownContent(raw=data)
    if _revision_members(reader.version, cls.__name__) is None:
        reader.deviation(f"content type {kind!r} is not defined in {reader.version}", path)
    result: ContentBlock = read(reader, data, cls, path)
    return result


def _blocks(reader: Reader, items: list[Any], path: str) -> list[ContentBlock]:
    return [block(reader, item, f"{path}[{i}]") for i, item in enumerate(items)]


_PLAIN_TEXT = frozenset({"type", "text"})
_OPTIONAL_DICT = (dict, type(None))


def call_tool_result(reader: Reader, data: Any) -> CallToolResult:
    """:func:`read` of a ``CallToolResult``, shortcut for the usual one (plain text
    blocks, nothing the revision lacks); anything else takes :func:`read`."""
    if type(data) is dict:
        known = _revision_members(reader.version, "CallToolResult")
        content = data.get("content")
        if known is not None and data.keys() <= known and type(content) is list:
            structured = data.get("structuredContent")
            is_error = data.get("isError", False)
            meta = data.get("_meta")
            blocks: list[ContentBlock] = []
            for item in content:
                if not (
                    type(item) is dict
                    and item.get("type") == "text"
                    and item.keys() <= _PLAIN_TEXT
                    and type(item["text"]) is str
                ):
                    break
                blocks.append(TextContent(text=item["text"]))
            else:
                if type(is_error) is bool and type(meta) in _OPTIONAL_DICT:
                    return CallToolResult(
                        content=blocks, structuredContent=structured, isError=is_error, meta=meta
                    )
    return read(reader, data, CallToolResult)


def _resource_contents(reader: Reader, data: Any, path: str) -> ResourceContents:
    if type(data) is dict and "text" in data:
        return read(reader, data, TextResourceContents, path)
    if type(data) is dict and "blob" in data:
        return read(reader, data, BlobResourceContents, path)
    raise reader.fail("resource contents need `text` or `blob`", path)


def _sampling_block(reader: Reader, data: Any, path: str) -> SamplingContent:
    kind = data.get("type") if type(data) is dict else None
    if kind == "tool_use":
        return read(reader, data, ToolUseContent, path)
    if kind == "tool_result":
        return read(reader, data, ToolResultContent, path)
    # the session read the params against the revision: no resource blocks here
    return cast("SamplingContent", block(reader, data, path))


def _sampling_content(reader: Reader, data: Any, path: str) -> SamplingContent | list[SamplingContent]:
    """A sampling message's content: one block or (2025-11-25+) a list of them."""
    if type(data) is list:
        return [_sampling_block(reader, item, f"{path}[{i}]") for i, item in enumerate(data)]
    return _sampling_block(reader, data, path)


def _message(reader: Reader, data: Any, path: str) -> PromptMessage:
    return read(reader, data, PromptMessage, path)


_READERS: dict[tuple[type, str], Callable[[Reader, Any, str], Any]] = {
    (CallToolResult, "content"): _blocks,
    (EmbeddedResource, "resource"): _resource_contents,
    (PromptMessage, "content"): block,
    (GetPromptResult, "messages"): lambda r, items, path: [
        _message(r, m, f"{path}[{i}]") for i, m in enumerate(items)
    ],
    (ReadResourceResult, "contents"): lambda r, items, path: [
        _resource_contents(r, c, f"{path}[{i}]") for i, c in enumerate(items)
    ],
    (ListToolsResult, "tools"): _items(Tool),
    (ListResourcesResult, "resources"): _items(Resource),
    (ListResourceTemplatesResult, "resourceTemplates"): _items(ResourceTemplate),
    (ListPromptsResult, "prompts"): _items(Prompt),
    (CreateMessageParams, "messages"): _items(SamplingMessage),
    (SamplingMessage, "content"): _sampling_content,
    (ToolResultContent, "content"): _blocks,
}


def ask_params(reader: Reader, params: Any, cls: type[T]) -> T:
    """The params of one of the server's asks (a Struct of the revision's) as ``cls``."""
    data = msgspec.to_builtins(params) if params is not None else {}
    return read(reader, data, cls, "$.params")


#: The result type of each method the client reads.
RESULTS: dict[str, type] = {
    "tools/list": ListToolsResult,
    "tools/call": CallToolResult,
    "resources/list": ListResourcesResult,
    "resources/templates/list": ListResourceTemplatesResult,
    "resources/read": ReadResourceResult,
    "prompts/list": ListPromptsResult,
    "prompts/get": GetPromptResult,
    "completion/complete": CompleteResult,
}
