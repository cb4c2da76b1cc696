"""Composition: servers mounted in a server (``Server.mount``), answered through it, live, and
servers copied into it once (``Server.import_server``).  The rules (docs/guide/composition.md):

* **Names.**  Under prefix ``p``, a tool or prompt ``name`` is ``p_name``; a resource's URI or a
  template ``scheme://rest`` is ``scheme://p/rest`` (the prefix is the first segment after the
  scheme's ``//``; ``scheme:rest`` without ``//`` becomes ``scheme:p/rest``).  A template whose
  scheme is itself a variable has no place for a prefix: it is left out.  No prefix (``None``):
  the names and URIs as the mounted server has them.  Mounts nest: ``a_b_name``, ``s://a/b/rest``.
* **Clashes.**  The parent's own tool, prompt or resource comes first, then the mounted servers,
  the one mounted last first; inside a mounted server, its own before those mounted in it.  A
  list shows the one a call would reach, once.
* **Live.**  A mount is a view: what the mounted server registers or removes later is served at
  once, and its ``list_changed`` and ``resources/updated`` notifications reach the sessions of
  every server it is mounted in (under the prefixed URI).
* **Context.**  A mounted handler runs for the parent's session: its :class:`Context` reports
  progress, logs, asks the client (sampling, elicitation, roots) and is cancelled as the parent's
  own handlers are; tasks and multi-round-trip requests are the parent's.  Only
  ``ctx.lifespan_value`` is the mounted server's own.
* **Middleware.**  A request routed to a mounted server (call, read, get, complete) passes the
  middleware of each server mounted on the way, the outermost first, each seeing the names as its
  server has them; a list passes only the parent's.
* **Lifespans.**  The lifespan of a mounted server is entered inside the parent's (after it is
  entered, in mount order) and left before it; one mounted while the parent's is entered is
  entered at once (in a task of its own) and left first.
* **Import** copies what the other server registered itself, once; its handlers are then the
  parent's (they see the parent's lifespan).
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ..middleware._base import CallNext, RequestInfo, Result, chain, name_of, session_id_of
from ._context import Context, FeatureHost

if TYPE_CHECKING:
    from ._lifespan import Lifespan
    from ._prompts import Prompts
    from ._resources import Resources
    from ._server import Server
    from ._tools import Tools

__all__ = ["Mounts"]

log = logging.getLogger("mcp_trio.server")

_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?://)?")
_LISTS = (
    "notifications/tools/list_changed",
    "notifications/resources/list_changed",
    "notifications/prompts/list_changed",
)


def prefixed_name(name: str, prefixes: tuple[str, ...]) -> str:
    """``name`` under ``prefixes`` (the outermost first): ``a_b_name``."""
    for prefix in reversed(prefixes):
        name = f"{prefix}_{name}"
    return name


def inner_name(name: str, prefixes: tuple[str, ...]) -> str | None:
    """The name under ``prefixes`` that ``name`` is (None: it is not under them)."""
    for prefix in prefixes:
        if not name.startswith(f"{prefix}_"):
            return None
        name = name[len(prefix) + 1 :]
    return name


def prefixed_uri(uri: str, prefixes: tuple[str, ...]) -> str | None:
    """``uri`` (or a URI template) under ``prefixes``: ``scheme://a/b/rest`` (None: it does not
    begin with a scheme to put them after)."""
    if not prefixes:
        return uri
    scheme = _SCHEME.match(uri)
    if scheme is None:
        return None
    rest = uri[scheme.end() :]
    for prefix in reversed(prefixes):
        rest = f"{prefix}/{rest}"
    return scheme[0] + rest


def inner_uri(uri: str, prefixes: tuple[str, ...]) -> str | None:
    """The URI under ``prefixes`` that ``uri`` is (None: it is not under them)."""
    if not prefixes:
        return uri
    scheme = _SCHEME.match(uri)
    if scheme is None:
        return None
    rest = uri[scheme.end() :]
    for prefix in prefixes:
        if not rest.startswith(f"{prefix}/"):
            return None
        rest = rest[len(prefix) + 1 :]
    return scheme[0] + rest


@dataclass(frozen=True, slots=True)
class _Route:
    """A server whose features a server answers, and the prefixes they are under there."""

    prefixes: tuple[str, ...]  # (the outermost first)
    server: Server
    #: The servers mounted on the way to ``server`` (it included), the outermost first, each with
    #: the prefixes ``server``'s names are under there: their middleware wraps what is routed here.
    path: tuple[tuple[Server, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True)
class _Views:
    """A server's registries as answered by the server serving the request."""

    tools: Tools
    resources: Resources
    prompts: Prompts


def _ignore(method: str) -> None:
    """(A view registers nothing: the mounted server announces its own changes.)"""


class Mounts:
    """The servers mounted in a server and those it is mounted in; the handlers of the methods
    that list, call, read, get and complete across them."""

    __slots__ = ("_server", "_announce", "_mounted", "_parents", "_views", "_route_list", "_holding")

    def __init__(self, server: Server, announce: Callable[[str], None]) -> None:
        self._server = server
        self._announce = announce  # (the server's own list_changed)
        self._mounted: list[tuple[str | None, Server]] = []  # (in mount order)
        self._parents: list[tuple[str | None, Server]] = []
        self._views: dict[Server, _Views] = {}
        self._route_list: list[_Route] | None = None  # (see _routes; None: to be made again)
        self._holding: _Holding | None = None  # (while the server's lifespan is entered)

    # ------------------------------------------------------------ mounting

    def mount(self, other: Server, prefix: str | None) -> None:
        """``Server.mount``."""
        self._check(other, prefix, "mount")
        if other is self._server or self._server in other._mounts.reachable():
            raise ValueError(
                f"cannot mount server {other.info['name']!r} into {self._server.info['name']!r}: "
                + (
                    "a server cannot be mounted into itself"
                    if other is self._server
                    else "that one is already mounted in it (directly or deeper): it would be a cycle"
                )
            )
        if (prefix, other) in self._mounted:
            raise ValueError(f"server {other.info['name']!r} is already mounted here under prefix {prefix!r}")
        self._mounted.append((prefix, other))
        other._mounts._parents.append((prefix, self._server))
        self._forget_routes()
        holding = self._holding
        if holding is not None and other.lifespan.needed:  # (the parent's lifespan runs: enter it now)
            left = trio.Event()
            holding.late.append(left)
            name = f"mcp_trio.server.lifespan of {other.info['name']}"
            trio.lowlevel.spawn_system_task(_hold_late, other, holding.leaving, left, name=name)
        for method in _LISTS:
            self.changed(method)

    def import_server(self, other: Server, prefix: str | None) -> None:
        """``Server.import_server``: copies, all or nothing."""
        self._check(other, prefix, "import_server")
        if other is self._server:
            raise ValueError("a server cannot import itself")
        if other._mounts._mounted:
            names = ", ".join(repr(server.info["name"]) for _, server in other._mounts._mounted)
            raise ValueError(
                f"import_server copies what server {other.info['name']!r} registered itself, and it has "
                f"servers mounted ({names}): mount it instead, or mount or import those here too"
            )
        prefixes = () if prefix is None else (prefix,)
        own = self._server

        def uri(value: str) -> str:
            new = prefixed_uri(value, prefixes)
            if new is None:
                raise ValueError(
                    f"import_server: the URI {value!r} of server {other.info['name']!r} does not begin "
                    "with a scheme the prefix can follow (scheme://...)"
                )
            return new

        clashes = [
            prefixed_name(n, prefixes)
            for n in other._tools.names()
            if prefixed_name(n, prefixes) in own._tools
        ]
        clashes += [
            prefixed_name(n, prefixes)
            for n in other._prompts.names()
            if prefixed_name(n, prefixes) in own._prompts
        ]
        clashes += [uri(u) for u in other._resources.uris() if uri(u) in own._resources.uris()]
        if clashes:
            raise ValueError(
                f"import_server: this server already has {', '.join(map(repr, clashes))}, which importing "
                f"server {other.info['name']!r} under prefix {prefix!r} would replace: choose another prefix"
            )
        own._tools.copy_from(other._tools, lambda n: prefixed_name(n, prefixes))
        own._resources.copy_from(other._resources, uri)
        own._prompts.copy_from(other._prompts, lambda n: prefixed_name(n, prefixes), uri)

    def _check(self, other: Server, prefix: str | None, what: str) -> None:
        if other._answering is not None:
            raise ValueError(
                f"server.{what}() cannot take server {other.info['name']!r}: it answers by forwarding "
                "(a proxy), and has no tools, resources or prompts of its own to serve here; serve "
                "the proxy on its own"
            )
        if prefix is not None and (not isinstance(prefix, str) or _PREFIX.fullmatch(prefix) is None):
            raise ValueError(
                f"invalid prefix {prefix!r} for server.{what}(): use 1 to 64 letters, digits, '_' and '-', "
                "beginning with a letter or digit (it becomes part of tool names, prefix_tool, and "
                "of resource URIs, scheme://prefix/...), or None for no prefix"
            )

    def reachable(self) -> set[Server]:
        """This server and every server mounted in it, however deep."""
        found = {self._server}
        for _, other in self._mounted:
            found |= other._mounts.reachable()
        return found

    # ------------------------------------------------------ notifications

    def changed(self, method: str) -> None:
        """A list of this server's changed: tell its sessions and those of the servers it is
        mounted in."""
        self._announce(method)
        for _, parent in self._parents:
            parent._mounts.changed(method)

    async def updated(self, uri: str) -> None:
        """Resource ``uri`` of this server changed: tell the servers it is mounted in."""
        for prefix, parent in self._parents:
            outer = prefixed_uri(uri, () if prefix is None else (prefix,))
            if outer is not None:
                await parent.notify_resource_updated(outer)

    @asynccontextmanager
    async def lifespans_held(self) -> AsyncIterator[None]:
        """Hold the lifespans of the mounted servers (in mount order; left in reverse), and of
        those mounted meanwhile (entered as they are mounted; left first)."""
        holding = _Holding()
        async with AsyncExitStack() as stack:
            for _, other in list(self._mounted):
                await stack.enter_async_context(other.lifespan.held())
            self._holding = holding
            try:
                yield
            finally:
                self._holding = None
                holding.leaving.set()
                with trio.CancelScope(shield=True):
                    for left in reversed(holding.late):
                        await left.wait()

    def any(self) -> bool:
        return bool(self._mounted)

    # ----------------------------------------------------------- routing

    def _routes(self) -> list[_Route]:
        """The servers answered here, in the order a name is looked up (see the module docs);
        made again after a mount here or in a server mounted here."""
        found = self._route_list
        if found is None:
            found = [_Route((), self._server)]
            for prefix, other in reversed(self._mounted):
                outer = () if prefix is None else (prefix,)
                found += [
                    _Route(outer + r.prefixes, r.server, ((other, r.prefixes), *r.path))
                    for r in other._mounts._routes()
                ]
            self._route_list = found
        return found

    def _forget_routes(self) -> None:
        self._route_list = None
        for _, parent in self._parents:
            parent._mounts._forget_routes()

    def _views_of(self, other: Server) -> _Views:
        """``other``'s registries answered for this server's sessions."""
        root = self._server
        if other is root:
            return _Views(root._tools, root._resources, root._prompts)
        views = self._views.get(other)
        if views is None:
            host = FeatureHost(
                _ignore, root._page, root._cacheable, _context_for(root, other.lifespan), other._sync_limiter
            )
            views = self._views[other] = _Views(
                other._tools.hosted_by(host, root.tasks, root._rounds),
                other._resources.hosted_by(host, root._open, root.subscriptions),
                other._prompts.hosted_by(host),
            )
        return views

    def _merged(
        self, lists: Iterable[tuple[_Route, list[dict[str, Any]]]], field: str, uri: bool
    ) -> list[dict[str, Any]]:
        """The definitions as listed here: renamed, the first of each name only."""
        seen: dict[str, dict[str, Any]] = {}
        for route, definitions in lists:
            for definition in definitions:
                name = (
                    prefixed_uri(definition[field], route.prefixes)
                    if uri
                    else prefixed_name(definition[field], route.prefixes)
                )
                if name is not None and name not in seen:
                    seen[name] = {**definition, field: name} if route.prefixes else definition
        return list(seen.values())

    def _tool(self, name: str) -> tuple[Tools, str]:
        tools, inner, _ = self._tool_route(name)
        return tools, inner

    def _tool_route(self, name: str) -> tuple[Tools, str, _Route | None]:
        if self._mounted:
            for route in self._routes():
                inner = inner_name(name, route.prefixes)
                if inner is not None and inner in route.server._tools:
                    return self._views_of(route.server).tools, inner, route
        return self._server._tools, name, None

    def any_task_support(self) -> bool:
        """Whether some tool served here may run as a task."""
        return any(route.server._tools.any_task_support() for route in self._routes())

    def header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None:
        tools, inner = self._tool(name)
        return tools.header_annotations(inner)

    # ---------------------------------------------------------- handlers

    async def _listed(
        self,
        ctx: RequestContext,
        params: Any,
        own: Callable[[RequestContext, Any], Awaitable[Any]],
        definitions: Callable[[Server], list[dict[str, Any]]],
        field: str,
        key: str,
    ) -> Any:
        """A list request: the server's own answer when nothing is mounted, else every route's
        definitions merged (``field`` renamed: a name, or a URI for any other field) and paged."""
        if not self._mounted:
            return await own(ctx, params)
        lists = [(r, definitions(r.server)) for r in self._routes()]
        return self._server._page(ctx, self._merged(lists, field, uri=field != "name"), key)

    async def list_tools(self, ctx: RequestContext, params: Any) -> Any:
        own = self._server._tools.list
        return await self._listed(
            ctx, params, own, lambda s: s._tools.definitions(ctx.version), "name", "tools"
        )

    async def call_tool(self, ctx: RequestContext, params: Any) -> Any:
        tools, inner, route = self._tool_route(params.name)
        if route is None or not _with_middleware(route):
            return await tools.call(ctx, params, inner)  # (its messages name the tool as called)
        call = _as_called(tools.call, route)
        return await _through(route, "tools/call", _NAME, ctx, _NAME.put(params, inner), call)

    async def list_resources(self, ctx: RequestContext, params: Any) -> Any:
        own = self._server._resources.list
        return await self._listed(ctx, params, own, lambda s: s._resources.definitions(), "uri", "resources")

    async def list_templates(self, ctx: RequestContext, params: Any) -> Any:
        own, key = self._server._resources.list_templates, "resourceTemplates"
        return await self._listed(
            ctx, params, own, lambda s: s._resources.template_definitions(), "uriTemplate", key
        )

    async def read_resource(self, ctx: RequestContext, params: Any) -> Any:
        if self._mounted and params.uri not in self._server._resources:  # (its own first)
            for route in self._routes()[1:]:
                inner = inner_uri(params.uri, route.prefixes)
                if inner is not None and inner in route.server._resources:
                    read = self._views_of(route.server).resources.read
                    result = await _through(route, "resources/read", _URI, ctx, _URI.put(params, inner), read)
                    for content in result.get("contents", ()):
                        outer = prefixed_uri(content.get("uri", ""), route.prefixes)
                        if outer is not None and "uri" in content:
                            content["uri"] = outer
                    return result
        return await self._server._resources.read(ctx, params)

    async def list_prompts(self, ctx: RequestContext, params: Any) -> Any:
        own = self._server._prompts.list
        return await self._listed(ctx, params, own, lambda s: s._prompts.definitions(), "name", "prompts")

    async def get_prompt(self, ctx: RequestContext, params: Any) -> Any:
        if self._mounted:
            for route in self._routes():
                inner = inner_name(params.name, route.prefixes)
                if inner is not None and inner in route.server._prompts:
                    prompts = self._views_of(route.server).prompts
                    if not _with_middleware(route):
                        return await prompts.get(ctx, params, inner)
                    get = _as_called(prompts.get, route)
                    return await _through(route, "prompts/get", _NAME, ctx, _NAME.put(params, inner), get)
        return await self._server._prompts.get(ctx, params)

    async def complete(self, ctx: RequestContext, params: Any) -> Any:
        ref = params.ref
        # (a prompt's ref has a name, a template's a uri)
        key = _PROMPT_REF if getattr(ref, "name", None) is not None else _TEMPLATE_REF
        if self._mounted:
            for route in self._routes():
                inner = key.inner(key.get(params), route.prefixes)
                if inner is not None and route.server._prompts.completes(inner, params.argument.name):
                    complete = self._views_of(route.server).prompts.complete
                    return await _through(
                        route, "completion/complete", key, ctx, key.put(params, inner), complete
                    )
        return await self._server._prompts.complete(ctx, params)


# ------------------------------------------------------- mounted middleware


@dataclass(frozen=True, slots=True)
class _Key:
    """Where a routed request names what it asks for, and how that name is prefixed."""

    get: Callable[[Any], str]
    put: Callable[[Any, str], Any]
    outer: Callable[[str, tuple[str, ...]], str | None]
    inner: Callable[[str, tuple[str, ...]], str | None]


def _with_ref(params: Any, **field: str) -> Any:
    return msgspec.structs.replace(params, ref=msgspec.structs.replace(params.ref, **field))


_NAME = _Key(lambda p: p.name, lambda p, n: msgspec.structs.replace(p, name=n), prefixed_name, inner_name)
_URI = _Key(lambda p: p.uri, lambda p, u: msgspec.structs.replace(p, uri=u), prefixed_uri, inner_uri)
_PROMPT_REF = _Key(lambda p: p.ref.name, lambda p, n: _with_ref(p, name=n), prefixed_name, inner_name)
_TEMPLATE_REF = _Key(lambda p: str(p.ref.uri), lambda p, u: _with_ref(p, uri=u), prefixed_uri, inner_uri)


def _as_called(
    answer: Callable[[RequestContext, Any, str], Awaitable[Any]], route: _Route
) -> Callable[[RequestContext, Any], Awaitable[Any]]:
    """``answer(ctx, params, inner)`` given the params naming the tool or prompt as ``route.server``
    does: its messages name it as the client called it."""

    def call(ctx: RequestContext, params: Any) -> Awaitable[Any]:
        called = prefixed_name(params.name, route.prefixes)
        return answer(ctx, msgspec.structs.replace(params, name=called), params.name)

    return call


def _with_middleware(route: _Route) -> bool:
    return any(server.middleware for server, _ in route.path)


async def _through(
    route: _Route,
    method: str,
    key: _Key,
    ctx: RequestContext,
    params: Any,
    last: Callable[[RequestContext, Any], Awaitable[Any]],
) -> Any:
    """``last(ctx, params)`` (``params`` naming what they ask for as ``route.server`` names it),
    wrapped by the middleware of each server mounted on the way, the outermost first: each sees
    the request as that server would (its tool, prompt or URI under the prefixes below it).
    A middleware may change the params, and the name too, within the server it belongs to."""
    levels = [(server, prefixes) for server, prefixes in route.path if server.middleware]
    if not levels:
        return await last(ctx, params)

    def enter(level: int) -> CallNext:
        server, prefixes = levels[level]

        def onward(request: RequestInfo) -> Awaitable[Result]:
            named = key.get(request.params)
            inner = key.inner(named, prefixes)
            if inner is None:
                raise McpError(
                    rpc.INVALID_PARAMS,
                    f"a middleware of server {server.info['name']!r} renamed this {method} to {named!r}, "
                    f"which is not a name of the server it was routed to, {route.server.info['name']!r}",
                )
            if level + 1 == len(levels):
                assert request.context is not None  # (set on the server's side)
                return last(request.context, key.put(request.params, inner))
            return enter(level + 1)(
                _request(method, key.put(request.params, inner), levels[level + 1][1], key, request)
            )

        return chain(server.middleware, onward)

    first = RequestInfo(
        method=method,
        params=params,
        name=None,
        request_id=ctx.id,
        session_id=session_id_of(ctx.session.channel),
        side="server",
        context=ctx,
    )
    return await enter(0)(_request(method, params, levels[0][1], key, first))


def _request(
    method: str, params: Any, prefixes: tuple[str, ...], key: _Key, like: RequestInfo
) -> RequestInfo:
    """``like`` for a server whose names are under ``prefixes``: ``params`` (as the routed server
    names them) renamed for it."""
    outer = key.outer(key.get(params), prefixes)
    renamed = params if outer is None else key.put(params, outer)
    return msgspec.structs.replace(like, params=renamed, name=name_of(method, renamed))


class _Holding:
    """The lifespans of the servers mounted while the parent's is entered."""

    __slots__ = ("leaving", "late")

    def __init__(self) -> None:
        self.leaving = trio.Event()  # (the parent's lifespan is being left: leave them)
        self.late: list[trio.Event] = []  # (each set once that one is left)


async def _hold_late(other: Server, leaving: trio.Event, left: trio.Event) -> None:
    """Hold the lifespan of ``other``, mounted while its parent's is entered, until that one is
    left (a failure is logged: the mount is done, nobody waits for it)."""
    try:
        async with other.lifespan.held():
            await leaving.wait()
    except Exception:
        log.exception("the lifespan of server %r, mounted while serving, failed", other.info["name"])
    finally:
        left.set()


def _context_for(server: Server, lifespan: Lifespan) -> Callable[[RequestContext], Context]:
    """What a mounted handler sees: the context of the server serving the request, with the
    lifespan of the handler's own server."""

    def context(request: RequestContext) -> Context:
        return Context(server, request, lifespan=lifespan)

    return context
