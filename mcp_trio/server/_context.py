"""What a tool, resource or prompt handler sees: :class:`Context` (progress, logging,
asking the client for sampling, elicitation and roots, ``start_task``), the errors
it raises, and how a handler gets its ``Context`` parameter and is called.

Asking the client checks the client's capabilities first (a missing one is a
:class:`LocalProtocolError`, from 2026-07-28 on a :class:`MissingClientCapability`);
inside a multi-round-trip request the answer comes from the round's inputs (see
:mod:`mcp_trio.server._mrtr`), inside a task through the task (see
:mod:`mcp_trio.server._task_context`).
"""

from __future__ import annotations

import inspect
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, NoReturn, TypeVar, get_args, overload

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._common import failures
from .._engine._context import RequestContext
from .._engine._session import Session
from .._exceptions import LocalProtocolError, McpError
from ..transports._base import HostedSession
from ..types import _versions
from ._elicit import Elicited, form_schema, typed_answer
from ._mrtr import MISSING
from ._session_state import Absent
from ._task_context import TaskRequestContext

if TYPE_CHECKING:
    from ._lifespan import Lifespan
    from ._server import Server

__all__ = ["Context", "MissingClientCapability"]

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: tuple[LogLevel, ...] = get_args(LogLevel)
T = TypeVar("T")

#: Client capabilities newer than the first revision, and the revision they came with.
_SINCE = {
    "elicitation": "2025-06-18",
    "elicitation.url": "2025-11-25",
    "sampling.tools": "2025-11-25",
}

_LEVEL_RANK: dict[str, int] = {name: i for i, name in enumerate(LOG_LEVELS)}
_FIRST_ISERROR_ARGS = "2025-11-25"  # from here on, bad tool arguments are tool execution errors


class MissingClientCapability(LocalProtocolError, McpError):
    """A handler needs a client capability the client did not declare, or its protocol revision
    does not have.

    Uncaught, it answers the request with ``MissingRequiredClientCapabilityError`` (-32021),
    whose ``data.requiredCapabilities`` names what is missing: 2026-07-28 names that error; in
    earlier revisions the code is one of those JSON-RPC leaves to implementations, and a tool
    that raises it answers with a tool error (``isError``) as for any other failure. It is a
    :class:`LocalProtocolError` too, so a handler that copes with a missing capability catches
    either.
    """

    def __init__(self, message: str, required: dict[str, Any]) -> None:
        McpError.__init__(
            self,
            rpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message,
            {"requiredCapabilities": required},
        )

    def __str__(self) -> str:
        return self.message  # (what a handler shows: a sentence, as a LocalProtocolError's)


def failure_text(exc: BaseException) -> str:
    """What a failure says: its message as written; its type's name when the message is empty
    or, as a ``KeyError``'s, only names a value (``KeyError: 'x'``).  A group says what its
    leaves say, not that it is a group."""
    texts: list[str] = []
    for leaf in failures(exc):
        message = str(leaf)
        name = type(leaf).__name__
        text = message if message and not isinstance(leaf, KeyError) else f"{name}: {message}".rstrip(": ")
        if text not in texts:
            texts.append(text)
    return "; ".join(texts)


class _StartTask(BaseException):
    """Unwinds a deferred tool at ``ctx.start_task()``: the request now
    answers with a task that replays the tool (a ``BaseException``, like
    ``InputRequired``, so that ``except Exception`` does not swallow it)."""


class Context:
    """What a tool, resource or prompt handler can do while it runs.

    Ask for it by annotating a parameter with ``Context``.
    """

    def __init__(self, server: Server, request: RequestContext, *, lifespan: Lifespan | None = None) -> None:
        self.server = server  # (the one serving the request: a server mounted in it answers through it)
        self.request = request
        self._lifespan = server.lifespan if lifespan is None else lifespan  # (the handler's server's)

    @property
    def session(self) -> Session:
        return self.request.session

    @property
    def request_id(self) -> int | str:
        return self.request.id

    @property
    def protocol_version(self) -> str:
        return self.request.version

    @property
    def client_capabilities(self) -> dict[str, Any]:
        return self.request.client_capabilities

    @property
    def auth(self) -> Any:
        """The verified access token this request came with, behind a protected
        HTTP endpoint (``serve_http(auth=...)``: an
        :class:`mcp_trio.auth.server.AccessToken` with subject, client id,
        scopes and claims); ``None`` elsewhere."""
        return self.request.auth

    def lifespan_value(self, kind: type[T]) -> T:
        """What the server's lifespan gave (``Server(lifespan=...)``), checked to be a ``kind``
        (``TypeError`` if not; ``LookupError`` if the server has none).  In a handler of a
        mounted server (``server.mount``), that server's lifespan."""
        return self._lifespan.value(kind)

    @overload
    async def get_state(self, key: str, kind: type[T]) -> T | None: ...

    @overload
    async def get_state(self, key: str, kind: type[T], default: T) -> T: ...

    async def get_state(self, key: str, kind: type[T], default: T | None = None) -> T | None:
        """What a handler of this session kept as ``key`` (:meth:`set_state`), as a ``kind``;
        ``default`` if nothing.  Shared through the store under ``--workers``: see
        docs/guide/context.md."""
        value = await self.server._open.get_state(self._stateful("get_state"), key, kind)
        return default if isinstance(value, Absent) else value

    async def set_state(self, key: str, value: object) -> None:
        """Keep ``value`` as ``key`` for the handlers of this session's later requests (it lives
        as long as the session; under ``--workers``, in the store, so it must be JSON-encodable)."""
        await self.server._open.set_state(self._stateful("set_state"), key, value)

    async def delete_state(self, key: str) -> None:
        """Forget what was kept as ``key`` for this session (nothing if nothing was)."""
        await self.server._open.set_state(self._stateful("delete_state"), key, None, delete=True)

    def _stateful(self, what: str) -> Session:
        """The session, which must outlive the request for its state to mean anything: a
        connection (stdio, WebSocket, in memory) or a Streamable HTTP session, not a request
        served on its own (a stateless server, or any 2026-07-28 request over HTTP)."""
        channel = self.session.channel
        if isinstance(channel, HostedSession) and channel.sessionless:
            raise RuntimeError(
                f"ctx.{what}: this request has no session to keep state in (it is served on "
                f"its own over HTTP: protocol revision {self.protocol_version}"
                f"{'' if _versions.is_stateless(self.protocol_version) else ', a stateless server'}"
                "); keep it in the lifespan's value, or in a store of your own keyed by "
                "something the client sends"
            )
        return self.session

    @property
    def progress_token(self) -> int | str | None:
        """The client's progress token for this request, if it asked for progress."""
        return self.request.progress_token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Progress for this request (sent only if the client asked for it)."""
        await self.request.report_progress(progress, total, message)

    async def close_stream(self) -> bool:
        """End this request's Streamable HTTP response stream now (SSE polling,
        2025-11-25 on); the handler goes on and the client gets the rest when it
        resumes the stream.  False on transports without response streams."""
        return await self.request.close_stream()

    async def log(self, level: LogLevel, data: Any, logger: str | None = None) -> None:
        """Send ``notifications/message`` if ``level`` passes the client's threshold."""
        if level not in _LEVEL_RANK:
            raise ValueError(f"unknown log level {level!r}; one of {', '.join(LOG_LEVELS)}")
        threshold = self.server._open.log_threshold(self)
        if threshold is None or _LEVEL_RANK[level] < _LEVEL_RANK[threshold]:
            return
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self.request.notify("notifications/message", params)

    async def debug(self, data: Any) -> None:
        await self.log("debug", data)

    async def info(self, data: Any) -> None:
        await self.log("info", data)

    async def warning(self, data: Any) -> None:
        await self.log("warning", data)

    async def error(self, data: Any) -> None:
        await self.log("error", data)

    def _require(self, capability: str, detail: str | None = None) -> dict[str, Any]:
        what = capability if detail is None else f"{capability}.{detail}"
        required: dict[str, Any] = {capability: {}} if detail is None else {capability: {detail: {}}}
        since = _SINCE.get(what)
        if since is not None and self.protocol_version < since:
            self._missing(
                f"{what} does not exist in protocol revision {self.protocol_version}, "
                f"the one negotiated with this client (it needs {since} or later)",
                required,
            )
        channel = self.session.channel
        stateless_server = isinstance(channel, HostedSession) and channel.assumed_version is not None
        if stateless_server and not _versions.is_stateless(
            self.protocol_version
        ):  # (2026-07-28 asks in-band)
            self._missing(
                f"this server is stateless (--stateless): in revision {self.protocol_version} it "
                f"has no session to send the client a request on, so {what} cannot be asked for "
                "(serve with sessions, or let the client speak 2026-07-28)",
                required,
            )
        caps = self.client_capabilities.get(capability)
        if not isinstance(caps, dict):
            self._missing(f"the client did not advertise the {capability!r} capability", required)
        if detail is not None and detail not in caps:
            self._missing(f"the client did not advertise {what}", required)
        return caps

    def _missing(self, message: str, required: dict[str, Any]) -> NoReturn:
        if _versions.is_stateless(self.protocol_version):
            message = f"Missing required client capability: {message}"
        raise MissingClientCapability(message, required)

    async def _input(
        self,
        method: str,
        params: dict[str, Any],
        result_type: str,
        timeout: float | None,
        input_key: str | None,
    ) -> Any:
        """Ask the client: a request (legacy), an input of this round (2026-07-28+)
        or an input request of the task the handler runs as (extension)."""
        inputs = self.server._rounds.inputs.get(id(self.request))
        if inputs is not None:
            key = inputs.key_for(method, params, input_key)
            answer = inputs.lookup(key)
            if answer is not MISSING:
                target = getattr(_versions.module_for(self.protocol_version), result_type)
                try:
                    return msgspec.convert(answer, target)
                except msgspec.ValidationError as exc:
                    raise McpError(
                        rpc.INVALID_PARAMS,
                        f"inputResponses[{key!r}] is not a valid {result_type}: {exc}",
                    ) from None
            if not inputs.replay:
                raise inputs.ask(key, method, params)
        if isinstance(self.request, TaskRequestContext):
            return await self.request.request(method, params, timeout=timeout, input_key=input_key)
        return await self.request.request(method, params, timeout=timeout)

    async def start_task(self) -> bool:
        """Go on as a task, if this call of a task-capable tool gets one.

        In a tool registered with ``defer_task=True``, called by a client
        that declared the Tasks extension (2026-07-28), this ends the
        request: its answer is the ``CreateTaskResult``, and the task runs
        the tool again from the start, with the inputs gathered so far
        answered at once, past this call.  Elsewhere it returns at once:
        ``True`` when the tool already runs as a task, ``False`` when it runs
        inline.
        """
        if isinstance(self.request, TaskRequestContext):
            return True
        if id(self.request) in self.server._rounds.deferred:
            raise _StartTask()
        return False

    async def sample(
        self,
        messages: Sequence[dict[str, Any]] | str,
        *,
        max_tokens: int = 1000,
        timeout: float | None = None,
        input_key: str | None = None,
        **params: Any,
    ) -> Any:
        """Ask the client's LLM (``sampling/createMessage``); returns the result Struct.

        Extra keyword arguments are request fields (``systemPrompt``,
        ``tools``, ``toolChoice`` ...).  Tools need the client's
        ``sampling.tools`` capability.  ``input_key`` names the ask in
        ``inputRequests`` (2026-07-28).
        """
        self._require("sampling", "tools" if "tools" in params or "toolChoice" in params else None)
        if isinstance(messages, str):
            messages = [{"role": "user", "content": {"type": "text", "text": messages}}]
        body = {"messages": list(messages), "maxTokens": max_tokens, **params}
        return await self._input("sampling/createMessage", body, "CreateMessageResult", timeout, input_key)

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: type[T],
        *,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Elicited[T]: ...

    @overload
    async def elicit(
        self,
        message: str,
        requested_schema: dict[str, Any],
        *,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Any: ...

    async def elicit(
        self,
        message: str,
        requested_schema: type[T] | dict[str, Any],
        *,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Elicited[T] | Any:
        """Ask the user to fill a form (``elicitation/create``, form mode).

        ``requested_schema`` is a type (a dataclass, TypedDict or msgspec
        Struct of str, int, float, bool and Literal/Enum-of-strings fields):
        the form is built from it and the answer comes back as
        :class:`Elicited` with ``data`` of that type; or a raw JSON Schema
        dict, and the answer is the ``ElicitResult`` as received.
        """
        kind = requested_schema if isinstance(requested_schema, type) else None
        schema = form_schema(kind) if kind is not None else requested_schema
        caps = self._require("elicitation")
        if caps and "form" not in caps and "url" in caps:
            self._missing("the client supports only URL mode elicitation", {"elicitation": {"form": {}}})
        body: dict[str, Any] = {"message": message, "requestedSchema": schema}
        if self.protocol_version >= _FIRST_ISERROR_ARGS:
            body["mode"] = "form"
        result = await self._input("elicitation/create", body, "ElicitResult", timeout, input_key)
        return typed_answer(result, kind) if kind is not None else result

    async def elicit_url(
        self,
        message: str,
        url: str,
        *,
        elicitation_id: str | None = None,
        timeout: float | None = None,
        input_key: str | None = None,
    ) -> Any:
        """Send the user to ``url`` (``elicitation/create``, URL mode, 2025-11-25+)."""
        if self.protocol_version < _FIRST_ISERROR_ARGS:
            raise LocalProtocolError(f"URL mode elicitation does not exist in {self.protocol_version}")
        self._require("elicitation", "url")
        body: dict[str, Any] = {"mode": "url", "message": message, "url": url}
        if not _versions.is_stateless(self.protocol_version):
            body["elicitationId"] = elicitation_id or secrets.token_urlsafe(16)
        return await self._input("elicitation/create", body, "ElicitResult", timeout, input_key)

    async def list_roots(self, *, timeout: float | None = None, input_key: str | None = None) -> Any:
        """The client's roots (``roots/list``)."""
        self._require("roots")
        return await self._input("roots/list", {}, "ListRootsResult", timeout, input_key)


@dataclass(frozen=True, slots=True)
class FeatureHost:
    """What the feature registries of a server (``Tools``, ``Resources``, ``Prompts``) use of it."""

    changed: Callable[[str], None]  # send a list_changed notification (to every worker's sessions)
    page: Callable[[RequestContext, list[dict[str, Any]], str], dict[str, Any]]  # a list's page
    cacheable: Callable[[RequestContext, dict[str, Any]], dict[str, Any]]  # ttlMs, cacheScope
    context: Callable[[RequestContext], Context]  # what a handler sees
    limiter: trio.CapacityLimiter  # the worker threads of sync handlers


def _wants_context(annotation: Any) -> bool:
    return annotation is Context or annotation == "Context"


async def _call(
    fn: Callable[..., Any], kwargs: dict[str, Any], limiter: trio.CapacityLimiter | None = None
) -> Any:
    """Run a handler: on the event loop, or (with ``limiter``: a sync handler)
    in a worker thread that ``limiter`` bounds.

    A cancelled request does not wait for its thread (Python cannot stop
    one): the answer is given up at once and the thread runs to its end,
    keeping its limiter token until then.
    """
    if limiter is not None:
        result = await trio.to_thread.run_sync(partial(fn, **kwargs), limiter=limiter, abandon_on_cancel=True)
    else:
        result = fn(**kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives an awaitable by its declaration (a coroutine
    function, a partial of one, or an object whose ``__call__`` is one)."""
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - the declared method, not callable()
    return call is not None and inspect.iscoroutinefunction(call)


def _thread_for(fn: Callable[..., Any], on_loop: bool) -> bool:
    """Whether handler ``fn`` runs in a worker thread: a sync one does, unless
    registered with ``on_loop=True``."""
    return not on_loop and not _is_async(fn)


def refuse_registration(fn: Any, what: str, name: str | None) -> None:
    """Refuse, naming the fix, what ``@server.<what>`` cannot serve as its caller means it:
    not a function, a class, a method taken from its class (``self`` unbound), a tool or
    prompt that is a lambda without ``name=``, a parameter named ``ctx`` that is not annotated
    ``Context`` (it would be an argument of the request, not the context)."""
    if inspect.isclass(fn):
        raise TypeError(
            f"@server.{what} decorates a function, not the class {fn.__name__}: register a method "
            f"of an instance instead, server.{what}(instance.method)"
        )
    if not callable(fn):
        raise TypeError(f"@server.{what} decorates a function, not {fn!r}")
    label = getattr(fn, "__name__", repr(fn))
    if label == "<lambda>" and name is None and what != "resource":  # (a resource is its URI)
        raise ValueError(
            f"a lambda has no name for the {what}: give one, server.{what}(name='...')(lambda ...)"
        )
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    if parameters and parameters[0].name in ("self", "cls") and not inspect.ismethod(fn):
        raise TypeError(
            f"{label} takes {parameters[0].name} (a method taken from its class): decorate the bound "
            f"method of an instance instead, server.{what}(instance.{label})"
        )
    for parameter in parameters:
        if parameter.name == "ctx" and not _wants_context(parameter.annotation):
            raise TypeError(
                f"parameter ctx of {label} is not annotated Context: write ctx: Context to receive the "
                f"request's context (or rename it if it is an argument of the {what})"
            )


def _context_param(fn: Callable[..., Any]) -> str | None:
    try:
        hints = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    for name, param in hints.items():
        if _wants_context(param.annotation):
            return name
    return None


def _only(exc: BaseException, kind: type[BaseException]) -> bool:
    """``exc`` is a ``kind``, or a group of nothing else."""
    if isinstance(exc, kind):
        return True
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(e, kind) for e in exc.exceptions)
    return False
