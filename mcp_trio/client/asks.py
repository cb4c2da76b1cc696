"""What the client's handlers for the server's asks receive and return (every revision).

The server may ask the client to sample its language model
(``sampling/createMessage``), to ask the user (``elicitation/create``) or for
its roots (``roots/list``).  :func:`~mcp_trio.client.open_client` takes a
handler for each (``sampling=``, ``elicitation=``, ``roots=``); whatever
revision the session negotiated, and whether the ask came as a JSON-RPC
request (up to 2025-11-25) or inside an ``InputRequiredResult`` (2026-07-28),
the handler gets the same types:

* a :data:`SamplingHandler` gets a :class:`CreateMessageParams` and returns a
  :class:`CreateMessageResult`, or the result as a ``dict`` (wire names);
* an :data:`ElicitationHandler` gets an :class:`ElicitParams` and returns an
  :class:`ElicitResult`, or a ``dict``;
* ``roots=`` is a list of :class:`Root` (or ``{"uri", "name"}`` dicts), or a
  function returning one, sync or async (:data:`RootsProvider`).

The ``on_log=`` hook (:data:`LogHandler`) gets each ``notifications/message``
as a :class:`LogMessage`, on the same terms; ``on_list_changed=``
(:data:`ListChangedHandler`) the name of the list that changed.

The rules of :mod:`mcp_trio.client.results` hold here too: attribute names are
the wire names; nothing is ever ``msgspec.UNSET``: a member the server left out
(or that its revision does not have) is ``None``, or the value that means the
same (``mode`` is ``"form"``, lists are ``[]``); content blocks are told apart
by class or by ``type``.

Example::

    async def sample(params: CreateMessageParams) -> CreateMessageResult:
        question = params.messages[-1].content
        text = question.text if isinstance(question, TextContent) else "?"
        return CreateMessageResult(
            role="assistant", content=TextContent(text=ask_model(text)), model="m"
        )
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, TypeAlias

from msgspec import field

from .results import (
    AudioContent,
    ContentBlock,
    ImageContent,
    LogLevel,
    TextContent,
    Tool,
    UnknownContent,
    _Base,
)

__all__ = [
    "CreateMessageParams",
    "CreateMessageResult",
    "ElicitParams",
    "ElicitResult",
    "ElicitationHandler",
    "ListChangedHandler",
    "ListName",
    "LogHandler",
    "LogMessage",
    "ModelHint",
    "ModelPreferences",
    "Root",
    "RootsList",
    "RootsProvider",
    "SamplingContent",
    "SamplingHandler",
    "SamplingMessage",
    "ToolChoice",
    "ToolResultContent",
    "ToolUseContent",
]

# --------------------------------------------------------------------- sampling


class ToolUseContent(_Base, frozen=True, tag_field="type", tag="tool_use"):
    """The model asks to call a tool (sampling with tools, 2025-11-25+)."""

    type: ClassVar[Literal["tool_use"]] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


class ToolResultContent(_Base, frozen=True, tag_field="type", tag="tool_result"):
    """The result of a tool the model called (sampling with tools, 2025-11-25+)."""

    type: ClassVar[Literal["tool_result"]] = "tool_result"
    toolUseId: str
    content: list[ContentBlock] = []
    structuredContent: Any = None
    isError: bool = False
    meta: dict[str, Any] | None = field(default=None, name="_meta")
    extra: dict[str, Any] = {}


#: A block of a sampling message.
SamplingContent: TypeAlias = (
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent | UnknownContent
)


class SamplingMessage(_Base, frozen=True):
    role: Literal["user", "assistant"]
    content: SamplingContent | list[SamplingContent]
    """One block, or (2025-11-25+) a list of them, as the server sent it."""
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class ModelHint(_Base, frozen=True):
    name: str | None = None


class ModelPreferences(_Base, frozen=True):
    hints: list[ModelHint] = []
    costPriority: float | None = None
    speedPriority: float | None = None
    intelligencePriority: float | None = None


class ToolChoice(_Base, frozen=True):
    mode: Literal["auto", "none", "required"] | None = None


class CreateMessageParams(_Base, frozen=True):
    """What a ``sampling/createMessage`` asks for."""

    messages: list[SamplingMessage]
    maxTokens: int
    systemPrompt: str | None = None
    includeContext: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stopSequences: list[str] = []
    metadata: dict[str, Any] | None = None
    modelPreferences: ModelPreferences | None = None
    tools: list[Tool] = []
    """2025-11-25+: tools the model may call (the client advertised ``sampling_tools``)."""
    toolChoice: ToolChoice | None = None
    task: dict[str, Any] | None = None
    """2025-11-25 (tasks): the server asks for the answer as a task."""
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class CreateMessageResult(_Base, frozen=True):
    """A sampling handler's answer: the model's message."""

    role: Literal["user", "assistant"]
    content: SamplingContent | list[SamplingContent]
    model: str
    stopReason: str | None = None
    """``"endTurn"``, ``"stopSequence"``, ``"maxTokens"``, ``"toolUse"`` or another."""
    meta: dict[str, Any] | None = field(default=None, name="_meta")


# ------------------------------------------------------------------ elicitation


class ElicitParams(_Base, frozen=True):
    """What an ``elicitation/create`` asks for: a form (``requestedSchema``) or,
    in URL mode (2025-11-25+), a visit to ``url``."""

    message: str
    mode: Literal["form", "url"] = "form"
    requestedSchema: dict[str, Any] | None = None
    """Form mode: a flat JSON Schema object (see :func:`~mcp_trio.client.elicitation_defaults`)."""
    url: str | None = None
    elicitationId: str | None = None
    """URL mode up to 2025-11-25."""
    task: dict[str, Any] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


class ElicitResult(_Base, frozen=True):
    """An elicitation handler's answer: the user's ``action`` and, on accept
    in form mode, the filled form."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str]] | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


# ------------------------------------------------------------------------ roots


class Root(_Base, frozen=True):
    """A directory or file the server may work on (``uri`` is a ``file://`` URI)."""

    uri: str
    name: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


# ---------------------------------------------------------------------- logging


class LogMessage(_Base, frozen=True):
    """A ``notifications/message``: one entry of the server's log."""

    level: LogLevel
    data: Any
    """Any JSON value: a message, an object of details ..."""
    logger: str | None = None
    meta: dict[str, Any] | None = field(default=None, name="_meta")


# --------------------------------------------------------------------- handlers

#: ``async (CreateMessageParams) -> CreateMessageResult`` (or the result as a dict).
SamplingHandler: TypeAlias = Callable[
    [CreateMessageParams], Awaitable[CreateMessageResult | Mapping[str, Any]]
]
#: ``async (ElicitParams) -> ElicitResult`` (or the result as a dict).
ElicitationHandler: TypeAlias = Callable[[ElicitParams], Awaitable[ElicitResult | Mapping[str, Any]]]
#: ``on_log=``: ``async (LogMessage) -> None``.
LogHandler: TypeAlias = Callable[[LogMessage], Awaitable[None]]
#: The lists a server may say changed (``notifications/<name>/list_changed``).
ListName: TypeAlias = Literal["tools", "resources", "prompts"]
#: ``on_list_changed=``: ``async (ListName) -> None``.
ListChangedHandler: TypeAlias = Callable[[ListName], Awaitable[None]]
#: The client's roots: :class:`Root` objects or ``{"uri", "name"}`` dicts.
RootsList: TypeAlias = Sequence[Root | Mapping[str, Any]]
#: ``roots=``: the roots, or a function returning them (sync or async), called per ``roots/list``.
RootsProvider: TypeAlias = RootsList | Callable[[], RootsList | Awaitable[RootsList]]
