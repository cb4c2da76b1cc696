"""Prompts and completions: registration, ``prompts/list``, ``prompts/get``
(required and unknown arguments checked, the result shaped) and
``completion/complete`` for prompt arguments and template variables.

``_PromptsMixin`` is part of :class:`~mcp_trio.server.Server`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar, overload

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ._context import Context, _call, _context_param, _thread_for, _wants_context
from ._results import prompt_result
from ._signature import ArgumentError, ToolSignature

F = TypeVar("F", bound=Callable[..., Any])


class _Prompt:
    def __init__(
        self,
        fn: Callable[..., Any],
        definition: dict[str, Any],
        context_param: str | None,
        sig: ToolSignature,
        threaded: bool,
    ) -> None:
        self.fn = fn
        self.definition = definition
        self.context_param = context_param
        self.sig = sig
        self.threaded = threaded


class _Completion:
    def __init__(self, fn: Callable[..., Any], threaded: bool) -> None:
        self.fn = fn
        self.threaded = threaded


class _PromptsMixin:
    """The prompts and completions of a :class:`~mcp_trio.server.Server`."""

    _prompts: dict[str, _Prompt]
    _completions: dict[tuple[str, str], _Completion]
    _sync_limiter: trio.CapacityLimiter
    _context: Callable[[RequestContext], Context]
    _changed: Callable[[str], None]
    _page: Callable[..., dict[str, Any]]

    def prompt_names(self) -> list[str]:
        """The names of the registered prompts, in registration order."""
        return list(self._prompts)

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        on_loop: bool = False,
        replace: bool = False,
    ) -> Callable[[F], F]: ...

    def prompt(
        self,
        fn: F | None = None,
        /,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        on_loop: bool = False,
        replace: bool = False,
    ) -> F | Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments (those
        without a default are required).  Arguments arrive as strings and are
        converted to the parameters' annotated types (``int``, ``float``,
        ``bool``, ``Literal``, ``Enum`` ...); one that does not convert gets
        -32602 naming it.  It returns a string (one user text message), a
        list of messages, or a full ``GetPromptResult`` dict.

        A sync function runs in a worker thread unless ``on_loop=True``; a
        second prompt of the same name raises ``ValueError`` unless
        ``replace=True``.
        """

        if fn is not None and not callable(fn):
            raise TypeError(
                f"@server.prompt takes its options by keyword: write @server.prompt(name={fn!r}), "
                f"not @server.prompt({fn!r})"
            )

        def register(fn: F) -> F:
            if not callable(fn):
                raise TypeError(f"@server.prompt decorates a function, not {fn!r}")
            prompt_name = name or fn.__name__
            if prompt_name in self._prompts and not replace:
                raise ValueError(
                    f"a prompt named {prompt_name!r} is already registered "
                    f"(pass replace=True to replace it, or choose another name)"
                )
            sig = ToolSignature.from_function(fn, skip=_wants_context, structured_output=False, kind="prompt")
            properties = sig.input_schema.get("properties", {})
            required = set(sig.input_schema.get("required", ()))
            arguments = []
            for pname, prop in properties.items():
                arg: dict[str, Any] = {"name": pname}
                if prop.get("description"):
                    arg["description"] = prop["description"]
                if pname in required:
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
            self._prompts[prompt_name] = _Prompt(
                fn, definition, _context_param(fn), sig, _thread_for(fn, on_loop)
            )
            self._changed("notifications/prompts/list_changed")
            return fn

        return register(fn) if fn is not None else register

    def remove_prompt(self, name: str) -> None:
        del self._prompts[name]
        self._changed("notifications/prompts/list_changed")

    def completion(self, ref: str, argument: str, *, on_loop: bool = False) -> Callable[[F], F]:
        """Register completions for a prompt argument (``ref`` = prompt name) or a
        template variable (``ref`` = the URI template).  The handler takes
        ``(value, context_arguments)`` and returns a list of strings; a sync
        one runs in a worker thread unless ``on_loop=True``."""
        if not isinstance(ref, str) or not isinstance(argument, str):
            raise TypeError(
                "@server.completion needs the prompt name (or URI template) and the argument: "
                "@server.completion('greet', 'name')"
            )

        def register(fn: F) -> F:
            self._completions[(ref, argument)] = _Completion(fn, _thread_for(fn, on_loop))
            return fn

        return register

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
            raise McpError(
                rpc.INVALID_PARAMS,
                f"Missing required arguments for prompt {params.name}: {', '.join(missing)}",
            )
        unknown = [n for n in args if n not in declared]
        if unknown:
            raise McpError(
                rpc.INVALID_PARAMS,
                f"Unknown arguments for prompt {params.name}: {', '.join(unknown)}",
            )
        try:
            kwargs = prompt.sig.bind(args, strict=False)
        except ArgumentError as exc:
            raise McpError(rpc.INVALID_PARAMS, f"Invalid arguments for prompt {params.name}: {exc}") from None
        if prompt.context_param is not None:
            kwargs[prompt.context_param] = self._context(ctx)
        value = await _call(prompt.fn, kwargs, self._sync_limiter if prompt.threaded else None)
        return prompt_result(value, prompt.definition.get("description"))

    async def _complete(self, ctx: RequestContext, params: Any) -> Any:
        ref = params.ref
        ref_key = getattr(ref, "name", None) or getattr(ref, "uri", None)
        handler = self._completions.get((str(ref_key), params.argument.name))
        values: list[str] = []
        if handler is not None:
            context_args: dict[str, Any] = {}
            context = getattr(params, "context", msgspec.UNSET)
            if context is not msgspec.UNSET and context is not None:
                context_args = getattr(context, "arguments", None) or {}
            arguments = {"value": params.argument.value, "context_arguments": context_args}
            values = list(
                await _call(handler.fn, arguments, self._sync_limiter if handler.threaded else None)
            )
        result = {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }
        return result
