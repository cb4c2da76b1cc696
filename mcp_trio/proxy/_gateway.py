"""``gateway(backends)``: one server in front of several MCP servers, each proxied (as ``proxy()``
does) under a prefix of its own, with the tools allowed of each and a timeout for each.

Rules (docs/guide/composition.md, "A gateway"):

* **Names** follow ``server.mount``'s rule: under prefix ``p``, tool and prompt ``name`` is
  ``p_name`` and a URI or template ``scheme://rest`` is ``scheme://p/rest``; the backends are
  looked up in the order given.
* **Lists** read every page of every backend (at most :data:`MAX_PAGES` each) and are paged by
  the gateway (``page_size``).  A backend that fails to list is left out of that list (logged),
  so one misbehaving backend cannot take the others' lists down; a call to it gets its error.
* **Allowed tools**: a backend's ``tools`` (names as the backend calls them) are the only ones
  listed and called; another is ``-32602`` (an unknown tool).
* **Timeouts**: each backend's ``timeout`` bounds each request to it (``-32603`` past it).
* ``logging/setLevel`` goes to every backend; tasks are not offered through a gateway.
* From 2026-07-28 on a list the gateway merged is marked not to be cached (``ttlMs`` 0,
  ``cacheScope`` private); what one backend answers keeps its own marks.
* The gateway speaks the revisions every backend speaks (``offer`` as for ``proxy()``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._common import _unwrap
from .._engine._context import RequestContext
from .._engine._session import Session
from .._exceptions import McpError
from ..client import ServesSessions
from ..server import Server, add_metrics
from ..server._cursor import page
from ..server._mount import inner_name, inner_uri, prefixed_name, prefixed_uri
from ..transports.http._headers import Annotations
from ..types import _versions
from ._forwarding import Forwarding, resource_subscriptions
from ._proxy import forwarding_to, upstream_metrics, validating, validation_metrics
from ._upstream import Upstreams

if TYPE_CHECKING:
    from ..fuzzing.wire import Policy
    from ..server import GracefulShutdown
    from ._validating import Validation

__all__ = ["Backend", "MAX_PAGES", "gateway"]

log = logging.getLogger("mcp_trio.proxy")

#: Pages of one backend's list a gateway reads for one list request.
MAX_PAGES = 100
_LISTS = {  # method -> (key of the items, field renamed, whether it is a URI)
    "tools/list": ("tools", "name", False),
    "prompts/list": ("prompts", "name", False),
    "resources/list": ("resources", "uri", True),
    "resources/templates/list": ("resourceTemplates", "uriTemplate", True),
}


@dataclass(frozen=True)
class Backend:
    """A server behind a gateway.

    Attributes:
        target: What ``connect()`` takes: a command line, a URL or a server object.
        tools: The names of the tools offered (as the backend names them); None: all.
        timeout: Seconds each request to it may take (``None``: no limit).
        options: Options of ``connect()`` for it (``env``, ``cwd``, ``http_options``, ``auth`` ...).
        validate: Check every message with it (``proxy()``'s ``validate``: a policy or its
            text); the findings are counted under the label ``backend`` (its prefix).
    """

    target: str | Sequence[str] | ServesSessions
    tools: Collection[str] | None = None
    timeout: float | None = 60.0
    options: Mapping[str, Any] = field(default_factory=dict)
    validate: str | Policy | None = None


@dataclass(frozen=True)
class _Route:
    prefix: str
    backend: Backend
    upstreams: Upstreams
    forwarding: Forwarding

    def allows(self, tool: str) -> bool:
        return self.backend.tools is None or tool in self.backend.tools


class Gateway:
    """A gateway's answers (the ``Answering`` of its :class:`~mcp_trio.server.Server`)."""

    __slots__ = ("_routes", "_page_size", "_announce", "_listen")

    def __init__(self, routes: list[_Route], page_size: int) -> None:
        self._routes = routes
        self._page_size = page_size
        self._announce: Callable[[str], None] = lambda method: None
        self._listen: Any = None

    def attach(self, announce: Callable[[str], None], listen: Any, updated: Callable[[str], None]) -> None:
        self._announce = announce
        self._listen = listen
        for route in self._routes:
            route.forwarding.attach(announce, listen, updated)

    def capabilities(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for route in self._routes:
            for kind, value in route.forwarding.capabilities().items():
                if kind in ("tasks", "extensions", "experimental"):
                    continue  # (tasks are not offered through a gateway)
                mine = merged.setdefault(kind, {})
                if isinstance(value, dict):
                    for flag, on in value.items():
                        mine[flag] = bool(mine.get(flag)) or on
        return merged

    def header_annotations(self, name: str) -> Annotations | None:
        found = self._tool(name)
        return None if found is None else found[0].forwarding.header_annotations(found[1])

    def open_stdio(self, shutdown: GracefulShutdown | None, options: dict[str, Any]) -> None:
        return None  # (a gateway's calls go through its sessions)

    def request_handlers(self) -> dict[str, Any]:
        handlers: dict[str, Any] = dict.fromkeys(_LISTS, self.list)
        handlers.update(
            {
                "tools/call": self.call_tool,
                "prompts/get": self.get_prompt,
                "resources/read": self.read_resource,
                "resources/subscribe": self.subscribe,
                "resources/unsubscribe": self.subscribe,
                "completion/complete": self.complete,
                "logging/setLevel": self.set_level,
            }
        )
        if self._listen is not None:
            handlers["subscriptions/listen"] = self.listen
        return handlers

    # ------------------------------------------------------------------ routing

    def _tool(self, name: str) -> tuple[_Route, str] | None:
        for route in self._routes:
            inner = inner_name(name, (route.prefix,))
            if inner is not None and route.allows(inner):
                return route, inner
        return None

    def _prompt(self, name: str) -> tuple[_Route, str]:
        for route in self._routes:
            inner = inner_name(name, (route.prefix,))
            if inner is not None:
                return route, inner
        raise McpError(rpc.INVALID_PARAMS, f"Unknown prompt: {name}")

    def _uri(self, uri: str) -> tuple[_Route, str]:
        for route in self._routes:
            inner = inner_uri(uri, (route.prefix,))
            if inner is not None:
                return route, inner
        raise McpError(rpc.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})

    # ----------------------------------------------------------------- handlers

    async def list(self, ctx: RequestContext, params: Any) -> Any:
        key, name_field, is_uri = _LISTS[ctx.method]
        items: list[dict[str, Any]] = []
        for route in self._routes:
            try:
                found = await _all_pages(route.forwarding, ctx, ctx.method, key)
            except McpError as exc:
                log.warning("gateway: %s of backend %r failed: %s", ctx.method, route.prefix, exc.message)
                continue
            for item in found:
                value = item.get(name_field)
                if not isinstance(value, str) or (key == "tools" and not route.allows(value)):
                    continue
                outer = (
                    prefixed_uri(value, (route.prefix,)) if is_uri else prefixed_name(value, (route.prefix,))
                )
                if outer is not None:
                    items.append({**item, name_field: outer})
        result = page(params, items, key, self._page_size)
        if _versions.is_stateless(ctx.version):  # (merged from several: not to be cached)
            result.update(ttlMs=0, cacheScope="private")
        return result

    async def call_tool(self, ctx: RequestContext, params: Any) -> Any:
        found = self._tool(params.name)
        if found is None:
            raise McpError(rpc.INVALID_PARAMS, f"Unknown tool: {params.name}")
        route, inner = found
        return await route.forwarding.request(ctx, "tools/call", _renamed(params, "name", inner))

    async def get_prompt(self, ctx: RequestContext, params: Any) -> Any:
        route, inner = self._prompt(params.name)
        return await route.forwarding.request(ctx, "prompts/get", _renamed(params, "name", inner))

    async def read_resource(self, ctx: RequestContext, params: Any) -> Any:
        route, inner = self._uri(params.uri)
        result = await route.forwarding.request(ctx, "resources/read", _renamed(params, "uri", inner))
        for content in result.get("contents", ()):
            if isinstance(content, dict) and isinstance(content.get("uri"), str):
                content["uri"] = prefixed_uri(content["uri"], (route.prefix,)) or content["uri"]
        return result

    async def subscribe(self, ctx: RequestContext, params: Any) -> Any:
        route, inner = self._uri(params.uri)
        handler = (
            route.forwarding.subscribe
            if ctx.method == "resources/subscribe"
            else route.forwarding.unsubscribe
        )
        return await handler(ctx, msgspec.structs.replace(params, uri=inner))

    async def listen(self, ctx: RequestContext, params: Any) -> Any:
        """A client's ``subscriptions/listen`` (2026-07-28): the gateway's own stream, each
        backend's watching the resources of it asked about while it is open."""
        by_route: dict[int, tuple[_Route, list[str]]] = {}
        for uri in resource_subscriptions(params):
            try:
                route, inner = self._uri(uri)
            except McpError:
                continue  # (no backend's: nothing will change it)
            by_route.setdefault(id(route), (route, []))[1].append(inner)
        async with AsyncExitStack() as stack:
            for route, inner_uris in by_route.values():
                await stack.enter_async_context(route.forwarding.watching(ctx.version, inner_uris))
            return await self._listen(ctx, params)

    async def complete(self, ctx: RequestContext, params: Any) -> Any:
        wire = msgspec.to_builtins(params)
        ref = wire.get("ref", {})
        if isinstance(ref.get("name"), str):
            route, inner = self._prompt(ref["name"])
            wire["ref"] = {**ref, "name": inner}
        else:
            route, inner = self._uri(str(ref.get("uri", "")))
            wire["ref"] = {**ref, "uri": inner}
        return await route.forwarding.request(ctx, "completion/complete", wire)

    async def set_level(self, ctx: RequestContext, params: Any) -> Any:
        for route in self._routes:
            if "logging" in route.forwarding.capabilities():
                await route.forwarding.request(ctx, "logging/setLevel", msgspec.to_builtins(params))
        return {}

    async def roots_changed(self, session: Session, method: str, params: Any) -> None:
        for route in self._routes:
            await route.forwarding.roots_changed(session, method, params)


def _renamed(params: Any, name: str, value: str) -> dict[str, Any]:
    wire: dict[str, Any] = msgspec.to_builtins(params)
    wire[name] = value
    meta = wire.get("_meta")
    if isinstance(meta, dict) and "progressToken" in meta:  # (the forwarding asks for its own)
        wire["_meta"] = {k: v for k, v in meta.items() if k != "progressToken"}
    return wire


async def _all_pages(
    forwarding: Forwarding, ctx: RequestContext, method: str, key: str
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    cursor: object = None
    for _ in range(MAX_PAGES):
        result = await forwarding.request(ctx, method, {} if cursor is None else {"cursor": cursor})
        found = result.get(key)
        items += [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []
        cursor = result.get("nextCursor")
        if not cursor:
            break
    return items


def gateway(
    backends: Mapping[str, Backend],
    *,
    server_name: str = "gateway",
    offer: Sequence[str] | None = None,
    page_size: int = 100,
    wait: float = 10.0,
    backoff: float = 0.5,
    max_backoff: float = 30.0,
    queue_size: int = 1024,
) -> Server:
    """One server in front of ``backends`` (prefix -> :class:`Backend`), each proxied under its
    prefix (the rules: the module's documentation).

    Raises:
        ValueError: no backend, a prefix that is not one (as ``server.mount`` takes), a bad
            ``page_size``.
        TypeError: a backend's option the proxy sets itself.
    """
    from ..server._mount import _PREFIX

    if not backends:
        raise ValueError("gateway() needs at least one backend")
    if page_size < 1:
        raise ValueError(f"gateway(): page_size must be at least 1, not {page_size!r}")
    routes: list[_Route] = []
    validations: dict[str | None, Validation | None] = {}
    for prefix, backend in backends.items():
        if _PREFIX.fullmatch(prefix) is None:
            raise ValueError(
                f"gateway(): invalid prefix {prefix!r}: use 1 to 64 letters, digits, '_' and '-', "
                "beginning with a letter or digit"
            )
        validation = validations[prefix] = validating(backend.validate)
        upstreams, forwarding = forwarding_to(
            backend.target,
            dict(backend.options),
            offer=offer,
            timeout=backend.timeout,
            wait=wait,
            backoff=backoff,
            max_backoff=max_backoff,
            queue_size=queue_size,
            rename_uri=_renamer(prefix),
            validation=validation,
        )
        routes.append(_Route(prefix, backend, upstreams, forwarding))
    answering = Gateway(routes, page_size)

    @asynccontextmanager
    async def held(server: Server) -> AsyncIterator[None]:
        try:
            async with trio.open_nursery() as nursery:
                spoken: set[str] | None = None
                for route in routes:
                    await route.upstreams.start(nursery, route.forwarding.notified)
                    await route.forwarding.learn_tools()
                    versions = set(route.upstreams.versions())
                    spoken = versions if spoken is None else spoken & versions
                if not spoken:
                    raise ValueError(
                        "gateway(): its backends speak no protocol revision in common: give each the "
                        "same versions=..., or offer=[...] revisions they all speak"
                    )
                server.versions = sorted(spoken, reverse=True)
                yield
                nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:
            raise _unwrap(group) from None

    server = Server(
        server_name,
        lifespan=held,
        page_size=page_size,
        notification_handlers={"notifications/roots/list_changed": answering.roots_changed},
    )
    server._answer_with(answering)
    add_metrics(server, upstream_metrics(server, {route.prefix: route.forwarding for route in routes}))
    checked = {prefix: v for prefix, v in validations.items() if v is not None}
    if checked:
        add_metrics(server, validation_metrics(server, checked))
    return server


def _renamer(prefix: str) -> Callable[[str], str | None]:
    return lambda uri: prefixed_uri(uri, (prefix,))
