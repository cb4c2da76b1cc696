"""Tools: registration (the input schema from the signature, see
:mod:`mcp_trio.server._signature`), ``tools/list`` and ``tools/call``: argument
binding and validation, running the handler, inline or as a task (see
:mod:`mcp_trio.server._tasks`), and shaping its result.

:class:`Tools` owns a :class:`~mcp_trio.server.Server`'s tools; the rules are
in the module docs of :mod:`mcp_trio.server._server`.
"""

from __future__ import annotations

import inspect
import logging
import secrets
from collections.abc import Callable
from copy import copy as shallow_copy
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import msgspec

from .. import _jsonrpc as rpc
from .. import _jsonschema
from .._engine._common import failures, refusal
from .._engine._context import RequestContext
from .._exceptions import McpError, ToolError
from ..transports.http._headers import header_annotations
from ..types import _versions
from ._context import (
    _FIRST_ISERROR_ARGS,
    FeatureHost,
    MissingClientCapability,
    _call,
    _context_param,
    _only,
    _StartTask,
    _thread_for,
    _wants_context,
    failure_text,
    refuse_registration,
)
from ._mrtr import InputSession
from ._results import _text_result, tool_result
from ._signature import ArgumentError, ToolSignature
from ._task_context import LEGACY_TASKS_VERSION, TASK_SUPPORT
from ._typeschema import inline_refs

if TYPE_CHECKING:
    from ._rounds import Rounds
    from ._tasks import TaskManager

log = logging.getLogger("mcp_trio.server")

F = TypeVar("F", bound=Callable[..., Any])

_FIRST_STRUCTURED = "2025-06-18"
#: Whether this process has said that hand-written input schemas go unchecked (no validator).
_told_unchecked = False


class ToolOptions(TypedDict, total=False):
    """The options of :meth:`Server.tool <mcp_trio.server.Server.tool>`, all by
    keyword; each absent one takes the default named here."""

    name: str | None  #: the tool's name (default: the function's)
    title: str | None  #: a display name
    description: str | None  #: default: the function's docstring
    input_schema: dict[str, Any] | None  #: default: built from the type hints
    output_schema: dict[str, Any] | None  #: default: built from the return type
    annotations: dict[str, Any] | None  #: behaviour hints (``readOnlyHint`` ...)
    icons: list[dict[str, Any]] | None
    meta: dict[str, Any] | None  #: the definition's ``_meta``
    structured_output: bool | None  #: False: no outputSchema from the return type
    task_support: str | None  #: ``"forbidden"``, ``"optional"`` or ``"required"``
    defer_task: bool  #: default False
    on_loop: bool  #: default False: a sync function runs in a worker thread
    replace: bool  #: default False: a second tool of the same name raises


# outputSchema and structuredContent exist from here on


class _Tool:
    def __init__(
        self,
        fn: Callable[..., Any],
        definition: dict[str, Any],
        sig: ToolSignature | None,
        input_schema: dict[str, Any] | None,
        context_param: str | None,
        task_support: str | None = None,
        defer_task: bool = False,
        threaded: bool = False,
    ) -> None:
        self.fn = fn
        #: A sync handler, run in a worker thread.
        self.threaded = threaded
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
        #: A hand-written ``input_schema``'s compiled validator (None: the
        #: signature validates, or the validation extra is missing).
        self.validator = _input_validator(definition["name"], input_schema)
        #: The ``x-mcp-header`` annotations of its input schema (2026-07-28 HTTP).
        self.header_annotations = found


class Tools:
    """The tools of a :class:`~mcp_trio.server.Server`: their registry (by name, in
    registration order) and the ``tools/list`` and ``tools/call`` handlers."""

    def __init__(
        self,
        host: FeatureHost,
        *,
        tasks: TaskManager,
        rounds: Rounds,
        mask_error_details: bool = False,
        keep_schema_refs: bool = False,
    ) -> None:
        self._tools: dict[str, _Tool] = {}
        #: Advertise the schemas built from signatures with their ``$ref`` s (default: inlined).
        self.keep_schema_refs = keep_schema_refs
        #: Hide what other exceptions than ToolError say behind an error id (see ``_failed``).
        self.mask_error_details = mask_error_details
        self._host = host
        self.tasks = tasks
        self._rounds = rounds

    def tool(self, fn: F | None, options: ToolOptions) -> F | Callable[[F], F]:
        """``Server.tool``: register ``fn``, or return the decorator that will."""
        unknown = options.keys() - ToolOptions.__optional_keys__
        if unknown:
            raise TypeError(
                f"@server.tool got unknown option(s) {', '.join(sorted(unknown))}; "
                f"it takes {', '.join(ToolOptions.__annotations__)}"
            )
        name = options.get("name")
        title = options.get("title")
        description = options.get("description")
        input_schema = options.get("input_schema")
        output_schema = options.get("output_schema")
        annotations = options.get("annotations")
        icons = options.get("icons")
        meta = options.get("meta")
        structured_output = options.get("structured_output")
        task_support = options.get("task_support")
        defer_task = options.get("defer_task", False)
        on_loop = options.get("on_loop", False)
        replace = options.get("replace", False)
        if fn is not None and not callable(fn):
            raise TypeError(
                f"@server.tool takes its options by keyword: write @server.tool(name={fn!r}), "
                f"not @server.tool({fn!r})"
            )
        if task_support is not None and task_support not in TASK_SUPPORT:
            raise ValueError(f"task_support must be one of {', '.join(TASK_SUPPORT)}, not {task_support!r}")
        if defer_task and task_support not in ("optional", "required"):
            raise ValueError("defer_task needs task_support 'optional' or 'required'")

        def register(fn: F) -> F:
            refuse_registration(fn, "tool", name)
            tool_name = name or fn.__name__
            if tool_name in self._tools and not replace:
                raise ValueError(
                    f"a tool named {tool_name!r} is already registered "
                    f"(pass replace=True to replace it, or choose another name)"
                )
            ctx_param = _context_param(fn)
            sig = None
            schema = input_schema
            out_schema = output_schema
            if schema is None:
                sig = ToolSignature.from_function(fn, skip=_wants_context)
                shown = _keep if self.keep_schema_refs else inline_refs
                schema = shown(sig.input_schema)
                if out_schema is None and structured_output is not False and sig.output_schema is not None:
                    out_schema = shown(sig.output_schema)
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
                fn,
                definition,
                sig,
                None if sig else schema,
                ctx_param,
                task_support,
                defer_task,
                _thread_for(fn, on_loop),
            )
            self._host.changed("notifications/tools/list_changed")
            return fn

        return register(fn) if fn is not None else register

    def header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None:
        tool = self._tools.get(name)
        return None if tool is None else tool.header_annotations

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def names(self) -> list[str]:
        return list(self._tools)

    def remove(self, name: str) -> None:
        del self._tools[name]
        self._host.changed("notifications/tools/list_changed")

    def any_task_support(self) -> bool:
        """Whether some tool may run as a task (the server then advertises tasks)."""
        return any(t.task_support in ("optional", "required") for t in self._tools.values())

    def hosted_by(self, host: FeatureHost, tasks: TaskManager, rounds: Rounds) -> Tools:
        """These tools, live (the same registry), answered for another server (one this server is
        mounted in): that server's contexts, task manager and rounds."""
        view = Tools(host, tasks=tasks, rounds=rounds, mask_error_details=self.mask_error_details)
        view._tools = self._tools
        return view

    def copy_from(self, other: Tools, rename: Callable[[str], str]) -> None:
        """Register copies of ``other``'s tools, each named ``rename(name)`` (``import_server``)."""
        for name, tool in other._tools.items():
            copied = shallow_copy(tool)  # (its handler, signature and validator are shared)
            copied.definition = {**tool.definition, "name": rename(name)}
            self._tools[rename(name)] = copied
        if other._tools:
            self._host.changed("notifications/tools/list_changed")

    def definitions(self, version: str) -> list[dict[str, Any]]:
        """The definitions of the tools as protocol revision ``version`` has them."""
        tools = [t.definition for t in self._tools.values()]
        if version < _FIRST_STRUCTURED:
            tools = [{k: v for k, v in t.items() if k != "outputSchema"} for t in tools]
        if version != LEGACY_TASKS_VERSION:  # execution.taskSupport exists only there
            tools = [{k: v for k, v in t.items() if k != "execution"} for t in tools]
        return tools

    async def list(self, ctx: RequestContext, params: Any) -> Any:
        return self._host.page(ctx, self.definitions(ctx.version), "tools")

    async def call(self, ctx: RequestContext, params: Any, name: str | None = None) -> Any:
        """``tools/call`` of tool ``name`` (by default the one named in ``params``: a server
        mounting this one names it so)."""
        tool = self._tools.get(params.name if name is None else name)
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
                self._rounds.deferred.add(id(ctx))
                try:
                    return await self._run_tool(ctx, tool, params)
                except BaseException as exc:
                    if not _only(exc, _StartTask):
                        raise
                finally:
                    self._rounds.deferred.discard(id(ctx))
                inputs = self._rounds.inputs.get(id(ctx))
                work = partial(
                    self._replay_tool,
                    tool=tool,
                    params=params,
                    answers=dict(inputs.answers) if inputs is not None else {},
                )
            return await self.tasks.create(ctx, work, ttl_ms=ttl if isinstance(ttl, int) else None)
        return await self._run_tool(ctx, tool, params)

    async def _replay_tool(
        self, ctx: RequestContext, *, tool: _Tool, params: Any, answers: dict[str, Any]
    ) -> Any:
        """Run a deferred tool as its task, its earlier inputs answered at once."""
        self._rounds.inputs[id(ctx)] = InputSession.replaying(self._rounds.codec, answers)
        try:
            return await self._run_tool(ctx, tool, params)
        finally:
            del self._rounds.inputs[id(ctx)]

    async def _run_tool(self, ctx: RequestContext, tool: _Tool, params: Any) -> Any:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        try:
            if tool.sig is not None:
                kwargs = tool.sig.bind(arguments)
            else:
                if tool.validator is not None:
                    mismatch = _jsonschema.first_error(tool.validator, arguments)
                    if mismatch is not None:
                        raise ArgumentError(f"{mismatch[0]}: {mismatch[1]}", mismatch[0])
                kwargs = _bind_raw(tool.fn, arguments, tool.context_param)
        except ArgumentError as exc:
            message = f"Invalid arguments for tool {params.name}: {exc}"
            if ctx.version >= _FIRST_ISERROR_ARGS:
                return {"content": [{"type": "text", "text": message}], "isError": True}
            raise McpError(rpc.INVALID_PARAMS, message) from None
        if tool.context_param is not None:
            kwargs[tool.context_param] = self._host.context(ctx)
        try:
            value = await _call(tool.fn, kwargs, self._host.limiter if tool.threaded else None)
        except Exception as exc:
            return _failed(exc, params.name, ctx.version, self.mask_error_details)
        if type(value) is str and not tool.structured:
            return _text_result(value, ctx.version)
        try:
            result = tool_result(value, tool.sig if tool.structured else None)
        except (TypeError, ValueError, msgspec.EncodeError) as exc:  # (a value JSON has no form for)
            log.error("tool %s returned what cannot be encoded: %s", params.name, exc, exc_info=True)
            text = f"Error calling tool {params.name}: its result could not be encoded ({exc})"
            return {"content": [{"type": "text", "text": text}], "isError": True}
        if ctx.version < _FIRST_STRUCTURED:
            result.pop("structuredContent", None)
        return result


def _failed(exc: Exception, name: str, version: str, mask: bool = False) -> dict[str, Any]:
    """What a tool that raised ``exc`` answers: a refusal (an :class:`McpError`, or the same one
    from each task of the tool's) as itself, except a missing client capability before 2026-07-28
    (no error names it there), which is a tool error as any other failure; a :class:`ToolError`
    (or a group of nothing else) a tool error with its message as written, logged without a
    traceback; anything else a tool error saying what failed (a group: what its tasks raised),
    logged with its traceback, or with ``mask`` a generic text naming an error id the log has."""
    if _only(exc, ToolError):
        text = "; ".join(dict.fromkeys(str(leaf) for leaf in failures(exc)))
        log.info("tool %s failed: %s", name, text)
        return {"content": [{"type": "text", "text": text}], "isError": True}
    refused = refusal(exc)
    if isinstance(refused, MissingClientCapability) and not _versions.is_stateless(version):
        log.info("tool %s: %s", name, refused.message)
        return {
            "content": [{"type": "text", "text": f"{type(refused).__name__}: {refused.message}"}],
            "isError": True,
        }
    if refused is not None:
        raise refused from None
    if mask:
        error_id = secrets.token_hex(6)
        log.error("tool %s raised %r (error id %s)", name, exc, error_id, exc_info=True)
        text = f"Error calling tool {name}: an internal error occurred (error id {error_id})"
        return {"content": [{"type": "text", "text": text}], "isError": True}
    log.error("tool %s raised %r", name, exc, exc_info=True)
    return {"content": [{"type": "text", "text": failure_text(exc)}], "isError": True}


def _keep(schema: dict[str, Any]) -> dict[str, Any]:
    return schema


def _input_validator(name: str, schema: dict[str, Any] | None) -> Any:
    """The compiled ``input_schema`` of tool ``name``; a schema that is not valid
    JSON Schema is refused at registration."""
    if schema is None:
        return None
    if not _jsonschema.available():
        # (said once per process, below WARNING: a base install is quiet)
        global _told_unchecked
        level = logging.DEBUG if _told_unchecked else logging.INFO
        _told_unchecked = True
        log.log(
            level, "tool %s: its input_schema arguments are not checked: %s", name, _jsonschema.INSTALL_HINT
        )
        return None
    try:
        return _jsonschema.compile_schema(schema)
    except ValueError as exc:
        raise ValueError(f"tool {name!r}: input_schema is not a valid JSON Schema: {exc}") from None


def _bind_raw(fn: Callable[..., Any], arguments: dict[str, Any], ctx_param: str | None) -> dict[str, Any]:
    params = [p for n, p in inspect.signature(fn).parameters.items() if n != ctx_param]
    if len(params) == 1 and params[0].name == "arguments":
        return {"arguments": arguments}
    return dict(arguments)
