"""High-level MCP server: declare tools, resources and prompts; dispatch their requests.

This module holds :class:`Server` itself: an orchestrator over collaborators
that each own their state: :class:`~._tools.Tools`, :class:`~._resources.Resources`
and :class:`~._prompts.Prompts` (each feature's registry and handlers),
:class:`~._rounds.Rounds` (multi-round-trip requests), the task manager; the
server keeps the sessions, capabilities, notifications and the dispatch table
(``serve_*`` are :mod:`._serving`).  What a handler sees is :mod:`._context`,
how its result is shaped :mod:`._results`.

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
* ``mount`` serves another server's features through this one, live, under a
  prefix; ``import_server`` copies them once (the rules: :mod:`._mount`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any, Unpack, overload

import trio

from .._engine._context import RequestContext
from .._engine._queue import QueueBudget
from .._engine._session import Session, new_session
from ..middleware._base import Middleware
from ..transports._base import HostedSession, MessageChannel, SharedSession
from ..types import _versions
from . import _serving
from ._context import Context, FeatureHost
from ._cursor import page
from ._dispatch import Answering, Dispatch
from ._fanout import Fanout
from ._lifespan import Lifespan, LifespanFactory
from ._listen import SubscriptionHub
from ._mount import Mounts
from ._open_sessions import OpenSessions
from ._prompts import PromptOptions, Prompts
from ._resources import Resources
from ._rounds import Rounds
from ._routes import Route, register_route
from ._shutdown import GracefulShutdown
from ._stats import ServerStatistics, _Totals
from ._tasks import TaskManager
from ._tools import F, ToolOptions, Tools

__all__ = ["Server"]

log = logging.getLogger("mcp_trio.server")


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
        sync_limiter: Bounds the worker threads that run sync handlers
            (tools, resources, prompts, completions not registered with
            ``on_loop=True``); by default 40 at once, shared by every
            session of this server.
        middleware: Wrap every request a handler answers (see
            :mod:`mcp_trio.middleware` and docs/middleware.md), the first
            listed outermost; more with :meth:`add_middleware`.
        mask_error_details: A tool's exception other than :class:`~mcp_trio.ToolError`
            reaches the model as a generic message naming an error id, which the
            log has with the traceback (by default: its message).
        lifespan: A function of the server giving an async context manager, entered once
            before the first request and left after the last (see :mod:`._lifespan`); what
            it gives, handlers reach with ``ctx.lifespan_value(Type)``.
        keep_schema_refs: Advertise the schemas built from tool signatures with ``$defs``
            and ``$ref`` (by default each reference is replaced by its definition, for hosts
            that cannot follow ``$ref``; recursive types keep theirs either way).
        **session_options: Every session's (see :func:`~mcp_trio.open_session`); ``queue_budget``: its own.
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
        sync_limiter: trio.CapacityLimiter | None = None,
        middleware: Sequence[Middleware] = (),
        mask_error_details: bool = False,
        lifespan: LifespanFactory | None = None,
        keep_schema_refs: bool = False,
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
        self.session_options = {"queue_budget": QueueBudget(), **session_options}
        self._sync_limiter = sync_limiter if sync_limiter is not None else trio.CapacityLimiter(40)
        #: Open ``subscriptions/listen`` requests (2026-07-28).
        self.subscriptions = SubscriptionHub(lambda: self.capabilities)
        self._open = OpenSessions(self.subscriptions)
        self._rounds = Rounds(state_key, state_ttl)
        self.tasks = tasks if tasks is not None else TaskManager(page_size=page_size)
        self._mounts = Mounts(self, self._changed)  # (servers mounted here, and where this one is)
        host = FeatureHost(
            self._mounts.changed, self._page, self._cacheable, self._context, self._sync_limiter
        )
        self._tools = Tools(
            host,
            tasks=self.tasks,
            rounds=self._rounds,
            mask_error_details=mask_error_details,
            keep_schema_refs=keep_schema_refs,
        )
        self._resources = Resources(host, sessions=self._open, hub=self.subscriptions)
        self._prompts = Prompts(host)
        self._dispatch = Dispatch(lambda: self.request_handlers(), middleware, self._open.sessions)
        self._shared_capabilities: tuple[bool, dict[str, Any]] | None = None  # see _session_capabilities
        self._routes: dict[str, Route] = {}  # see route()
        self._fanout: Fanout | None = None  # see serve_http(store=...)
        self._totals = _Totals()  # see statistics()
        self._answering: Answering | None = None  # (see _answer_with)
        self.lifespan = Lifespan(lifespan, self)

    # ------------------------------------------------ tools, resources, prompts

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(self, fn: None = None, /, **options: Unpack[ToolOptions]) -> Callable[[F], F]: ...

    def tool(self, fn: F | None = None, /, **options: Unpack[ToolOptions]) -> F | Callable[[F], F]:
        """Register a tool (decorator, with or without arguments); the function
        is returned unchanged.

        A sync function runs in a worker thread (at most the server's
        ``sync_limiter`` at once), so a blocking call never holds up the
        session; ``on_loop=True`` runs it on the event loop instead (for quick
        handlers on hot paths).  A second tool of the same name raises
        ``ValueError`` unless ``replace=True``.

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
        return self._tools.tool(fn, options)

    def tool_header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None:
        """The ``x-mcp-header`` annotations of tool ``name`` (None: no such tool);
        Streamable HTTP checks ``Mcp-Param-*`` headers against them."""
        answering = self._answering
        return (
            self._mounts.header_annotations(name) if answering is None else answering.header_annotations(name)
        )

    def tool_names(self) -> list[str]:
        """The names of the registered tools, in registration order."""
        return self._tools.names()

    def remove_tool(self, name: str) -> None:
        self._tools.remove(name)

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
        on_loop: bool = False,
        replace: bool = False,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{...}`` is an RFC 6570 template whose
        variables are passed to the handler as keyword arguments.  The handler
        returns ``str`` (text), ``bytes`` (blob) or a list of contents dicts.

        The handler's parameters must match the template's variables (a
        mismatch raises ``TypeError`` here, naming both).  A sync handler
        runs in a worker thread unless ``on_loop=True``; a second resource
        with the same URI raises ``ValueError`` unless ``replace=True``.
        """
        return self._resources.resource(
            uri,
            name=name,
            title=title,
            description=description,
            mime_type=mime_type,
            annotations=annotations,
            size=size,
            icons=icons,
            on_loop=on_loop,
            replace=replace,
        )

    def remove_resource(self, uri: str) -> None:
        self._resources.remove(uri)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the sessions subscribed to ``uri`` that it changed (and the
        2026-07-28 ``subscriptions/listen`` streams watching it); served with a
        store (``serve_http(store=...)``), those of every worker serving it."""
        if self._fanout is not None:
            await self._fanout.publish(uri)
        await self._resources.updated_here(uri)
        await self._mounts.updated(uri)  # (the servers this one is mounted in)

    @overload
    def prompt(self, fn: F, /) -> F: ...

    @overload
    def prompt(self, fn: None = None, /, **options: Unpack[PromptOptions]) -> Callable[[F], F]: ...

    def prompt(self, fn: F | None = None, /, **options: Unpack[PromptOptions]) -> F | Callable[[F], F]:
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
        return self._prompts.prompt(fn, **options)

    def prompt_names(self) -> list[str]:
        """The names of the registered prompts, in registration order."""
        return self._prompts.names()

    def remove_prompt(self, name: str) -> None:
        self._prompts.remove(name)

    def completion(self, ref: str, argument: str, *, on_loop: bool = False) -> Callable[[F], F]:
        """Register completions for a prompt argument (``ref`` = prompt name) or a
        template variable (``ref`` = the URI template).  The handler takes
        ``(value, context_arguments)`` and returns a list of strings; a sync
        one runs in a worker thread unless ``on_loop=True``."""
        return self._prompts.completion(ref, argument, on_loop=on_loop)

    def mount(self, server: Server, prefix: str | None = None) -> None:
        """Serve ``server``'s features through this one, live, under ``prefix`` (guide: composition)."""
        self._mounts.mount(_a_server(server, "mount"), prefix)

    def import_server(self, server: Server, prefix: str | None = None) -> None:
        """Copy what ``server`` registered into this one, once, under ``prefix`` (as :meth:`mount`)."""
        self._mounts.import_server(_a_server(server, "import_server"), prefix)

    # ----------------------------------------------------------- capabilities

    def _answer_with(self, answering: Answering) -> None:
        """Answer every request with ``answering``, advertising its capabilities (a proxy)."""
        self._answering = answering
        answering.attach(self._mounts.changed, self.subscriptions.listen, self.subscriptions.resource_updated)

    @property
    def capabilities(self) -> dict[str, Any]:
        if self._answering is not None:
            return self._answering.capabilities()
        caps: dict[str, Any] = {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "completions": {},
            "logging": {},
        }
        if self._mounts.any_task_support():
            caps.update(self.tasks.capabilities())  # tasks (2025-11-25) and the Tasks extension
        return caps

    def _session_capabilities(self) -> dict[str, Any]:
        """:attr:`capabilities`, one dict shared by the sessions (which only
        read it) until a tool with task support changes what it holds."""
        if type(self).capabilities is not Server.capabilities or self._answering is not None:
            return self.capabilities  # a subclass decides: ask it each time
        tasks = self._mounts.any_task_support()
        shared = self._shared_capabilities
        if shared is None or shared[0] != tasks:
            shared = self._shared_capabilities = (tasks, self.capabilities)
        return shared[1]

    def _changed(self, method: str) -> None:
        if self._fanout is not None:
            self._fanout.list_changed(method)  # every worker announces it (once, coalesced)
        else:
            self._open.list_changed_here(method)

    # ------------------------------------------------------------- handlers

    def _cacheable(self, ctx: RequestContext, result: dict[str, Any]) -> dict[str, Any]:
        if _versions.is_stateless(ctx.version):
            result.setdefault("ttlMs", self.cache_ttl_ms)
            result.setdefault("cacheScope", self.cache_scope)
        return result

    def _page(self, ctx: RequestContext, items: list[dict[str, Any]], key: str) -> dict[str, Any]:
        return self._cacheable(ctx, page(ctx.params, items, key, self.page_size))

    @property
    def middleware(self) -> tuple[Middleware, ...]:
        """The middleware installed, the outermost first."""
        return tuple(self._dispatch.middleware)

    def add_middleware(self, middleware: Middleware, *, outermost: bool = False) -> None:
        """Install ``middleware`` inside those already installed (it sees each
        request after them), or with ``outermost`` outside them (it sees each
        request first).  Sessions already open take it too, from their next
        request (unless their ``request_handlers`` were changed)."""
        self._dispatch.add(middleware, outermost=outermost)

    def _count_in(self, shutdown: GracefulShutdown | None) -> None:
        """Have ``shutdown`` stop this server (see :class:`GracefulShutdown`)."""
        if shutdown is not None:
            shutdown._attach(self)

    def _refuse_requests(self, refuse: Callable[[Any, Any], Awaitable[Any]]) -> None:
        self._dispatch.refuse(refuse)  # (a graceful shutdown has begun)

    @property
    def _sessions(self) -> set[Session]:
        """The open sessions (a graceful shutdown cuts their requests)."""
        return self._open.sessions

    def request_handlers(self) -> dict[str, Any]:
        """The method handlers of a session (a new dict on every call)."""
        if self._answering is not None:
            return self._answering.request_handlers()
        return {
            "tools/list": self._mounts.list_tools,
            "tools/call": self._rounds.wrap(self._mounts.call_tool),
            "resources/list": self._mounts.list_resources,
            "resources/templates/list": self._mounts.list_templates,
            "resources/read": self._rounds.wrap(self._mounts.read_resource),
            "resources/subscribe": self._resources.subscribe,
            "resources/unsubscribe": self._resources.unsubscribe,
            "subscriptions/listen": self.subscriptions.listen,
            "prompts/list": self._mounts.list_prompts,
            "prompts/get": self._rounds.wrap(self._mounts.get_prompt),
            "completion/complete": self._mounts.complete,
            "logging/setLevel": self._open.set_level,
            "tasks/get": self.tasks.get_task,
            "tasks/result": self.tasks.get_result,
            "tasks/list": self.tasks.list_tasks,
            "tasks/cancel": self.tasks.cancel_task,
            "tasks/update": self.tasks.update_task,
        }

    def use_state_key(self, key: bytes) -> None:
        """Sign multi-round-trip request state (2026-07-28) with ``key`` (at least 16 bytes)
        from now on, as every process serving one endpoint must: a ``requestState`` signed by
        one is then accepted by the others (``mcp-trio serve --state-key``)."""
        self._rounds.use_key(key)

    def statistics(self) -> ServerStatistics:
        """Sessions open and opened, requests in flight and finished by
        outcome, in all and by transport (see docs/guide/operations.md)."""
        return self._totals.statistics()

    # -------------------------------------------------------------- serving

    # Running the server over a transport: functions of the server (in _serving.py) that use it
    # through serve_session and its task manager, bound here as methods.
    serve_http = _serving.serve_http
    serve_stdio = _serving.serve_stdio
    serve_websocket = _serving.serve_websocket
    route = register_route  # (plain HTTP routes of serve_http)

    def _context(self, ctx: RequestContext) -> Context:
        """What a handler of this server sees for request ``ctx``."""
        return Context(self, ctx)

    async def serve_session(
        self, channel: MessageChannel, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Serve one session over ``channel`` until the peer goes away."""
        # The session runs in this task: no nursery or task of its own around
        # it (an idle Streamable HTTP session is one parked task).
        async with self.lifespan.held():  # (the outer way of serving holds it, if any)
            await self._serve_session(channel, task_status)

    async def _serve_session(self, channel: MessageChannel, task_status: Any) -> None:
        capabilities = self._session_capabilities()
        if isinstance(channel, HostedSession) and channel.sessionless and "tasks" in capabilities:
            # A 2025-11-25 task belongs to its session: one that ends with its
            # request could never be found again, so none is offered (``task``
            # is then ignored).  Extension tasks are held by the manager.
            capabilities = {k: v for k, v in capabilities.items() if k != "tasks"}
        session = new_session(
            channel,
            role="server",
            info=self.info,
            capabilities=capabilities,
            versions=self.versions,
            instructions=self.instructions,
            request_handlers=self._dispatch.table(),
            **self.session_options,
        )
        self._open.opened(session)
        self._totals.opened(session, channel)
        if isinstance(channel, SharedSession) and channel.request_id_prefix is not None:  # shared
            restored = channel.restored
            if restored is not None:
                self._open.adopt(session, restored.log_level, restored.subscriptions)
            channel.on_shared_update = partial(self._open.adopt, session)
        try:
            await session.run(task_status=task_status)
        finally:
            self._totals.closed(session)
            self._open.closed(session)


def _a_server(other: object, what: str) -> Server:
    """``other`` if it is a :class:`Server` (what :meth:`Server.mount` and
    :meth:`Server.import_server` take), else a TypeError naming what it is."""
    if not isinstance(other, Server):
        raise TypeError(f"server.{what}() takes a Server, not {type(other).__name__}")
    return other
