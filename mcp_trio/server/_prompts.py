"""Prompts and completions: registration, ``prompts/list``, ``prompts/get``
(required and unknown arguments checked, the result shaped) and
``completion/complete`` for prompt arguments and template variables.

:class:`Prompts` owns a :class:`~mcp_trio.server.Server`'s prompts and completions.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypedDict, TypeVar

import msgspec

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ._context import FeatureHost, _call, _context_param, _thread_for, _wants_context, refuse_registration
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


class PromptOptions(TypedDict, total=False):
    """The options of :meth:`Server.prompt <mcp_trio.server.Server.prompt>`, all by keyword;
    each absent one takes the default named here."""

    name: str | None  #: the prompt's name (default: the function's)
    title: str | None  #: a display name
    description: str | None  #: default: the function's docstring
    on_loop: bool  #: default False: a sync function runs in a worker thread
    replace: bool  #: default False: a second prompt of the same name raises


class Prompts:
    """The prompts and completions of a :class:`~mcp_trio.server.Server`: their
    registries and the ``prompts/list``, ``prompts/get`` and
    ``completion/complete`` handlers."""

    def __init__(self, host: FeatureHost) -> None:
        self._prompts: dict[str, _Prompt] = {}
        self._completions: dict[tuple[str, str], _Completion] = {}
        self._host = host

    def names(self) -> list[str]:
        return list(self._prompts)

    def __contains__(self, name: str) -> bool:
        return name in self._prompts

    def prompt(
        self,
        fn: F | None,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        on_loop: bool = False,
        replace: bool = False,
    ) -> F | Callable[[F], F]:
        """``Server.prompt``: register ``fn``, or return the decorator that will."""
        if fn is not None and not callable(fn):
            raise TypeError(
                f"@server.prompt takes its options by keyword: write @server.prompt(name={fn!r}), "
                f"not @server.prompt({fn!r})"
            )

        def register(fn: F) -> F:
            refuse_registration(fn, "prompt", name)
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
            self._host.changed("notifications/prompts/list_changed")
            return fn

        return register(fn) if fn is not None else register

    def remove(self, name: str) -> None:
        del self._prompts[name]
        self._host.changed("notifications/prompts/list_changed")

    def completion(self, ref: str, argument: str, *, on_loop: bool) -> Callable[[F], F]:
        """``Server.completion``: the decorator registering completions."""
        if not isinstance(ref, str) or not isinstance(argument, str):
            raise TypeError(
                "@server.completion needs the prompt name (or URI template) and the argument: "
                "@server.completion('greet', 'name')"
            )

        def register(fn: F) -> F:
            self._completions[(ref, argument)] = _Completion(fn, _thread_for(fn, on_loop))
            return fn

        return register

    def hosted_by(self, host: FeatureHost) -> Prompts:
        """These prompts and completions, live (the same registries), answered for another server
        (one this server is mounted in): that server's contexts."""
        view = Prompts(host)
        view._prompts = self._prompts
        view._completions = self._completions
        return view

    def copy_from(
        self, other: Prompts, rename: Callable[[str], str], rename_uri: Callable[[str], str]
    ) -> None:
        """Register copies of ``other``'s prompts (named ``rename(name)``) and completions (of a
        prompt: renamed so; of a template: ``rename_uri(template)``), for ``import_server``."""
        for name, prompt in other._prompts.items():
            definition = {**prompt.definition, "name": rename(name)}
            self._prompts[rename(name)] = _Prompt(
                prompt.fn, definition, prompt.context_param, prompt.sig, prompt.threaded
            )
        for (ref, argument), completion in other._completions.items():
            new_ref = rename(ref) if ref in other._prompts else rename_uri(ref)
            self._completions[(new_ref, argument)] = completion
        if other._prompts:
            self._host.changed("notifications/prompts/list_changed")

    def definitions(self) -> list[dict[str, Any]]:
        return [p.definition for p in self._prompts.values()]

    def completes(self, ref: str, argument: str) -> bool:
        """Whether completions of ``argument`` of ``ref`` (a prompt's name or a URI template) exist."""
        return (ref, argument) in self._completions

    async def list(self, ctx: RequestContext, params: Any) -> Any:
        return self._host.page(ctx, self.definitions(), "prompts")

    async def get(self, ctx: RequestContext, params: Any, name: str | None = None) -> Any:
        """``prompts/get`` of prompt ``name`` (by default the one named in ``params``: a server
        mounting this one names it so)."""
        prompt = self._prompts.get(params.name if name is None else name)
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
            kwargs[prompt.context_param] = self._host.context(ctx)
        value = await _call(prompt.fn, kwargs, self._host.limiter if prompt.threaded else None)
        return prompt_result(value, prompt.definition.get("description"))

    async def complete(self, ctx: RequestContext, params: Any) -> Any:
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
                await _call(handler.fn, arguments, self._host.limiter if handler.threaded else None)
            )
        result = {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }
        return result
