"""High-level MCP client: typed calls for every request, handlers for the server's asks.

Example::

    async def answer(params):
        return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}

    async with connect_stdio("python", "server.py", sampling=answer) as client:
        tools = await client.list_all_tools()
        result = await client.call_tool("add", {"a": 2, "b": 2})

Rules:

* The server's requests for sampling, elicitation and roots go to the
  handlers given here, each run in its own task.  Up to 2025-11-25 they arrive
  as JSON-RPC requests; from 2026-07-28 on as the ``inputRequests`` of an
  ``InputRequiredResult``, which the client answers and retries the original
  request with (at most ``max_input_rounds`` times).  Handlers do not see the
  difference.  The capabilities the client advertises follow from the
  handlers given.
* Results are the types of :mod:`mcp_trio.client.results`, the same whatever
  revision was negotiated (absent fields ``None``, never ``UNSET``).  A
  peer's extras (content of an unknown type, members the revision lacks) are
  kept and logged; ``strict=True`` rejects them instead.
* No call raises an ``ExceptionGroup``.  A handler that fails while a
  2026-07-28 request waits for its answer raises :class:`HandlerError` from
  that call (its ``__cause__`` is the handler's exception); an ask of
  something this client did not advertise, :class:`RemoteProtocolError`.  A
  feature the negotiated revision lacks raises :class:`LocalProtocolError`
  naming that revision.
* Every call takes ``timeout`` (seconds; ``None`` waits forever) and, where
  the server may report progress, ``on_progress``.  Cancelling the calling task
  cancels the request at the server.
* ``list_all_*`` follow every page; a server that repeats a cursor or goes
  past ``max_pages`` gets :class:`RemoteProtocolError` rather than a hang.
* Results the server marks cacheable (``ttlMs``, 2026-07-28) are reused while
  fresh; a ``list_changed`` or ``resources/updated`` notification invalidates
  them.  ``cache=False`` turns this off; pass one :class:`ResultCache` to
  several clients to share ``public`` results between them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, TypeVar, Unpack

import msgspec

from .. import _jsonrpc as rpc
from .._engine._session import ProgressCallback, Session
from .._exceptions import LocalProtocolError, McpError, RemoteProtocolError
from ..middleware._base import Middleware
from ..types import _versions
from ._cache import _CACHEABLE, CacheView, ResultCache, _cache_params
from ._exchange import Exchange
from ._listen import Listening, Subscription
from ._options import RequestOptions
from ._output import OutputSchemas, finish_call
from ._reading import RESULTS, Reader, call_tool_result, read
from .asks import ElicitationHandler, RootsProvider, SamplingHandler
from .results import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LogLevel,
    OutputT,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

T = TypeVar("T")
_AS_DICT = dict[str, Any]

_DEFAULT: Any = object()
_LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"


class Client:
    """A connected MCP client.  Get one from :func:`open_client` or :func:`connect_stdio`.

    Attributes:
        session: The low-level :class:`~mcp_trio.Session` underneath.
    """

    def __init__(
        self,
        session: Session,
        *,
        sampling: SamplingHandler | None,
        elicitation: ElicitationHandler | None,
        roots: RootsProvider | None,
        cache: ResultCache | None,
        cache_namespace: str,
        auth_context: Any,
        max_input_rounds: int,
        max_pages: int,
        strict: bool = False,
        validate_output: bool | None = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.session = session
        self.max_input_rounds = max_input_rounds
        self.max_pages = max_pages
        #: Reject a result with anything the negotiated revision does not define
        #: (an unknown content type, a member it lacks) instead of keeping it.
        self.strict = strict
        self._warned: set[str] = set()
        self._cached = CacheView(cache, cache_namespace, auth_context) if cache is not None else None
        self._outputs = OutputSchemas(validate_output)
        self._log_level: str | None = None
        self._listening = Listening(session)
        self._exchange = Exchange(
            session,
            self._reader,
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            middleware=tuple(middleware),
        )

    # ------------------------------------------------------------ properties

    @property
    def protocol_version(self) -> str:
        version = self.session.protocol_version
        assert version is not None
        return version

    @property
    def modern(self) -> bool:
        """True when the session speaks a stateless (2026-07-28+) revision."""
        return _versions.is_stateless(self.protocol_version)

    @property
    def server_info(self) -> dict[str, Any]:
        return self.session.peer_info

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.session.peer_capabilities

    @property
    def instructions(self) -> str | None:
        return self.session.core.peer_instructions

    # ------------------------------------------------------------- plumbing

    async def _request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        fresh: bool = False,
        **options: Any,
    ) -> Any:
        params = dict(params or {})
        if meta:
            params["_meta"] = {**params.get("_meta", {}), **meta}
        modern = self.modern
        if modern and self._log_level is not None:
            params["_meta"] = {**params.get("_meta", {}), _LOG_LEVEL_META: self._log_level}
        cached = self._cached if modern and method in _CACHEABLE else None
        key = _cache_params(params) if cached is not None else b""
        if cached is not None and not fresh:
            hit = cached.get(method, key)
            if hit is not None:
                return hit
        if timeout is not _DEFAULT:
            options["timeout"] = timeout
        if on_progress is not None:
            options["on_progress"] = on_progress
        typed = RESULTS.get(method)
        if typed is not None:
            options["result_type"] = _AS_DICT
        result, retried = await self._exchange.send(method, params, options, self.max_input_rounds)
        if typed is not None and type(result) is dict:
            reader = Reader(self.protocol_version, self.strict, method, self._warned)
            if typed is CallToolResult:
                result = call_tool_result(reader, result)
            else:
                result = read(reader, result, typed)
                if typed is ListToolsResult:
                    self._outputs.record(result.tools)
        if cached is not None and not retried:
            cached.put(method, key, result)
        return result

    def _reader(self, method: str) -> Reader:
        """How what the server sends for ``method`` is read: against the revision, ``strict`` or not."""
        return Reader(self.protocol_version, self.strict, method, self._warned)

    async def _all_pages(
        self, method: str, key: str, params: dict[str, Any], timeout: Any, fresh: bool = False
    ) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(self.max_pages):
            page_params = dict(params)
            if cursor is not None:
                page_params["cursor"] = cursor
            page = await self._request(method, page_params, timeout=timeout, fresh=fresh)
            items.extend(getattr(page, key))
            next_cursor = page.nextCursor
            if next_cursor is msgspec.UNSET or next_cursor is None:
                return items
            if next_cursor in seen:
                raise RemoteProtocolError(f"{method}: the server repeated the cursor {next_cursor!r}")
            seen.add(next_cursor)
            cursor = next_cursor
        raise RemoteProtocolError(f"{method}: more than {self.max_pages} pages")

    def _before_stateless(self, method: str, instead: str) -> None:
        if self.modern:
            raise LocalProtocolError(
                f"{method} exists up to protocol version 2025-11-25 (this session speaks "
                f"{self.protocol_version}); {instead}"
            )

    def _page_params(self, cursor: str | None) -> dict[str, Any]:
        return {} if cursor is None else {"cursor": cursor}

    @staticmethod
    def _as(kind: type[T], result: Any) -> T:
        if not isinstance(result, kind):
            raise RemoteProtocolError(f"expected a {kind.__name__}, got {type(result).__name__}")
        return result

    # ----------------------------------------------------------------- tools

    async def list_tools(
        self, cursor: str | None = None, *, timeout: float | None = _DEFAULT, fresh: bool = False
    ) -> ListToolsResult:
        """One page of ``tools/list``."""
        result = await self._request("tools/list", self._page_params(cursor), timeout=timeout, fresh=fresh)
        return self._as(ListToolsResult, result)

    async def list_all_tools(self, *, timeout: float | None = _DEFAULT) -> list[Tool]:
        """Every tool, following all pages."""
        return await self._all_pages("tools/list", "tools", {}, timeout)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        output_type: type[OutputT] | None = None,
        raise_on_error: bool = False,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        **options: Unpack[RequestOptions],
    ) -> CallToolResult[OutputT]:
        """Call a tool; returns its :class:`~mcp_trio.client.results.CallToolResult`.

        A tool that fails reports it in the result (``isError``); with ``raise_on_error=True``
        (or an ``output_type``) that raises :class:`ToolCallError`.  Protocol faults
        (unknown tool, ...) raise :class:`McpError`.  ``output_type`` (a dataclass,
        Struct, TypedDict, ``list[...]`` ...) is what ``result.data`` is decoded into from
        ``structuredContent`` (:class:`OutputDecodeError` when missing or not matching).  One
        not matching the ``outputSchema`` of the last ``tools/list`` raises
        :class:`OutputValidationError`.  ``options``: :class:`~mcp_trio.client.RequestOptions`.

        Over Streamable HTTP (2026-07-28) a ``HeaderMismatch`` refusal (its ``x-mcp-header``
        annotations unknown or changed) lists the tools afresh and retries once, as advised.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        try:
            result = await self._request(
                "tools/call", params, timeout=timeout, on_progress=on_progress, meta=meta, **options
            )
        except McpError as exc:
            if exc.code != rpc.HEADER_MISMATCH or not self.modern:
                raise
            result = None
        if result is None:
            await self._all_pages("tools/list", "tools", {}, timeout, fresh=True)
            result = await self._request(
                "tools/call", params, timeout=timeout, on_progress=on_progress, meta=meta, **options
            )
        checked = self._as(CallToolResult, result)
        self._outputs.check(name, checked)
        return finish_call(name, checked, output_type, raise_on_error)

    # ------------------------------------------------------------- resources

    async def list_resources(
        self, cursor: str | None = None, *, timeout: float | None = _DEFAULT, fresh: bool = False
    ) -> ListResourcesResult:
        result = await self._request(
            "resources/list", self._page_params(cursor), timeout=timeout, fresh=fresh
        )
        return self._as(ListResourcesResult, result)

    async def list_all_resources(self, *, timeout: float | None = _DEFAULT) -> list[Resource]:
        return await self._all_pages("resources/list", "resources", {}, timeout)

    async def list_resource_templates(
        self, cursor: str | None = None, *, timeout: float | None = _DEFAULT, fresh: bool = False
    ) -> ListResourceTemplatesResult:
        result = await self._request(
            "resources/templates/list", self._page_params(cursor), timeout=timeout, fresh=fresh
        )
        return self._as(ListResourceTemplatesResult, result)

    async def list_all_resource_templates(
        self, *, timeout: float | None = _DEFAULT
    ) -> list[ResourceTemplate]:
        return await self._all_pages("resources/templates/list", "resourceTemplates", {}, timeout)

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        fresh: bool = False,
    ) -> ReadResourceResult:
        """``resources/read``."""
        result = await self._request(
            "resources/read", {"uri": uri}, timeout=timeout, on_progress=on_progress, fresh=fresh
        )
        return self._as(ReadResourceResult, result)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        buffer: int = 256,
    ) -> AbstractAsyncContextManager[Subscription]:
        """Open a ``subscriptions/listen`` stream (2026-07-28) for the list
        changes asked for (``tools``, ``prompts``, ``resources``) and the
        updates of ``resource_uris``.

        Yields a :class:`Subscription` once the server acknowledged it; iterate
        it for ``(method, params)`` pairs.  Leaving the block cancels the
        subscription.  The result cache follows the notifications either way.
        In older revisions use ``subscribe_resource`` and ``on_list_changed``.

        Raises:
            LocalProtocolError: the session speaks an older revision.
            McpError: the server refused (``-32601`` from one without listen).

        Neither this nor what the block raises comes wrapped in an ``ExceptionGroup``.
        """
        return self._listening.open(
            revision=self.protocol_version,
            tools=tools,
            prompts=prompts,
            resources=resources,
            resource_uris=resource_uris,
            buffer=buffer,
        )

    async def subscribe_resource(self, uri: str, *, timeout: float | None = _DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (up to 2025-11-25;
        later, :meth:`listen` with ``resource_uris``)."""
        self._before_stateless("resources/subscribe", "use listen(resource_uris=...)")
        await self._request("resources/subscribe", {"uri": uri}, timeout=timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: float | None = _DEFAULT) -> None:
        self._before_stateless("resources/unsubscribe", "leave the listen() block")
        await self._request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    # --------------------------------------------------------------- prompts

    async def list_prompts(
        self, cursor: str | None = None, *, timeout: float | None = _DEFAULT, fresh: bool = False
    ) -> ListPromptsResult:
        result = await self._request("prompts/list", self._page_params(cursor), timeout=timeout, fresh=fresh)
        return self._as(ListPromptsResult, result)

    async def list_all_prompts(self, *, timeout: float | None = _DEFAULT) -> list[Prompt]:
        return await self._all_pages("prompts/list", "prompts", {}, timeout)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = _DEFAULT,
        on_progress: ProgressCallback | None = None,
    ) -> GetPromptResult:
        """``prompts/get``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        result = await self._request("prompts/get", params, timeout=timeout, on_progress=on_progress)
        return self._as(GetPromptResult, result)

    # ------------------------------------------------------------ utilities

    async def complete(
        self,
        argument: str,
        value: str,
        *,
        prompt: str | None = None,
        resource_template: str | None = None,
        context: Mapping[str, str] | None = None,
        timeout: float | None = _DEFAULT,
    ) -> CompleteResult:
        """Completions for a prompt's argument or a resource template's variable.

        Give exactly one of ``prompt`` (its name) and ``resource_template``
        (its URI template).  ``context`` holds arguments already chosen
        (2025-06-18+).
        """
        if (prompt is None) == (resource_template is None):
            raise ValueError("give exactly one of prompt= and resource_template=")
        ref = (
            {"type": "ref/prompt", "name": prompt}
            if prompt is not None
            else {"type": "ref/resource", "uri": resource_template}
        )
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context is not None:
            if self.protocol_version < "2025-06-18":
                raise LocalProtocolError(
                    "completion context needs protocol version 2025-06-18 or later "
                    f"(this session speaks {self.protocol_version})"
                )
            params["context"] = {"arguments": dict(context)}
        result = await self._request("completion/complete", params, timeout=timeout)
        return self._as(CompleteResult, result)

    async def set_log_level(self, level: LogLevel, *, timeout: float | None = _DEFAULT) -> None:
        """The lowest level of log messages to receive.

        Up to 2025-11-25 this is ``logging/setLevel``; from 2026-07-28 on the
        level travels in the ``_meta`` of each following request.
        """
        if self.modern:
            if "logging" not in self.server_capabilities:
                raise LocalProtocolError("the server did not advertise the 'logging' capability")
            self._log_level = level
            return
        await self._request("logging/setLevel", {"level": level}, timeout=timeout)

    async def ping(self, *, timeout: float | None = _DEFAULT) -> None:
        """``ping`` (up to 2025-11-25; later revisions have none)."""
        self._before_stateless("ping", "stateless revisions have none")
        await self._request("ping", timeout=timeout)

    async def set_roots(self, roots: RootsProvider) -> None:
        """Replace the roots and tell the server (``notifications/roots/list_changed``)."""
        if self._exchange.roots is None:
            raise LocalProtocolError("this client was opened without roots")
        self._exchange.roots = roots
        if not self.modern:
            await self.session.notify("notifications/roots/list_changed")

    def invalidate_cache(self) -> None:
        """Forget every cached result of this client's namespace."""
        if self._cached is not None:
            self._cached.invalidate()

    # --------------------------------------------------------- notifications

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            self._outputs.forget()
        if self._listening.subscriptions:
            self._listening.deliver(method, params)
        if self._cached is not None:
            self._cached.notified(method, params)
