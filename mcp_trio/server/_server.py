"""High-level MCP server: declare tools, resources and prompts; serve any transport.

Example::

    server = Server("demo", "1.0")

    @server.tool
    async def add(a: int, b: int = 2) -> int:
        "Add two numbers."
        return a + b

    @server.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name}"

    trio.run(server.serve_stdio)

Rules:

* A handler may be sync or async.  It gets a :class:`Context` when one of its
  parameters is annotated ``Context`` (never through a global).
* Tool arguments are validated against the input schema before the handler
  runs.  Invalid arguments are a protocol error (-32602) up to 2025-06-18 and a
  tool execution error (``isError: true``) from 2025-11-25 on, as each revision
  says.  An unknown tool is -32602.  An exception raised by a tool becomes a
  result with ``isError: true`` and the exception's message; raise
  :class:`McpError` for a JSON-RPC error instead.
* Lists are paginated with opaque cursors (``page_size`` items per page); a
  cursor the server did not issue gets -32602.
* Adding or removing a tool, resource or prompt while sessions are open sends
  the matching ``list_changed`` notification to every initialized session.
* A tool registered with ``task_support`` may run as a task: 2025-11-25
  ``tasks/*`` and the Tasks extension of 2026-07-28 (see :mod:`mcp_trio.server._tasks`
  and ``docs/tasks.md``).
* ``Context.sample``, ``elicit``, ``elicit_url`` and ``list_roots`` check the
  client's capabilities first: a missing one is a :class:`LocalProtocolError`
  up to 2025-11-25, and from 2026-07-28 on a :class:`MissingClientCapability`
  (also a ``LocalProtocolError``) that, left uncaught, answers the request
  with -32021 naming the capability.  Up to 2025-11-25 they send a request to
  the client; from 2026-07-28 on the tool, resource or prompt handler is
  replayed across multi-round-trip requests (see :mod:`mcp_trio.server._mrtr`): the
  first unanswered ask ends the round with an ``InputRequiredResult`` whose
  ``requestState`` is signed with ``state_key``.  Code before an ask may run
  more than once in that era.  ``input_key=`` names the ask's key in
  ``inputRequests`` (by default one is derived from what is asked).
* A task-capable tool registered with ``defer_task=True`` starts in the
  request and becomes a task when it calls ``await ctx.start_task()``: with
  the Tasks extension, what it asks before that goes through multi-round-trip
  results, and the request is answered with the ``CreateTaskResult`` only
  then.  The task replays the tool from the start with the answers already
  given, so the code before ``start_task`` runs once more.
"""

from __future__ import annotations

import base64
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any, NoReturn, TypeVar

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._engine._session import Session, new_session
from .._exceptions import LocalProtocolError, McpError
from ..transports._base import MessageChannel
from ..transports.http._headers import header_annotations
from ..transports.stdio import open_stdio_server_channel
from ..types import _versions
from ._cursor import decode_cursor, encode_cursor
from ._listen import SubscriptionHub
from ._mrtr import MISSING, InputRequired, InputSession, StateCodec
from ._signature import ArgumentError, ToolSignature
from ._tasks import LEGACY_TASKS_VERSION, TASK_SUPPORT, TaskManager, TaskRequestContext
from ._uritemplate import UriTemplate

__all__ = ["Audio", "Context", "Image", "MissingClientCapability", "Server", "TaskManager"]

log = logging.getLogger("mcp_trio.server")

F = TypeVar("F", bound=Callable[..., Any])

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_LEVEL_RANK = {name: i for i, name in enumerate(LOG_LEVELS)}
_FIRST_ISERROR_ARGS = "2025-11-25"
_FIRST_STRUCTURED = "2025-06-18"  # outputSchema and structuredContent exist from here on  # from here on, bad tool arguments are tool execution errors


class Image:
    """Binary image content for a tool or prompt result."""

    def __init__(self, data: bytes, mime_type: str = "image/png") -> None:
        self.data = data
        self.mime_type = mime_type

    def block(self) -> dict[str, Any]:
        return {"type": "image", "data": base64.b64encode(self.data).decode(), "mimeType": self.mime_type}


class Audio(Image):
    """Binary audio content for a tool or prompt result."""

    def __init__(self, data: bytes, mime_type: str = "audio/wav") -> None:
        super().__init__(data, mime_type)

    def block(self) -> dict[str, Any]:
        return {"type": "audio", "data": base64.b64encode(self.data).decode(), "mimeType": self.mime_type}


class MissingClientCapability(LocalProtocolError, McpError):
    """A handler needs a client capability the request did not declare
    (2026-07-28 on).

    Uncaught, it answers the request with
    ``MissingRequiredClientCapabilityError`` (-32021), whose
    ``data.requiredCapabilities`` names what is missing.  It is also a
    :class:`LocalProtocolError`, what earlier revisions raise for the same
    mistake, so a handler that copes with a missing capability catches both.
    """

    def __init__(self, message: str, required: dict[str, Any]) -> None:
        McpError.__init__(
            self,
            rpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message,
            {"requiredCapabilities": required},
        )


class _StartTask(BaseException):
    """Unwinds a deferred tool at ``ctx.start_task()``: the request now
    answers with a task that replays the tool (a ``BaseException``, like
    ``InputRequired``, so that ``except Exception`` does not swallow it)."""


class Context:
    """What a tool, resource or prompt handler can do while it runs.

    Ask for it by annotating a parameter with ``Context``.
    """

    def __init__(self, server: Server, request: RequestContext) -> None:
        self.server = server
        self.request = request

    @property
    def session(self) -> Session:
        return self.request.session

    @property
    def request_id(self) -> int | str:
        return self.request.id

    @property
    def protocol_version(self) -> str:
        return self.request.version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.request.client_capabilities

    @property
    def auth(self) -> Any:
        """The verified access token this request came with, behind a protected
        HTTP endpoint (``serve_http(auth=...)``: an
        :class:`mcp_trio.auth.server.AccessToken` with subject, client id,
        scopes and claims); ``None`` elsewhere."""
        return self.request.auth

    @property
    def progress_token(self) -> int | str | None:
        """The client's progress token for this request, if it asked for progress."""
        return self.request.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Progress for this request (sent only if the client asked for it)."""
        await self.request.report_progress(progress, total, message)

    async def close_stream(self) -> bool:
        """End this request's Streamable HTTP response stream now (SSE polling,
        2025-11-25 on); the handler goes on and the client gets the rest when it
        resumes the stream.  False on transports without response streams."""
        return await self.request.close_stream()

    async def log(self, level: str, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if ``level`` passes the client's threshold."""
        if level not in _LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        threshold = self.server._log_threshold(self)
        if threshold is None or _LEVEL_RANK[level] < _LEVEL_RANK[threshold]:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.request.notify("notifications/message", params)

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)

    def _require(self, capability: str, detail: str | None = None) -> dict[str, Any]:
        caps = self.client_capabilities.get(capability)
        if not isinstance(caps, dict):
            self._missing(
                f"the client did not advertise the {capability!r} capability", {capability: {}}
            )
        if detail is not None and detail not in caps:
            self._missing(
                f"the client did not advertise {capability}.{detail}", {capability: {detail: {}}}
            )
        return caps

    def _missing(self, message: str, required: dict[str, Any]) -> NoReturn:
        if _versions.is_stateless(self.protocol_version):
            raise MissingClientCapability(f"Missing required client capability: {message}", required)
        raise LocalProtocolError(message)

    async def _input(
        self,
        method: str,
        params: dict[str, Any],
        result_type: str,
        timeout: float | None,
        input_key: str | None,
    ) -> Any:
        """Ask the client: a request (legacy), an input of this round (2026-07-28+)
        or an input request of the task the handler runs as (extension)."""
        inputs = self.server._rounds.get(id(self.request))
        if inputs is not None:
            key = inputs.key_for(method, params, input_key)
            answer = inputs.lookup(key)
            if answer is not MISSING:
                target = getattr(_versions.module_for(self.protocol_version), result_type)
                try:
                    return msgspec.convert(answer, target)
                except msgspec.ValidationError as exc:
                    raise McpError(
                        rpc.INVALID_PARAMS,
                        f"inputResponses[{key!r}] is not a valid {result_type}: {exc}",
                    ) from None
            if not inputs.replay:
                raise inputs.ask(key, method, params)
        if isinstance(self.request, TaskRequestContext):
            return await self.request.request(method, params, timeout=timeout, input_key=input_key)
        return await self.request.request(method, params, timeout=timeout)

    async def start_task(self) -> bool:
        """Go on as a task, if this call of a task-capable tool gets one.

        In a tool registered with ``defer_task=True``, called by a client
        that declared the Tasks extension (2026-07-28), this ends the
        request: its answer is the ``CreateTaskResult``, and the task runs
        the tool again from the start, with the inputs gathered so far
        answered at once, past this call.  Elsewhere it returns at once:
        ``True`` when the tool already runs as a task, ``False`` when it runs
        inline.
        """
        if isinstance(self.request, TaskRequestContext):
            return True
        if id(self.request) in self.server._deferred:
            raise _StartTask()
        return False

    async def sample(
        self,
        messages: Sequence[dict[str, Any]] | str,
        *,
        max_tokens: int = 1000,
        timeout: float | None = None,
        input_key: str | None = None,
        **params: Any,
    ) -> Any:
        """Ask the client's LLM (``sampling/createMessage``); returns the result Struct.

        Extra keyword arguments are request fields (``systemPrompt``,
        ``tools``, ``toolChoice`` ...).  Tools need the client's
        ``sampling.tools`` capability.  ``input_key`` names the ask in
        ``inputRequests`` (2026-07-28).
        """
        self._require("sampling", "tools" if "tools" in params or "toolChoice" in params else None)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        body = {"messages": list(messages), "maxTokens": max_tokens, **params}
        return await self._input(
            "sampling/createMessage", body, "CreateMessageResult", timeout, input_key
        )

    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any],
        *,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Any:
        """Ask the user for input (``elicitation/create``, form mode); returns the result Struct."""
        caps = self._require("elicitation")
        if caps and "form" not in caps and "url" in caps:
            self._missing("the client supports only URL mode elicitation", {"elicitation": {"form": {}}})
        body: dict[str, Any] = {"message": message, "requestedSchema": requested_schema}
        if self.protocol_version >= _FIRST_ISERROR_ARGS:
            body["mode"] = "form"
        return await self._input("elicitation/create", body, "ElicitResult", timeout, input_key)

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Any:
        """Send the user to ``url`` (``elicitation/create``, URL mode, 2025-11-25+)."""
        if self.protocol_version < _FIRST_ISERROR_ARGS:
            raise LocalProtocolError(f"URL mode elicitation does not exist in {self.protocol_version}")
        self._require("elicitation", "url")
        body: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if not _versions.is_stateless(self.protocol_version):
            body["elicitationId"] = elicitation_id or secrets.token_urlsafe(16)
        return await self._input("elicitation/create", body, "ElicitResult", timeout, input_key)

    async def list_roots(self, *, timeout: float | None = None, input_key: str | None = None) -> Any:
        """The client's roots (``roots/list``)."""
        self._require("roots")
        return await self._input("roots/list", {}, "ListRootsResult", timeout, input_key)


def _wants_context(annotation: Any) -> bool:
    return annotation is Context or annotation == "Context"


async def _call(fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    result = fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _context_param(fn: Callable[..., Any]) -> str | None:
    try:
        hints = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    for name, param in hints.items():
        if _wants_context(param.annotation):
            return name
    return None


class _Tool:
    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any], sig: ToolSignature | None,
                 input_schema: dict[str, Any] | None, context_param: str | None,
                 task_support: str | None = None, defer_task: bool = False) -> None:
        self.fn = fn
        self.definition = definition
        self.sig = sig
        self.input_schema = input_schema
        self.context_param = context_param
        self.task_support = task_support
        self.defer_task = defer_task
        #: Whether a call may become a task (``task_support`` optional or required).
        self.may_run_as_task = task_support in ("optional", "required")
        #: Whether results need the general conversion (``tool_result``): a
        #: tool with structured output always does.
        self.structured = sig is not None and "outputSchema" in definition
        found = header_annotations(definition.get("inputSchema"))
        if isinstance(found, str):
            raise ValueError(f"tool {definition.get('name')!r}: {found}")
        #: The ``x-mcp-header`` annotations of its input schema (2026-07-28 HTTP).
        self.header_annotations = found


class _Resource:
    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any], template: UriTemplate | None,
                 mime_type: str | None, context_param: str | None) -> None:
        self.fn = fn
        self.definition = definition
        self.template = template
        self.mime_type = mime_type
        self.context_param = context_param


class _Prompt:
    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any], context_param: str | None) -> None:
        self.fn = fn
        self.definition = definition
        self.context_param = context_param


class Server:
    """A high-level MCP server.

    Args:
        name: ``serverInfo.name``.
        version: ``serverInfo.version``.
        title: Optional display name.
        instructions: Returned by ``initialize`` and ``server/discover``.
        versions: Protocol revisions to accept (default: all supported).
        page_size: Items per page of every list.
        cache_ttl_ms: ``ttlMs`` of cacheable results (2026-07-28).
        cache_scope: ``cacheScope`` of cacheable results (2026-07-28).
        state_key: HMAC key protecting multi-round-trip request state
            (2026-07-28).  Processes serving one endpoint must share it; by
            default each server draws a random one.
        state_ttl: Seconds a multi-round-trip request state stays valid.
        tasks: The :class:`~mcp_trio.server._tasks.TaskManager` that runs the tools
            registered with ``task_support`` (ttl, limits, owner); by default
            one with its defaults.  Available as ``server.tasks``.
    """

    def __init__(
        self,
        name: str,
        version: str = "0.0.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        versions: Sequence[str] | None = None,
        page_size: int = 100,
        cache_ttl_ms: int = 0,
        cache_scope: str = "public",
        state_key: bytes | None = None,
        state_ttl: float = 600.0,
        tasks: TaskManager | None = None,
        **session_options: Any,
    ) -> None:
        if page_size < 1:
            raise ValueError("page_size must be positive")
        self.info: dict[str, Any] = {"name": name, "version": version}
        if title is not None:
            self.info["title"] = title
        self.instructions = instructions
        self.versions = versions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.session_options = session_options
        self._tools: dict[str, _Tool] = {}
        self._resources: dict[str, _Resource] = {}
        self._templates: dict[str, _Resource] = {}
        self._prompts: dict[str, _Prompt] = {}
        self._completions: dict[tuple[str, str], Callable[..., Any]] = {}
        self._sessions: set[Session] = set()
        self._log_levels: dict[Session, str] = {}
        self._subscriptions: dict[Session, set[str]] = {}
        #: Open ``subscriptions/listen`` requests (2026-07-28).
        self.subscriptions = SubscriptionHub(lambda: self.capabilities)
        self._state = StateCodec(state_key, state_ttl)
        self._rounds: dict[int, InputSession] = {}
        self._deferred: set[int] = set()  # requests whose tool may still call start_task()
        self._handlers: Mapping[str, Any] | None = None  # see _handler_table
        self._shared_capabilities: tuple[bool, dict[str, Any]] | None = None  # see _session_capabilities
        self.tasks = tasks if tasks is not None else TaskManager(page_size=page_size)

    # ----------------------------------------------------------- capabilities

    @property
    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        }
        if self._task_tools():
            caps.update(self.tasks.capabilities())  # tasks (2025-11-25) and the Tasks extension
        return caps

    def _task_tools(self) -> bool:
        return any(t.task_support in ("optional", "required") for t in self._tools.values())

    def _session_capabilities(self) -> dict[str, Any]:
        """:attr:`capabilities`, one dict shared by the sessions (which only
        read it) until a tool with task support changes what it holds."""
        if type(self).capabilities is not Server.capabilities:
            return self.capabilities  # a subclass decides: ask it each time
        tasks = self._task_tools()
        shared = self._shared_capabilities
        if shared is None or shared[0] != tasks:
            shared = self._shared_capabilities = (tasks, self.capabilities)
        return shared[1]

    # ----------------------------------------------------------- registration

    def tool(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        input_schema: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        icons: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        task_support: str | None = None,
        defer_task: bool = False,
    ) -> Any:
        """Register a tool (decorator, with or without arguments).

        The input schema comes from the type hints unless ``input_schema`` is
        given (then arguments are passed to the handler as one ``arguments``
        dict parameter, or as keywords when the handler takes them).

        ``task_support`` (``"forbidden"``, ``"optional"`` or ``"required"``)
        lets the tool run as a task (see :mod:`mcp_trio.server._tasks`): it is the
        tool's ``execution.taskSupport`` in 2025-11-25, and with the Tasks
        extension (2026-07-28) an optional or required tool runs as a task for
        every client that declares the extension.  Registering one makes the
        server advertise tasks to the sessions opened afterwards.

        ``defer_task=True`` (with ``task_support`` ``"optional"`` or
        ``"required"``): with the extension the tool starts in the request,
        where what it asks the client goes through multi-round-trip results,
        and becomes a task only when it calls ``await ctx.start_task()`` (a
        tool that returns before that answers inline).
        """
        if task_support is not None and task_support not in TASK_SUPPORT:
            raise ValueError(
                f"task_support must be one of {', '.join(TASK_SUPPORT)}, not {task_support!r}"
            )
        if defer_task and task_support not in ("optional", "required"):
            raise ValueError("defer_task needs task_support 'optional' or 'required'")

        def register(fn: F) -> F:
            tool_name = name or fn.__name__
            ctx_param = _context_param(fn)
            sig = None
            schema = input_schema
            out_schema = output_schema
            if schema is None:
                sig = ToolSignature.from_function(fn, skip=_wants_context)
                schema = sig.input_schema
                if out_schema is None and structured_output is not False and sig.output_schema is not None:
                    out_schema = sig.output_schema
            definition: dict[str, Any] = {"name": tool_name, "inputSchema": schema}
            doc = description if description is not None else inspect.getdoc(fn)
            if doc:
                definition["description"] = doc.strip()
            if title is not None:
                definition["title"] = title
            if out_schema is not None:
                definition["outputSchema"] = out_schema
            if annotations is not None:
                definition["annotations"] = annotations
            if icons is not None:
                definition["icons"] = icons
            if meta is not None:
                definition["_meta"] = meta
            if task_support is not None:
                definition["execution"] = {"taskSupport": task_support}
            self._tools[tool_name] = _Tool(
                fn, definition, sig, None if sig else schema, ctx_param, task_support, defer_task
            )
            self._changed("notifications/tools/list_changed")
            return fn

        return register(fn) if fn is not None else register

    def tool_header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None:
        """The ``x-mcp-header`` annotations of tool ``name`` (None: no such tool);
        Streamable HTTP checks ``Mcp-Param-*`` headers against them."""
        tool = self._tools.get(name)
        return None if tool is None else tool.header_annotations

    def tool_names(self) -> list[str]:
        """The names of the registered tools, in registration order."""
        return list(self._tools)

    def prompt_names(self) -> list[str]:
        """The names of the registered prompts, in registration order."""
        return list(self._prompts)

    def remove_tool(self, name: str) -> None:
        del self._tools[name]
        self._changed("notifications/tools/list_changed")

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: dict[str, Any] | None = None,
        size: int | None = None,
        icons: list[dict[str, Any]] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{...}`` is an RFC 6570 template whose
        variables are passed to the handler as keyword arguments.  The handler
        returns ``str`` (text), ``bytes`` (blob) or a list of contents dicts."""

        def register(fn: F) -> F:
            template = UriTemplate(uri) if "{" in uri else None
            definition: dict[str, Any] = {"name": name or fn.__name__}
            definition["uriTemplate" if template else "uri"] = uri
            doc = description if description is not None else inspect.getdoc(fn)
            if doc:
                definition["description"] = doc.strip()
            for key, value in (("title", title), ("mimeType", mime_type), ("annotations", annotations),
                               ("size", size), ("icons", icons)):
                if value is not None and not (template and key == "size"):
                    definition[key] = value
            entry = _Resource(fn, definition, template, mime_type, _context_param(fn))
            if template:
                self._templates[uri] = entry
            else:
                self._resources[uri] = entry
            self._changed("notifications/resources/list_changed")
            return fn

        return register

    def remove_resource(self, uri: str) -> None:
        if uri in self._templates:
            del self._templates[uri]
        else:
            del self._resources[uri]
        self._changed("notifications/resources/list_changed")

    def prompt(
        self,
        fn: F | None = None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
    ) -> Any:
        """Register a prompt; its parameters are the prompt's arguments (those
        without a default are required).  It returns a string (one user text
        message), a list of messages, or a full ``GetPromptResult`` dict."""

        def register(fn: F) -> F:
            prompt_name = name or fn.__name__
            params = inspect.signature(fn).parameters
            arguments = []
            for pname, param in params.items():
                if _wants_context(param.annotation):
                    continue
                arg: dict[str, Any] = {"name": pname}
                if param.default is inspect.Parameter.empty:
                    arg["required"] = True
                arguments.append(arg)
            definition: dict[str, Any] = {"name": prompt_name}
            doc = description if description is not None else inspect.getdoc(fn)
            if doc:
                definition["description"] = doc.strip()
            if title is not None:
                definition["title"] = title
            if arguments:
                definition["arguments"] = arguments
            self._prompts[prompt_name] = _Prompt(fn, definition, _context_param(fn))
            self._changed("notifications/prompts/list_changed")
            return fn

        return register(fn) if fn is not None else register

    def remove_prompt(self, name: str) -> None:
        del self._prompts[name]
        self._changed("notifications/prompts/list_changed")

    def completion(self, ref: str, argument: str) -> Callable[[F], F]:
        """Register completions for a prompt argument (``ref`` = prompt name) or a
        template variable (``ref`` = the URI template).  The handler takes
        ``(value, context_arguments)`` and returns a list of strings."""

        def register(fn: F) -> F:
            self._completions[(ref, argument)] = fn
            return fn

        return register

    # --------------------------------------------------------- notifications

    def _changed(self, method: str) -> None:
        self.subscriptions.changed(method)
        for session in list(self._sessions):
            if session.initialized.is_set() and not _versions.is_stateless(session.protocol_version or ""):
                self._spawn_notify(session, method, None)

    def _spawn_notify(self, session: Session, method: str, params: Any) -> None:
        nursery = getattr(session, "_tasks", None)
        if nursery is None:
            return

        async def send() -> None:
            try:
                await session.notify(method, params)
            except Exception as exc:  # the session may be closing
                log.debug("could not send %s: %s", method, exc)

        nursery.start_soon(send)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that it changed (and the
        2026-07-28 ``subscriptions/listen`` streams watching it)."""
        self.subscriptions.resource_updated(uri)
        for session, uris in list(self._subscriptions.items()):
            if uri in uris:
                try:
                    await session.notify("notifications/resources/updated", {"uri": uri})
                except Exception as exc:
                    log.debug("could not notify %s: %s", uri, exc)

    # ------------------------------------------------------------- handlers

    def _log_threshold(self, ctx: Context) -> str | None:
        if _versions.is_stateless(ctx.protocol_version):
            level = ctx.request.meta.get("io.modelcontextprotocol/logLevel")
            return level if level in _LEVEL_RANK else None
        return self._log_levels.get(ctx.session)

    def _cacheable(self, ctx: RequestContext, result: dict[str, Any]) -> dict[str, Any]:
        if _versions.is_stateless(ctx.version):
            result.setdefault("ttlMs", self.cache_ttl_ms)
            result.setdefault("cacheScope", self.cache_scope)
        return result

    def _page(self, ctx: RequestContext, items: list[dict[str, Any]], key: str) -> dict[str, Any]:
        cursor = getattr(ctx.params, "cursor", msgspec.UNSET) if ctx.params is not None else msgspec.UNSET
        start = 0
        if cursor is not msgspec.UNSET and cursor is not None:
            start = _decode_cursor(cursor, len(items))
        end = start + self.page_size
        result: dict[str, Any] = {key: items[start:end]}
        if end < len(items):
            result["nextCursor"] = _encode_cursor(end)
        return self._cacheable(ctx, result)

    async def _list_tools(self, ctx: RequestContext, params: Any) -> Any:
        tools = [t.definition for t in self._tools.values()]
        if ctx.version < _FIRST_STRUCTURED:
            tools = [{k: v for k, v in t.items() if k != "outputSchema"} for t in tools]
        if ctx.version != LEGACY_TASKS_VERSION:  # execution.taskSupport exists only there
            tools = [{k: v for k, v in t.items() if k != "execution"} for t in tools]
        return self._page(ctx, tools, "tools")

    async def _call_tool(self, ctx: RequestContext, params: Any) -> Any:
        tool = self._tools.get(params.name)
        if tool is None:
            raise McpError(rpc.INVALID_PARAMS, f"Unknown tool: {params.name}")
        if not tool.may_run_as_task and getattr(params, "task", None) in (None, msgspec.UNSET):
            # Neither the tool nor the call asks for a task: nothing for the
            # task manager to decide or refuse (the common case, kept short).
            return await self._run_tool(ctx, tool, params)
        if self.tasks.wants_task(ctx, params, tool.task_support):
            task = getattr(params, "task", None)
            ttl = getattr(task, "ttl", None)
            work = partial(self._run_tool, tool=tool, params=params)
            if tool.defer_task and _versions.is_stateless(ctx.version):
                self._deferred.add(id(ctx))
                try:
                    return await self._run_tool(ctx, tool, params)
                except BaseException as exc:
                    if not _only(exc, _StartTask):
                        raise
                finally:
                    self._deferred.discard(id(ctx))
                inputs = self._rounds.get(id(ctx))
                work = partial(
                    self._replay_tool,
                    tool=tool,
                    params=params,
                    answers=dict(inputs.answers) if inputs is not None else {},
                )
            return await self.tasks.create(
                ctx, work, ttl_ms=ttl if isinstance(ttl, int) else None
            )
        return await self._run_tool(ctx, tool, params)

    async def _replay_tool(
        self, ctx: RequestContext, *, tool: _Tool, params: Any, answers: dict[str, Any]
    ) -> Any:
        """Run a deferred tool as its task, its earlier inputs answered at once."""
        self._rounds[id(ctx)] = InputSession.replaying(self._state, answers)
        try:
            return await self._run_tool(ctx, tool, params)
        finally:
            del self._rounds[id(ctx)]

    async def _run_tool(self, ctx: RequestContext, tool: _Tool, params: Any) -> Any:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        try:
            if tool.sig is not None:
                kwargs = tool.sig.bind(arguments)
            else:
                kwargs = _bind_raw(tool.fn, arguments, tool.context_param)
        except ArgumentError as exc:
            message = f"Invalid arguments for tool {params.name}: {exc}"
            if ctx.version >= _FIRST_ISERROR_ARGS:
                return {"content": [{"type": "text", "text": message}], "isError": True}
            raise McpError(rpc.INVALID_PARAMS, message) from None
        if tool.context_param is not None:
            kwargs[tool.context_param] = Context(self, ctx)
        try:
            value = await _call(tool.fn, kwargs)
        except McpError:
            raise
        except Exception as exc:
            log.info("tool %s raised %s", params.name, exc, exc_info=True)
            return {"content": [{"type": "text", "text": f"{type(exc).__name__}: {exc}"}], "isError": True}
        if type(value) is str and not tool.structured:
            return _text_result(value, ctx.version)
        result = tool_result(value, tool.sig if tool.structured else None)
        if ctx.version < _FIRST_STRUCTURED:
            result.pop("structuredContent", None)
        return result

    async def _list_resources(self, ctx: RequestContext, params: Any) -> Any:
        return self._page(ctx, [r.definition for r in self._resources.values()], "resources")

    async def _list_templates(self, ctx: RequestContext, params: Any) -> Any:
        return self._page(ctx, [r.definition for r in self._templates.values()], "resourceTemplates")

    def _find_resource(self, uri: str) -> tuple[_Resource, dict[str, Any]] | None:
        entry = self._resources.get(uri)
        if entry is not None:
            return entry, {}
        for template in self._templates.values():
            assert template.template is not None
            values = template.template.match(uri)
            if values is not None:
                return template, values
        return None

    async def _read_resource(self, ctx: RequestContext, params: Any) -> Any:
        uri = params.uri
        found = self._find_resource(uri)
        if found is None:
            code = rpc.INVALID_PARAMS if _versions.is_stateless(ctx.version) else rpc.RESOURCE_NOT_FOUND
            raise McpError(code, f"Resource not found: {uri}", {"uri": uri})
        entry, values = found
        kwargs = dict(values)
        if entry.context_param is not None:
            kwargs[entry.context_param] = Context(self, ctx)
        value = await _call(entry.fn, kwargs)
        return self._cacheable(ctx, {"contents": resource_contents(uri, value, entry.mime_type)})

    async def _subscribe(self, ctx: RequestContext, params: Any) -> Any:
        self._subscriptions.setdefault(ctx.session, set()).add(params.uri)
        return {}

    async def _unsubscribe(self, ctx: RequestContext, params: Any) -> Any:
        self._subscriptions.get(ctx.session, set()).discard(params.uri)
        return {}

    async def _list_prompts(self, ctx: RequestContext, params: Any) -> Any:
        return self._page(ctx, [p.definition for p in self._prompts.values()], "prompts")

    async def _get_prompt(self, ctx: RequestContext, params: Any) -> Any:
        prompt = self._prompts.get(params.name)
        if prompt is None:
            raise McpError(rpc.INVALID_PARAMS, f"Unknown prompt: {params.name}")
        args = params.arguments if isinstance(params.arguments, dict) else {}
        declared = {a["name"]: a for a in prompt.definition.get("arguments", [])}
        missing = [n for n, a in declared.items() if a.get("required") and n not in args]
        if missing:
            raise McpError(rpc.INVALID_PARAMS, f"Missing required arguments for prompt {params.name}: {', '.join(missing)}")
        unknown = [n for n in args if n not in declared]
        if unknown:
            raise McpError(rpc.INVALID_PARAMS, f"Unknown arguments for prompt {params.name}: {', '.join(unknown)}")
        kwargs: dict[str, Any] = dict(args)
        if prompt.context_param is not None:
            kwargs[prompt.context_param] = Context(self, ctx)
        value = await _call(prompt.fn, kwargs)
        return prompt_result(value, prompt.definition.get("description"))

    async def _complete(self, ctx: RequestContext, params: Any) -> Any:
        ref = params.ref
        ref_key = getattr(ref, "name", None) or getattr(ref, "uri", None)
        handler = self._completions.get((ref_key, params.argument.name))
        values: list[str] = []
        if handler is not None:
            context_args = {}
            context = getattr(params, "context", msgspec.UNSET)
            if context is not msgspec.UNSET and context is not None:
                context_args = getattr(context, "arguments", None) or {}
            values = list(await _call(handler, {"value": params.argument.value, "context_arguments": context_args}))
        result = {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}
        return result

    async def _set_level(self, ctx: RequestContext, params: Any) -> Any:
        self._log_levels[ctx.session] = params.level
        return {}

    def _multi_round(self, handler: Callable[[RequestContext, Any], Awaitable[Any]]) -> Any:
        """Run ``handler`` so that, in the stateless era, its calls back to the
        client become an ``InputRequiredResult`` (see :mod:`mcp_trio.server._mrtr`)."""

        async def rounds(ctx: RequestContext, params: Any) -> Any:
            principal = getattr(ctx.session, "principal", None)
            inputs = InputSession(self._state, method=ctx.method, params=params, principal=principal)
            self._rounds[id(ctx)] = inputs
            try:
                return await handler(ctx, params)
            except BaseException as exc:
                if not _only_input_required(exc):
                    raise
                return inputs.result()
            finally:
                del self._rounds[id(ctx)]

        def run(ctx: RequestContext, params: Any) -> Awaitable[Any]:
            # Not a coroutine itself: the handshake era awaits the handler directly.
            if _versions.is_stateless(ctx.version):
                return rounds(ctx, params)
            return handler(ctx, params)

        return run

    def _handler_table(self) -> Mapping[str, Any]:
        """:meth:`request_handlers`, built on first use and shared, read-only,
        by every session (a session copies it only when its
        ``request_handlers`` is asked for, to be changed)."""
        table = self._handlers
        if table is None:
            table = self._handlers = MappingProxyType(self.request_handlers())
        return table

    def request_handlers(self) -> dict[str, Any]:
        """The method handlers of a session (a new dict on every call)."""
        return {
            "tools/list": self._list_tools,
            "tools/call": self._multi_round(self._call_tool),
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._multi_round(self._read_resource),
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "subscriptions/listen": self.subscriptions.listen,
            "prompts/list": self._list_prompts,
            "prompts/get": self._multi_round(self._get_prompt),
            "completion/complete": self._complete,
            "logging/setLevel": self._set_level,
            "tasks/get": self.tasks.get_task,
            "tasks/result": self.tasks.get_result,
            "tasks/list": self.tasks.list_tasks,
            "tasks/cancel": self.tasks.cancel_task,
            "tasks/update": self.tasks.update_task,
        }

    # -------------------------------------------------------------- serving

    async def serve_session(self, channel: MessageChannel, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve one session over ``channel`` until the peer goes away."""
        # The session runs in this task: no nursery or task of its own around
        # it (an idle Streamable HTTP session is one parked task).
        session = new_session(
            channel,
            role="server",
            info=self.info,
            capabilities=self._session_capabilities(),
            versions=self.versions,
            instructions=self.instructions,
            request_handlers=self._handler_table(),
            **self.session_options,
        )
        self._sessions.add(session)
        try:
            await session.run(task_status=task_status)
        finally:
            self._sessions.discard(session)
            self._log_levels.pop(session, None)
            self._subscriptions.pop(session, None)

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 3001,
        *,
        path: str = "/mcp",
        front_door: str = "h11",
        legacy_sse: bool = False,
        auth: Any = None,
        task_status: Any = trio.TASK_STATUS_IGNORED,
        **http_options: Any,
    ) -> None:
        """Serve Streamable HTTP at ``http://host:port/path`` until cancelled.

        ``front_door`` is ``"h11"`` (a lean HTTP/1.1 server, the fastest) or
        ``"hypercorn"`` (ASGI: HTTP/2, TLS and hypercorn's other settings).
        ``legacy_sse`` also serves the 2024-11-05 HTTP+SSE transport for old
        clients (stream at ``/sse``, messages to ``/messages``).
        ``auth`` (an :class:`mcp_trio.auth.server.ResourceServer`) makes every
        endpoint require a bearer token and serves the protected resource
        metadata; see docs/authorization.md.
        ``task_status.started`` gets the endpoint URLs.  ``http_options`` go to
        :class:`~mcp_trio.transports.http.server.StreamableHTTP` (allowed
        hosts, response mode, session limits, event store ...).
        """
        from ..transports.http.legacy_sse import LegacySSE
        from ..transports.http.server import ASGIApp, StreamableHTTP, serve_h11, serve_hypercorn

        if front_door not in ("h11", "hypercorn"):
            raise ValueError("front_door must be 'h11' or 'hypercorn'")
        endpoint = StreamableHTTP(self.serve_session, versions=self.versions, **http_options)
        async with trio.open_nursery() as nursery:
            # Extension tasks outlive the (per-POST) sessions that create them.
            await nursery.start(self.tasks.run)
            await nursery.start(endpoint.run)
            routes = {}
            if legacy_sse:
                legacy = LegacySSE(
                    self.serve_session,
                    max_body_size=endpoint.max_body_size,
                    allowed_hosts=endpoint.guard.allowed_hosts,
                    allowed_origins=endpoint.guard.allowed_origins,
                )
                await nursery.start(legacy.run)
                routes = {"/sse": legacy, legacy.messages_path: legacy}
            front: Any = endpoint
            if auth is not None:
                # The transport, not the session, enforces authorization.
                front = auth.protect(endpoint)
                routes = {p: auth.protect(h) for p, h in routes.items()}
                routes.update(auth.metadata_routes(path))
            if front_door == "h11":
                urls = await nursery.start(partial(serve_h11, front, host, port, path=path, routes=routes))
            else:
                urls = await nursery.start(serve_hypercorn, ASGIApp(front, path, routes), host, port)
            if auth is not None:
                auth.bind_resource(urls[0] + path)
            task_status.started([url + path for url in urls])

    async def serve_stdio(self, **channel_options: Any) -> None:
        """Serve over stdin/stdout until stdin closes."""
        async with open_stdio_server_channel(**channel_options) as channel:
            await self.serve_session(channel)

    async def serve_websocket(
        self,
        host: str = "127.0.0.1",
        port: int = 3001,
        *,
        path: str = "/mcp",
        front_door: str = "hypercorn",
        http: bool = False,
        http_options: dict[str, Any] | None = None,
        auth: Any = None,
        task_status: Any = trio.TASK_STATUS_IGNORED,
        **websocket_options: Any,
    ) -> None:
        """Serve MCP over WebSocket at ``ws://host:port/path`` until cancelled.

        ``front_door`` is ``"hypercorn"`` (ASGI; with ``http=True`` the same
        server also offers Streamable HTTP at ``http://host:port/path``,
        ``http_options`` going to
        :class:`~mcp_trio.transports.http.server.StreamableHTTP`) or
        ``"wsproto"`` (a lean server with exact keepalive and close codes).
        ``websocket_options`` go to
        :class:`~mcp_trio.transports.websocket.WebSocketEndpoint` (allowed
        hosts and origins, message size, keepalive ...).
        ``auth`` (an :class:`mcp_trio.auth.server.ResourceServer`) makes the
        handshake (and, with ``http``, every Streamable HTTP request) require
        a bearer token, and serves the protected resource metadata over plain
        HTTP on the same port; the resource is ``http://host:port/path``
        (see docs/authorization.md).
        ``task_status.started`` gets the WebSocket URLs, then (with ``http``)
        the HTTP ones.  See docs/websocket.md.
        """
        from ..transports import websocket as ws

        if front_door not in ("hypercorn", "wsproto"):
            raise ValueError("front_door must be 'hypercorn' or 'wsproto'")
        if http and front_door != "hypercorn":
            raise ValueError("http=True needs the hypercorn front door")
        endpoint = ws.WebSocketEndpoint(
            self.serve_session, path=path, auth=auth, **websocket_options
        )
        routes = auth.metadata_routes(path) if auth is not None else {}
        async with trio.open_nursery() as nursery:
            await nursery.start(self.tasks.run)
            if front_door == "wsproto":
                serve = partial(ws.serve_wsproto, endpoint, host, port, routes=routes)
                urls = await nursery.start(serve)
            else:
                http_app = None
                if http:
                    from ..transports.http.server import ASGIApp, StreamableHTTP

                    http_endpoint = StreamableHTTP(
                        self.serve_session, versions=self.versions, **(http_options or {})
                    )
                    await nursery.start(http_endpoint.run)
                    front: Any = auth.protect(http_endpoint) if auth is not None else http_endpoint
                    http_app = ASGIApp(front, path, routes)
                    routes = {}
                app = ws.WebSocketASGI(endpoint, http_app, routes)
                urls = await nursery.start(partial(ws.serve_hypercorn_websocket, app, host, port))
            if auth is not None:  # the resource is the endpoint's http(s) form
                auth.bind_resource("http" + urls[0][2:] + path)
            urls = [url + path for url in urls]
            if http:
                urls += ["http" + url[2:] for url in urls]
            task_status.started(urls)


# ------------------------------------------------------------ normalization


def _only_input_required(exc: BaseException) -> bool:
    """``exc`` is InputRequired, or a group of nothing else (concurrent asks)."""
    return _only(exc, InputRequired)


def _only(exc: BaseException, kind: type[BaseException]) -> bool:
    """``exc`` is a ``kind``, or a group of nothing else."""
    if isinstance(exc, kind):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(e, kind) for e in exc.exceptions)
    return False


def _bind_raw(fn: Callable[..., Any], arguments: dict[str, Any], ctx_param: str | None) -> dict[str, Any]:
    params = [p for n, p in inspect.signature(fn).parameters.items() if n != ctx_param]
    if len(params) == 1 and params[0].name == "arguments":
        return {"arguments": arguments}
    return dict(arguments)


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


def _encode_cursor(position: int) -> str:
    return encode_cursor("o", position)


def _decode_cursor(cursor: Any, upper: int) -> int:
    return decode_cursor(cursor, "o", upper)


_Awaitable = Awaitable[Any]
