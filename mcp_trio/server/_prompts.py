"""Prompts and completions: registration, ``prompts/list``, ``prompts/get``
(required and unknown arguments checked, the result shaped) and
``completion/complete`` for prompt arguments and template variables.

``_PromptsMixin`` is part of :class:`~mcp_trio.server.Server`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ._context import Context, _call, _context_param, _wants_context
from ._results import prompt_result

F = TypeVar("F", bound=Callable[..., Any])


class _Prompt:
    def __init__(self, fn: Callable[..., Any], definition: dict[str, Any], context_param: str | None) -> None:
        self.fn = fn
        self.definition = definition
        self.context_param = context_param


class _PromptsMixin:
    """The prompts and completions of a :class:`~mcp_trio.server.Server`."""

    _prompts: dict[str, _Prompt]
    _completions: dict[tuple[str, str], Callable[..., Any]]
    _changed: Callable[[str], None]
    _page: Callable[..., dict[str, Any]]

    def prompt_names(self) -> list[str]:
        """The names of the registered prompts, in registration order."""
        return list(self._prompts)

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
