"""High-level MCP client: typed calls for every request, handlers for the server's asks.

Example::

    async def answer(params):
        return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}

    async with connect_stdio("python", "server.py", sampling=answer) as client:
        tools = await client.list_all_tools()
        result = await client.call_tool("add", {"a": 2, "b": 2})

Rules:

* :func:`open_client` negotiates the newest revision both sides speak
  (probing with ``server/discover``, falling back to ``initialize``).
* The server's requests for sampling, elicitation and roots go to the
  handlers given here, each run in its own task.  Up to 2025-11-25 they arrive
  as JSON-RPC requests; from 2026-07-28 on as the ``inputRequests`` of an
  ``InputRequiredResult``, which the client answers and retries the original
  request with (at most ``max_input_rounds`` times).  Handlers do not see the
  difference.  The capabilities the client advertises follow from the
  handlers given.
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

import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._engine._session import ProgressCallback, Session, open_session
from .._exceptions import LocalProtocolError, McpError, RemoteProtocolError
from ..transports._base import MessageChannel
from ..transports.stdio import open_stdio_client
from ..types import _versions
from ..types._versions import SUBSCRIPTION_ID

if TYPE_CHECKING:
    from ..transports.http.client import HTTPAuth

__all__ = [
    "Client",
    "ResultCache",
    "Subscription",
    "connect_http",
    "connect_stdio",
    "connect_websocket",
    "elicitation_defaults",
    "open_client",
]

log = logging.getLogger("mcp_trio.client")

Handler = Callable[[Any], Awaitable[Any]]
NotificationHook = Callable[[Any], Awaitable[None]]

_DEFAULT: Any = object()
_LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
_MRTR_FIELDS = ("inputResponses", "requestState")
_CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_INVALIDATES = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


class ResultCache:
    """Fresh cacheable results, keyed by method and params (2026-07-28 caching).

    ``private`` results are kept per authorization context, ``public`` ones
    are shared by every client using this cache for the same ``namespace``.

    Args:
        max_entries: Oldest entries are dropped beyond this.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        self._entries: dict[tuple[Any, ...], tuple[float, Any]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _keys(namespace: str, auth: Any, method: str, params: bytes) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return (namespace, "public", method, params), (namespace, "private", auth, method, params)

    def get(self, namespace: str, auth: Any, method: str, params: bytes) -> Any:
        """The fresh result for this request, or ``None``."""
        now = trio.current_time()
        for key in self._keys(namespace, auth, method, params):
            entry = self._entries.get(key)
            if entry is not None:
                if now < entry[0]:
                    return entry[1]
                del self._entries[key]
        return None

    def put(self, namespace: str, auth: Any, method: str, params: bytes, result: Any) -> None:
        """Store ``result`` if its hints allow (``ttlMs`` > 0)."""
        ttl = getattr(result, "ttlMs", None)
        if not isinstance(ttl, int) or ttl <= 0:
            return
        public, private = self._keys(namespace, auth, method, params)
        key = public if getattr(result, "cacheScope", "private") == "public" else private
        self._entries.pop(key, None)
        self._entries[key] = (trio.current_time() + ttl / 1000, result)
        while len(self._entries) > self.max_entries:
            del self._entries[next(iter(self._entries))]

    def invalidate(self, namespace: str, methods: Sequence[str] | None = None, params: bytes | None = None) -> None:
        """Forget results of ``methods`` (all if ``None``), optionally only for ``params``."""
        for key in list(self._entries):
            if key[0] != namespace:
                continue
            method, key_params = key[-2], key[-1]
            if methods is not None and method not in methods:
                continue
            if params is not None and key_params != params:
                continue
            del self._entries[key]


def _cache_params(params: Mapping[str, Any]) -> bytes:
    return msgspec.json.encode({k: v for k, v in params.items() if k != "_meta"}, order="sorted")


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    return value


def elicitation_defaults(requested_schema: Any) -> dict[str, Any]:
    """The ``default`` of every property of an elicitation's ``requestedSchema``.

    A form-mode ``elicitation/create`` (2025-11-25 on) may give each primitive
    property a ``default``; a client shows it pre-filled, and a handler that
    accepts without asking anyone can answer ``{"action": "accept", "content":
    elicitation_defaults(params.requestedSchema)}``.  Properties without a
    default are left out.  Multi-select enums (``type: array``) keep their
    list default.
    """
    schema = _builtins(requested_schema)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, Mapping) and "default" in prop
    }


class Subscription:
    """An open ``subscriptions/listen`` stream (see :meth:`Client.listen`).

    Attributes:
        id: The subscription id (the listen request's id).
        acknowledged: The filter the server agreed to honour
            (``toolsListChanged`` ..., ``resourceSubscriptions``).
    """

    def __init__(self, buffer: int) -> None:
        self.id: Any = None
        self.acknowledged: dict[str, Any] | None = None
        self._send, self._receive = trio.open_memory_channel[tuple[str, Any]](buffer)
        self._acknowledged = trio.Event()
        self._error: BaseException | None = None
        self._done = False
        #: Notifications dropped because the reader fell ``buffer`` behind.
        self.dropped = 0

    def _deliver(self, method: str, params: Any) -> None:
        if method == "notifications/subscriptions/acknowledged":
            self.acknowledged = _builtins(params.notifications)
            self._acknowledged.set()
            return
        try:
            self._send.send_nowait((method, params))
        except trio.WouldBlock:
            # A reader this far behind re-reads the lists anyway; never block the session.
            self.dropped += 1
            log.warning("subscription %r: dropped %s (the reader is %d behind)", self.id, method, self._send.statistics().current_buffer_used)
        except trio.ClosedResourceError:
            pass

    def _finish(self, error: BaseException | None) -> None:
        self._done = True
        self._error = error
        self._acknowledged.set()
        self._send.close()

    @property
    def ended_gracefully(self) -> bool:
        """The server answered the listen request (it ended the subscription)."""
        return self._done and self._error is None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[str, Any]:
        """The next ``(method, params)``; stops when the server ends the
        subscription, raises what ended it otherwise (``ConnectionClosed`` ...)."""
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None


class Client:
    """A connected MCP client.  Get one from :func:`open_client` or :func:`connect_stdio`.

    Attributes:
        session: The low-level :class:`~mcp_trio.Session` underneath.
    """

    def __init__(
        self,
        session: Session,
        *,
        sampling: Handler | None,
        elicitation: Handler | None,
        roots: Sequence[Mapping[str, Any]] | Callable[[], Any] | None,
        cache: ResultCache | None,
        cache_namespace: str,
        auth_context: Any,
        max_input_rounds: int,
        max_pages: int,
    ) -> None:
        self.session = session
        self._sampling = sampling
        self._elicitation = elicitation
        self._roots = roots
        self._cache = cache
        self._namespace = cache_namespace
        self._auth = auth_context if auth_context is not None else object()
        self.max_input_rounds = max_input_rounds
        self.max_pages = max_pages
        self._log_level: str | None = None
        self._listening: dict[Any, Subscription] = {}

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
        timeout: Any = _DEFAULT,
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
        cacheable = modern and self._cache is not None and method in _CACHEABLE
        key = _cache_params(params) if cacheable else b""
        if cacheable and not fresh:
            assert self._cache is not None
            hit = self._cache.get(self._namespace, self._auth, method, key)
            if hit is not None:
                return hit
        if timeout is not _DEFAULT:
            options["timeout"] = timeout
        if on_progress is not None:
            options["on_progress"] = on_progress
        result, retried = await self._with_input(method, params, options)
        if cacheable and not retried:
            assert self._cache is not None
            self._cache.put(self._namespace, self._auth, method, key, result)
        return result

    async def _with_input(self, method: str, params: dict[str, Any], options: dict[str, Any]) -> tuple[Any, bool]:
        """Send, answering ``InputRequiredResult`` rounds; returns (result, whether retried)."""
        rounds = 0
        while True:
            result = await self.session.request(method, params or None, **options)
            if getattr(result, "resultType", None) != "input_required":
                return result, rounds > 0
            rounds += 1
            if rounds > self.max_input_rounds:
                raise RemoteProtocolError(
                    f"{method}: the server still wants input after {self.max_input_rounds} rounds"
                )
            requests = result.inputRequests if result.inputRequests is not msgspec.UNSET else {}
            params = {k: v for k, v in params.items() if k not in _MRTR_FIELDS}
            if requests:
                params["inputResponses"] = await self._answer_inputs(requests)
            if result.requestState is not msgspec.UNSET:
                params["requestState"] = result.requestState

    async def _answer_inputs(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        answers: dict[str, Any] = {}

        async def answer(key: str, request: Any) -> None:
            params = getattr(request, "params", None)
            method = getattr(request, "method", None) or request.__struct_config__.tag
            answers[key] = _builtins(await self._answer(method, params))

        async with trio.open_nursery() as nursery:
            for key, request in requests.items():
                nursery.start_soon(answer, key, request)
        return answers

    async def _answer(self, method: str, params: Any) -> Any:
        """Run the handler for one of the server's asks."""
        if method == "sampling/createMessage" and self._sampling is not None:
            return await self._sampling(params)
        if method == "elicitation/create" and self._elicitation is not None:
            return await self._elicitation(params)
        if method == "roots/list" and self._roots is not None:
            roots = self._roots() if callable(self._roots) else self._roots
            return {"roots": [_builtins(r) for r in await _maybe_await(roots)]}
        raise RemoteProtocolError(f"the server asked for {method}, which this client did not advertise")

    def _legacy_handler(self, method: str) -> Callable[[RequestContext, Any], Awaitable[Any]]:
        async def handle(ctx: RequestContext, params: Any) -> Any:
            return await self._answer(method, params)

        return handle

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

    def _page_params(self, cursor: str | None) -> dict[str, Any]:
        return {} if cursor is None else {"cursor": cursor}

    # ----------------------------------------------------------------- tools

    async def list_tools(self, cursor: str | None = None, *, timeout: Any = _DEFAULT, fresh: bool = False) -> Any:
        """One page of ``tools/list``."""
        return await self._request("tools/list", self._page_params(cursor), timeout=timeout, fresh=fresh)

    async def list_all_tools(self, *, timeout: Any = _DEFAULT) -> list[Any]:
        """Every tool, following all pages."""
        return await self._all_pages("tools/list", "tools", {}, timeout)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: Any = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Any:
        """Call a tool; returns the ``CallToolResult``.

        A tool that fails reports it in the result (``isError``); protocol
        faults (unknown tool, ...) raise :class:`McpError`.  ``options`` go to
        :meth:`Session.request` (``max_total_timeout`` ...).

        Over Streamable HTTP (2026-07-28) a ``HeaderMismatch`` refusal means
        the tool's ``x-mcp-header`` annotations are unknown or changed: the
        client lists the tools afresh (which teaches the transport the
        annotations) and retries once, as the specification advises.
        """
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        try:
            return await self._request(
                "tools/call", params, timeout=timeout, on_progress=on_progress, meta=meta, **options
            )
        except McpError as exc:
            if exc.code != rpc.HEADER_MISMATCH or not self.modern:
                raise
        await self._all_pages("tools/list", "tools", {}, timeout, fresh=True)
        return await self._request(
            "tools/call", params, timeout=timeout, on_progress=on_progress, meta=meta, **options
        )

    # ------------------------------------------------------------- resources

    async def list_resources(self, cursor: str | None = None, *, timeout: Any = _DEFAULT, fresh: bool = False) -> Any:
        return await self._request("resources/list", self._page_params(cursor), timeout=timeout, fresh=fresh)

    async def list_all_resources(self, *, timeout: Any = _DEFAULT) -> list[Any]:
        return await self._all_pages("resources/list", "resources", {}, timeout)

    async def list_resource_templates(
        self, cursor: str | None = None, *, timeout: Any = _DEFAULT, fresh: bool = False
    ) -> Any:
        return await self._request(
            "resources/templates/list", self._page_params(cursor), timeout=timeout, fresh=fresh
        )

    async def list_all_resource_templates(self, *, timeout: Any = _DEFAULT) -> list[Any]:
        return await self._all_pages("resources/templates/list", "resourceTemplates", {}, timeout)

    async def read_resource(
        self,
        uri: str,
        *,
        timeout: Any = _DEFAULT,
        on_progress: ProgressCallback | None = None,
        fresh: bool = False,
    ) -> Any:
        """``resources/read``; returns the ``ReadResourceResult``."""
        return await self._request(
            "resources/read", {"uri": uri}, timeout=timeout, on_progress=on_progress, fresh=fresh
        )

    async def subscribe_resource(self, uri: str, *, timeout: Any = _DEFAULT) -> None:
        """Ask for ``notifications/resources/updated`` about ``uri`` (up to 2025-11-25)."""
        await self._request("resources/subscribe", {"uri": uri}, timeout=timeout)

    async def unsubscribe_resource(self, uri: str, *, timeout: Any = _DEFAULT) -> None:
        await self._request("resources/unsubscribe", {"uri": uri}, timeout=timeout)

    # --------------------------------------------------------------- prompts

    async def list_prompts(self, cursor: str | None = None, *, timeout: Any = _DEFAULT, fresh: bool = False) -> Any:
        return await self._request("prompts/list", self._page_params(cursor), timeout=timeout, fresh=fresh)

    async def list_all_prompts(self, *, timeout: Any = _DEFAULT) -> list[Any]:
        return await self._all_pages("prompts/list", "prompts", {}, timeout)

    async def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: Any = _DEFAULT,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """``prompts/get``; returns the ``GetPromptResult``."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self._request("prompts/get", params, timeout=timeout, on_progress=on_progress)

    # ------------------------------------------------------------ utilities

    async def complete(
        self,
        argument: str,
        value: str,
        *,
        prompt: str | None = None,
        resource_template: str | None = None,
        context: Mapping[str, str] | None = None,
        timeout: Any = _DEFAULT,
    ) -> Any:
        """Completions for a prompt's argument or a resource template's variable.

        Give exactly one of ``prompt`` (its name) and ``resource_template``
        (its URI template).  ``context`` holds arguments already chosen
        (2025-06-18+).  Returns the ``CompleteResult``.
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
            params["context"] = {"arguments": dict(context)}
        return await self._request("completion/complete", params, timeout=timeout)

    async def set_log_level(self, level: str, *, timeout: Any = _DEFAULT) -> None:
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

    async def ping(self, *, timeout: Any = _DEFAULT) -> None:
        """``ping`` (up to 2025-11-25; later revisions have none)."""
        await self._request("ping", timeout=timeout)

    async def set_roots(self, roots: Sequence[Mapping[str, Any]] | Callable[[], Any]) -> None:
        """Replace the roots and tell the server (``notifications/roots/list_changed``)."""
        if self._roots is None:
            raise LocalProtocolError("this client was opened without roots")
        self._roots = roots
        if not self.modern:
            await self.session.notify("notifications/roots/list_changed")

    def invalidate_cache(self) -> None:
        """Forget every cached result of this client's namespace."""
        if self._cache is not None:
            self._cache.invalidate(self._namespace)

    # --------------------------------------------------------- subscriptions

    @asynccontextmanager
    async def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        buffer: int = 256,
    ) -> AsyncIterator[Subscription]:
        """Open a ``subscriptions/listen`` stream (2026-07-28) for the list
        changes asked for (``tools``, ``prompts``, ``resources``) and the
        updates of ``resource_uris``.

        Yields a :class:`Subscription` once the server acknowledged it; iterate
        it for ``(method, params)`` pairs.  Leaving the block cancels the
        subscription.  The result cache follows the notifications either way.
        In older revisions use ``subscribe_resource`` and ``on_list_changed``.

        Raises:
            LocalProtocolError: the session speaks an older revision.
        """
        if not self.modern:
            raise LocalProtocolError(
                f"subscriptions/listen needs a stateless protocol version (this session speaks "
                f"{self.protocol_version}); use subscribe_resource and on_list_changed instead"
            )
        wanted: dict[str, Any] = {}
        for field, on in (("toolsListChanged", tools), ("promptsListChanged", prompts), ("resourcesListChanged", resources)):
            if on:
                wanted[field] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        subscription = Subscription(buffer)

        def register(id: Any) -> None:
            subscription.id = id
            self._listening[id] = subscription

        async def run() -> None:
            try:
                await self.session.request(
                    "subscriptions/listen", {"notifications": wanted}, timeout=None, on_sent=register
                )
                subscription._finish(None)  # the server ended it gracefully
            except Exception as exc:
                subscription._finish(exc)
            finally:
                self._listening.pop(subscription.id, None)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await subscription._acknowledged.wait()
            if subscription._error is not None and subscription.acknowledged is None:
                raise subscription._error
            try:
                yield subscription
            finally:
                nursery.cancel_scope.cancel()

    def _on_notification(self, method: str, params: Any) -> None:
        meta = getattr(params, "meta", None)
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            subscription = self._listening.get(meta[SUBSCRIPTION_ID])
            if subscription is not None:
                subscription._deliver(method, params)
        if self._cache is None:
            return
        methods = _INVALIDATES.get(method)
        if methods is not None:
            self._cache.invalidate(self._namespace, methods)
        elif method == "notifications/resources/updated":
            self._cache.invalidate(self._namespace, ("resources/read",), _cache_params({"uri": params.uri}))


def _client_capabilities(
    sampling: Handler | None,
    elicitation: Handler | None,
    roots: Any,
    sampling_tools: bool,
    elicitation_modes: Sequence[str],
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    if sampling is not None:
        caps["sampling"] = {"tools": {}} if sampling_tools else {}
    if elicitation is not None:
        unknown = set(elicitation_modes) - {"form", "url"}
        if unknown or not elicitation_modes:
            raise ValueError(f"elicitation_modes must be a non-empty subset of form, url (got {elicitation_modes})")
        caps["elicitation"] = {mode: {} for mode in elicitation_modes}
    if roots is not None:
        caps["roots"] = {"listChanged": True}
    for key, value in (extra or {}).items():
        caps[key] = value
    return caps


@asynccontextmanager
async def open_client(
    channel: MessageChannel,
    *,
    name: str = "mcp-trio",
    version: str = "0",
    title: str | None = None,
    versions: Sequence[str] | None = None,
    sampling: Handler | None = None,
    sampling_tools: bool = False,
    elicitation: Handler | None = None,
    elicitation_modes: Sequence[str] = ("form",),
    roots: Sequence[Mapping[str, Any]] | Callable[[], Any] | None = None,
    on_log: NotificationHook | None = None,
    on_list_changed: Callable[[str], Awaitable[None]] | None = None,
    on_resource_updated: Callable[[str], Awaitable[None]] | None = None,
    on_notification: Callable[[str, Any], Awaitable[None]] | None = None,
    capabilities: Mapping[str, Any] | None = None,
    cache: ResultCache | bool = True,
    cache_namespace: str | None = None,
    auth_context: Any = None,
    max_input_rounds: int = 16,
    max_pages: int = 10_000,
    connect_timeout: float | None = 30.0,
    **session_options: Any,
) -> AsyncIterator[Client]:
    """Open a session over ``channel`` as a client and connect.

    Args:
        name, version, title: ``clientInfo``.
        versions: Protocol revisions to accept (default: all supported).
        sampling: ``async (CreateMessageRequestParams) -> CreateMessageResult``
            (a dict or Struct).  Advertises ``sampling`` (with ``tools`` when
            ``sampling_tools``).
        elicitation: ``async (ElicitRequestParams) -> ElicitResult``.
            Advertises ``elicitation`` with ``elicitation_modes``.
        roots: The roots (a list of ``{"uri", "name"}``) or a callable
            returning them (sync or async).  Advertises ``roots``.
        on_log: ``async (LoggingMessageNotificationParams)``.
        on_list_changed: ``async ("tools" | "resources" | "prompts")``.
        on_resource_updated: ``async (uri)``.
        on_notification: ``async (method, params)`` for every notification.
        capabilities: Extra capabilities to advertise (``experimental``,
            ``extensions`` ...), merged over the derived ones.
        cache: ``False`` disables result caching; a :class:`ResultCache` is
            used (and may be shared); ``True`` makes a private one.
        cache_namespace: Separates servers sharing one cache (default: the
            server's name).
        auth_context: Identifies the authorization context for ``private``
            results in a shared cache (default: this client alone).
        max_input_rounds: Multi-round-trip retries allowed per request.
        max_pages: Pages ``list_all_*`` follow before giving up.
        connect_timeout: Seconds allowed for the negotiation.
        session_options: Passed to :func:`open_session` (``default_timeout`` ...).
    """
    info: dict[str, Any] = {"name": name, "version": version}
    if title is not None:
        info["title"] = title
    caps = _client_capabilities(sampling, elicitation, roots, sampling_tools, elicitation_modes, capabilities)
    holder: list[Client] = []

    def note_handler(method: str) -> Any:
        async def handle(session: Session, method: str, params: Any) -> None:
            if holder:
                holder[0]._on_notification(method, params)
            if method == "notifications/message" and on_log is not None:
                await on_log(params)
            elif method in _INVALIDATES and on_list_changed is not None:
                await on_list_changed(method.split("/")[1])
            elif method == "notifications/resources/updated" and on_resource_updated is not None:
                await on_resource_updated(params.uri)
            if on_notification is not None:
                await on_notification(method, params)

        return handle

    watched = [
        "notifications/message",
        "notifications/resources/updated",
        "notifications/subscriptions/acknowledged",
        *_INVALIDATES,
    ]
    if on_notification is not None:
        watched += ["notifications/elicitation/complete", "notifications/tasks/status"]
    async with open_session(
        channel,
        role="client",
        info=info,
        capabilities=caps,
        versions=versions,
        notification_handlers={m: note_handler(m) for m in watched},
        **session_options,
    ) as session:
        result_cache = cache if isinstance(cache, ResultCache) else (ResultCache() if cache else None)
        client = Client(
            session,
            sampling=sampling,
            elicitation=elicitation,
            roots=roots,
            cache=result_cache,
            cache_namespace="",
            auth_context=auth_context,
            max_input_rounds=max_input_rounds,
            max_pages=max_pages,
        )
        holder.append(client)
        for method, present in (
            ("sampling/createMessage", sampling),
            ("elicitation/create", elicitation),
            ("roots/list", roots),
        ):
            if present is not None:
                session.request_handlers[method] = client._legacy_handler(method)
        with trio.fail_after(connect_timeout if connect_timeout is not None else float("inf")):
            await session.connect()
        client._namespace = cache_namespace if cache_namespace is not None else str(session.peer_info.get("name", ""))
        yield client


@asynccontextmanager
async def connect_stdio(
    command: str,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stderr: Any = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Start ``command *args`` as a stdio MCP server and connect to it.

    The process is shut down (stdin closed, then terminated, then killed)
    when the block ends.  ``client_options`` are those of :func:`open_client`.
    """
    async with open_stdio_client(command, args, env=env, cwd=cwd, stderr=stderr) as process:
        async with open_client(process.channel, **client_options) as client:
            yield client




@asynccontextmanager
async def connect_http(
    url: str,
    *,
    http_options: Mapping[str, Any] | None = None,
    auth: HTTPAuth | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to the Streamable HTTP endpoint ``url``.

    ``http_options`` go to :func:`~mcp_trio.transports.http.client.open_http_client`
    (headers, TLS context, timeouts, ``legacy_fallback`` ...), ``client_options``
    to :func:`open_client`.  ``auth`` supplies credentials for every request
    (e.g. :class:`mcp_trio.auth.client.OAuthClient`; see
    :class:`~mcp_trio.transports.http.client.HTTPAuth`).  The session is
    ended with ``DELETE`` on exit.
    """
    from ..transports.http.client import open_http_client

    options = dict(http_options or {})
    if auth is not None:
        options["auth"] = auth
    async with open_http_client(url, **options) as channel:
        async with open_client(channel, **client_options) as client:
            yield client


@asynccontextmanager
async def connect_websocket(
    url: str,
    *,
    websocket_options: Mapping[str, Any] | None = None,
    auth: HTTPAuth | None = None,
    **client_options: Any,
) -> AsyncIterator[Client]:
    """Connect to the MCP WebSocket endpoint ``url`` (``ws://`` or ``wss://``).

    ``websocket_options`` go to
    :func:`~mcp_trio.transports.websocket.open_websocket_client` (headers,
    origin, TLS context, keepalive, size limit ...), ``client_options`` to
    :func:`open_client`.  ``auth`` supplies credentials for the handshake
    and authorizes when it is refused (e.g.
    :class:`mcp_trio.auth.client.OAuthClient`).  The connection is closed
    (code 1000) on exit.  If it drops (or the server closes it with 1008
    when the access token expires), pending and later calls raise
    :class:`~mcp_trio.ConnectionClosed`; reconnecting means calling this again.
    """
    from ..transports.websocket import open_websocket_client

    options = dict(websocket_options or {})
    if auth is not None:
        options["auth"] = auth
    async with open_websocket_client(url, **options) as channel:
        async with open_client(channel, **client_options) as client:
            yield client
