"""Resources and resource templates (RFC 6570, see
:mod:`mcp_trio.server._uritemplate`): registration, ``resources/list``,
``resources/templates/list``, ``resources/read``, and the per-session
subscriptions of ``resources/subscribe`` with ``notifications/resources/updated``.

:class:`Resources` owns a :class:`~mcp_trio.server.Server`'s resources and the
subscriptions of its sessions.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ..types import _versions
from ._context import FeatureHost, _call, _context_param, _thread_for, refuse_registration
from ._fanout import adopted, announces
from ._results import resource_contents
from ._uritemplate import UriTemplate

if TYPE_CHECKING:
    from ._listen import SubscriptionHub
    from ._open_sessions import OpenSessions

log = logging.getLogger("mcp_trio.server")

F = TypeVar("F", bound=Callable[..., Any])


class _Resource:
    def __init__(
        self,
        fn: Callable[..., Any],
        definition: dict[str, Any],
        template: UriTemplate | None,
        mime_type: str | None,
        context_param: str | None,
        threaded: bool = False,
    ) -> None:
        self.fn = fn
        self.threaded = threaded
        self.definition = definition
        self.template = template
        self.mime_type = mime_type
        self.context_param = context_param


class Resources:
    """The resources, templates and subscriptions of a :class:`~mcp_trio.server.Server`:
    their registries, each session's ``resources/subscribe`` URIs, and the handlers."""

    def __init__(self, host: FeatureHost, *, sessions: OpenSessions, hub: SubscriptionHub) -> None:
        self._resources: dict[str, _Resource] = {}
        self._templates: dict[str, _Resource] = {}
        self._host = host
        self._sessions = sessions  # (whose subscriptions these are)
        self._hub = hub

    def resource(
        self,
        uri: str,
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        annotations: dict[str, Any] | None,
        size: int | None,
        icons: list[dict[str, Any]] | None,
        on_loop: bool,
        replace: bool,
    ) -> Callable[[F], F]:
        """``Server.resource``: the decorator registering a resource."""
        if not isinstance(uri, str):
            shown = getattr(uri, "__name__", repr(uri))
            raise TypeError(
                f"@server.resource needs the resource's URI first: write "
                f"@server.resource('scheme://path') above def {shown}(...)"
            )
        template = UriTemplate(uri) if "{" in uri else None

        def register(fn: F) -> F:
            refuse_registration(fn, "resource", name)
            if uri in (self._templates if template else self._resources) and not replace:
                raise ValueError(
                    f"a resource {uri!r} is already registered (pass replace=True to replace it)"
                )
            context_param = _context_param(fn)
            _check_parameters(fn, uri, template.variables if template else (), context_param)
            definition: dict[str, Any] = {"name": name or fn.__name__}
            definition["uriTemplate" if template else "uri"] = uri
            doc = description if description is not None else inspect.getdoc(fn)
            if doc:
                definition["description"] = doc.strip()
            for key, value in (
                ("title", title),
                ("mimeType", mime_type),
                ("annotations", annotations),
                ("size", size),
                ("icons", icons),
            ):
                if value is not None and not (template and key == "size"):
                    definition[key] = value
            entry = _Resource(fn, definition, template, mime_type, context_param, _thread_for(fn, on_loop))
            if template:
                self._templates[uri] = entry
            else:
                self._resources[uri] = entry
            self._host.changed("notifications/resources/list_changed")
            return fn

        return register

    def remove(self, uri: str) -> None:
        if uri in self._templates:
            del self._templates[uri]
        else:
            del self._resources[uri]
        self._host.changed("notifications/resources/list_changed")

    async def updated_here(self, uri: str) -> None:
        """Tell this worker's sessions subscribed to ``uri`` that it changed (and the
        2026-07-28 ``subscriptions/listen`` streams watching it)."""
        self._hub.resource_updated(uri)
        for session, uris in list(self._sessions.subscribed.items()):
            if uri in uris:
                try:
                    # (shared by workers: told by the one announcing to it, or instead of it if gone)
                    if announces(session) or await adopted(session):
                        await session.notify("notifications/resources/updated", {"uri": uri})
                except Exception as exc:
                    log.debug("could not notify %s: %s", uri, exc)

    def hosted_by(self, host: FeatureHost, sessions: OpenSessions, hub: SubscriptionHub) -> Resources:
        """These resources and templates, live (the same registries), answered for another server
        (one this server is mounted in): that server's contexts and sessions."""
        view = Resources(host, sessions=sessions, hub=hub)
        view._resources = self._resources
        view._templates = self._templates
        return view

    def copy_from(self, other: Resources, rename: Callable[[str], str]) -> None:
        """Register copies of ``other``'s resources and templates, each at ``rename(uri)``
        (``import_server``)."""
        for uri, entry in other._resources.items():
            definition = {**entry.definition, "uri": rename(uri)}
            self._resources[rename(uri)] = _Resource(
                entry.fn, definition, None, entry.mime_type, entry.context_param, entry.threaded
            )
        for uri, entry in other._templates.items():
            new = rename(uri)
            definition = {**entry.definition, "uriTemplate": new}
            self._templates[new] = _Resource(
                entry.fn, definition, UriTemplate(new), entry.mime_type, entry.context_param, entry.threaded
            )
        if other._resources or other._templates:
            self._host.changed("notifications/resources/list_changed")

    def __contains__(self, uri: str) -> bool:
        """Whether ``uri`` is a resource's or matches a template's (what ``resources/read`` finds)."""
        return self._find_resource(uri) is not None

    def definitions(self) -> list[dict[str, Any]]:
        return [r.definition for r in self._resources.values()]

    def template_definitions(self) -> list[dict[str, Any]]:
        return [r.definition for r in self._templates.values()]

    def uris(self) -> list[str]:
        """The URIs of the resources and the templates, in registration order."""
        return [*self._resources, *self._templates]

    async def list(self, ctx: RequestContext, params: Any) -> Any:
        return self._host.page(ctx, self.definitions(), "resources")

    async def list_templates(self, ctx: RequestContext, params: Any) -> Any:
        return self._host.page(ctx, self.template_definitions(), "resourceTemplates")

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

    async def read(self, ctx: RequestContext, params: Any) -> Any:
        uri = params.uri
        found = self._find_resource(uri)
        if found is None:
            code = rpc.INVALID_PARAMS if _versions.is_stateless(ctx.version) else rpc.RESOURCE_NOT_FOUND
            raise McpError(code, f"Resource not found: {uri}", {"uri": uri})
        entry, values = found
        kwargs = dict(values)
        if entry.context_param is not None:
            kwargs[entry.context_param] = self._host.context(ctx)
        value = await _call(entry.fn, kwargs, self._host.limiter if entry.threaded else None)
        return self._host.cacheable(ctx, {"contents": resource_contents(uri, value, entry.mime_type)})

    async def subscribe(self, ctx: RequestContext, params: Any) -> Any:
        self._sessions.subscribed.setdefault(ctx.session, set()).add(params.uri)
        await self._sessions.share(ctx.session)
        return {}

    async def unsubscribe(self, ctx: RequestContext, params: Any) -> Any:
        self._sessions.subscribed.get(ctx.session, set()).discard(params.uri)
        await self._sessions.share(ctx.session)
        return {}


def _check_parameters(
    fn: Callable[..., Any], uri: str, variables: tuple[str, ...], context_param: str | None
) -> None:
    """Registration-time check: the template's variables are exactly what the
    handler takes (its parameters with defaults may be left out)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return  # a builtin or another callable without a signature: checked when read
    name = getattr(fn, "__qualname__", repr(fn))
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [
        n for n, p in params.items() if n != context_param and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    unknown = [v for v in variables if v not in named and not takes_any]
    if unknown:
        raise TypeError(
            f"resource {uri!r}: handler {name}() has no parameter for template variable(s) "
            f"{', '.join(unknown)} (its parameters: {', '.join(named) or 'none'})"
        )
    required = [n for n in named if params[n].default is inspect.Parameter.empty and n not in variables]
    if required:
        what = "template variables" if variables else "variables: this URI has none"
        raise TypeError(
            f"resource {uri!r}: handler {name}() requires {', '.join(required)}, which the URI "
            f"does not supply ({what}: {', '.join(variables) or '-'})"
        )
