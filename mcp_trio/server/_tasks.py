"""Server-side tasks: a long request answers at once and runs in the background.

Two protocols share this module.

**2025-11-25 tasks** (experimental, requestor-driven).  A tool declares
``execution.taskSupport`` (``"forbidden"``, the default, ``"optional"`` or
``"required"``) and the server advertises ``capabilities.tasks`` (``list``,
``cancel``, ``requests.tools.call``).  A ``tools/call`` whose params carry
``task`` (optionally ``{"ttl": ms}``) is answered at once with
``CreateTaskResult``; the tool runs in the background.  Then:

* ``tasks/get`` answers the task's state; ``tasks/list`` the caller's tasks,
  oldest first, in pages with opaque cursors;
* ``tasks/result`` blocks until the task is terminal and answers exactly what
  ``tools/call`` would have (the ``CallToolResult`` or its JSON-RPC error),
  with ``_meta["io.modelcontextprotocol/related-task"]``; a cancelled task has
  no result (-32602);
* ``tasks/cancel`` cancels the running tool and answers the task, now
  ``cancelled``; a task already terminal gets -32602;
* every status change after creation is pushed as
  ``notifications/tasks/status``, in order;
* a tool result with ``isError: true`` makes the task ``failed`` (as this
  revision says), a JSON-RPC error (``McpError``) too;
* a ``task`` on a tool that forbids it, or none on a tool that requires it,
  is -32601; a server that does not advertise ``tasks.requests.tools.call``
  ignores ``task`` and answers normally (so do revisions before 2025-11-25,
  which have no tasks: a "required" tool runs inline there, and sessions
  that live for one request, such as stateless Streamable HTTP's, whose
  transport marks them ``sessionless``: none of their tasks could be found
  again, so ``Server.serve_session`` leaves ``tasks`` out of their capabilities);
* the tool may still log and report progress: its notifications carry
  ``_meta["io.modelcontextprotocol/related-task"]`` and progress keeps using
  the ``progressToken`` of the original request.  When it asks the client
  something (elicitation, sampling, roots) the task is ``input_required``
  until the answer arrives, and the request carries the related-task
  ``_meta``; it travels on the stream of a waiting ``tasks/result``, if any.
  It has no timeout unless the tool passes one (the task's ttl bounds it).

**The Tasks extension** (``io.modelcontextprotocol/tasks``, on 2026-07-28,
server-directed).  The server advertises the extension in
``capabilities.extensions``.  For each ``tools/call`` whose per-request client
capabilities declare it, the server decides: a ``"required"`` or
``"optional"`` tool runs as a task and the answer is a ``CreateTaskResult``
(``resultType: "task"``); a ``"forbidden"`` tool runs inline.  A client that
did not declare the extension never gets a task: an optional tool runs inline
and a required one is refused with -32021 naming the extension.  Then:

* ``tasks/get`` answers the task with ``result`` (completed; a result with
  ``isError: true`` counts as completed), ``error`` (failed, a JSON-RPC
  error) or ``inputRequests`` (input_required);
* when the tool asks the client something, the request appears under a fresh
  key in ``inputRequests`` (the tool's own ``input_key`` when it was never
  used in this task); ``tasks/update`` delivers ``inputResponses``
  (keys not outstanding are ignored; a response that does not fit the
  request's result type is -32602 and the request stays outstanding);
* ``tasks/cancel`` acknowledges and cancels the tool unless the task is
  already terminal;
* ``ctx.report_progress(..., message=...)`` sets the task's
  ``statusMessage``; progress and log notifications are not sent, as the
  extension does not support them on tasks.  ``notifications/tasks`` needs a
  ``subscriptions/listen`` stream, which this server does not offer yet, so
  clients poll.

**Common rules.**

* Task ids are 192-bit random strings (``secrets``), unguessable.
* Scope.  A 2025-11-25 task belongs to the session that created it: another
  session cannot see it (-32602 "Task not found", as for an unknown id) and
  it is forgotten when its session ends.  Extension tasks cannot be tied to
  a session (the stateless revisions have none); they are shared by every
  request with the same *owner*: what the manager's ``owner(ctx)`` callback
  returns, by default the ``principal`` attribute of the request's session
  (the authenticated principal a transport sets), else the authorization
  context of the request's verified token (``ctx.auth``: issuer, subject and
  client), since "when an authorization context is provided, receivers MUST
  bind tasks to said context" (tasks, security considerations).  Without
  either, every caller has the same owner and a task id acts as a bearer
  token, as the extension allows.  The owner is part of the 2025-11-25 scope too.
* Authorization.  The task keeps the ``ctx.auth`` of the ``tools/call``
  that created it (the transport forgets it once that request is answered,
  which is at once), so the work sees the same ``ctx.auth`` for its whole
  life; it never appears in ``tasks/*`` answers.
* Lifetime.  A 2025-11-25 task runs inside the nursery of the session whose
  request created it, so nothing outlives that session; when the session
  ends, a task still running is cancelled.  An extension task runs in the
  manager's own nursery while :meth:`TaskManager.run` is running (a transport
  that serves each stateless request with a session of its own, such as
  Streamable HTTP, needs this), else in its session's, like the others; so
  does every task of a manager sharing its tasks through a store
  (:meth:`TaskManager.share`: the session goes on on other workers).  A
  task is kept for its ``ttl`` from creation (requested ttls are capped at
  ``max_ttl_ms``; the default is ``default_ttl_ms``): then it is forgotten,
  and cancelled if it still runs; its id answers -32602 "Task has expired"
  or "Task not found".
* At most ``max_tasks`` tasks of one owner run at once; another one is
  refused with -32600.
* ``createdAt``/``lastUpdatedAt`` are UTC ISO 8601 times derived from the
  trio clock, so they agree with the ttl even under a mock clock.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, overload

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import ConnectionClosed, McpError
from ..store import StoreError
from ..types import _versions
from ..types._versions import TASKS_EXTENSION as EXTENSION_ID
from ._cursor import decode_cursor, encode_cursor
from ._task_context import (
    LEGACY_TASKS_VERSION,
    RELATED_TASK,
    TaskRequestContext,
    TaskStatuses,
    _InputWait,
    _Task,
)

if TYPE_CHECKING:
    from ..store import Store
    from ._shared_tasks import TaskSharing

__all__ = ["TaskManager"]

log = logging.getLogger("mcp_trio.tasks")

_NOT_FOUND = "Failed to retrieve task: Task not found"
_EXPIRED = "Failed to retrieve task: Task has expired"

#: The background work of a task: given the task's request context, the result.
Work = Callable[[RequestContext], Awaitable[Any]]
#: Maps a request to its owner (e.g. an authenticated principal), or ``None``.
OwnerFn = Callable[[RequestContext], Hashable | None]


def _authorization_context(auth: Any) -> Hashable | None:
    """Whom a verified access token (``ctx.auth``) speaks for, as a task owner:
    the same user through another client is another context."""
    if auth is None:
        return None
    return (
        "auth",
        getattr(auth, "issuer", None),
        getattr(auth, "subject", None),
        getattr(auth, "client_id", None),
    )


class TaskManager:
    """The tasks of one server, across its sessions.

    Args:
        default_ttl_ms: ttl of a task whose request names none (extension
            tasks always get it).
        max_ttl_ms: Upper bound of a requested ttl.
        poll_interval_ms: The ``pollInterval``/``pollIntervalMs`` suggested.
        max_tasks: Tasks of one owner that may run at once.
        page_size: Tasks per ``tasks/list`` page.
        owner: ``owner(ctx)`` names the owner of a request (see the module
            docs); by default ``ctx.session.principal`` when the transport
            set one, else ``None``.
    """

    def __init__(
        self,
        *,
        default_ttl_ms: int = 3_600_000,
        max_ttl_ms: int = 86_400_000,
        poll_interval_ms: int = 1000,
        max_tasks: int = 64,
        page_size: int = 100,
        owner: OwnerFn | None = None,
    ) -> None:
        if default_ttl_ms < 1 or max_ttl_ms < 1 or poll_interval_ms < 0 or max_tasks < 1 or page_size < 1:
            raise ValueError("task limits must be positive")
        self.default_ttl_ms = min(default_ttl_ms, max_ttl_ms)
        self.max_ttl_ms = max_ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.max_tasks = max_tasks
        self.page_size = page_size
        self.owner = owner
        self._tasks: dict[str, _Task] = {}
        self._seq = 0
        #: The tasks' statuses, shapes and input requests.
        self.statuses = TaskStatuses(poll_interval_ms)
        self._host: trio.Nursery | None = None
        self._sharing: TaskSharing | None = None

    def share(self, store: Store, worker_id: str, *, lease: float = 10.0) -> None:
        """Keep every task's record in ``store`` so that every worker serving
        the server with it sees and cancels it (see :mod:`._shared_tasks`);
        ``lease``: seconds after which a task whose worker stopped renewing it
        (the worker died) is reported failed.  Call before :meth:`run`."""
        from ._shared_tasks import TaskSharing

        self._sharing = self.statuses.sharing = TaskSharing(self, store, worker_id, lease)

    @property
    def sharing(self) -> TaskSharing | None:
        """How the tasks are shared through a store (see :meth:`share`), if they are."""
        return self._sharing

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host extension tasks here, independent of sessions, until cancelled
        (then the tasks still running are cancelled)."""
        if self._host is not None:
            raise RuntimeError("the task manager is already running")
        try:
            async with trio.open_nursery() as nursery:
                if self._sharing is not None:
                    await nursery.start(self._sharing.run)
                self._host = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._host = None

    # ----------------------------------------------------------- capabilities

    @staticmethod
    def capabilities() -> dict[str, Any]:
        """What a server with task-capable tools advertises (both eras; the
        core leaves ``tasks``, which 2026-07-28 removed, out of ``server/discover``)."""
        return {
            "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
            "extensions": {EXTENSION_ID: {}},
        }

    # --------------------------------------------------------------- deciding

    def wants_task(self, ctx: RequestContext, params: Any, support: str | None) -> bool:
        """Whether this ``tools/call`` runs as a task; raises the error the spec
        prescribes when the tool's ``support`` and the request disagree."""
        name = getattr(params, "name", "?")
        if _versions.is_stateless(ctx.version):
            if support not in ("optional", "required"):
                return False
            declared = _declares(ctx.client_capabilities, EXTENSION_ID)
            active = EXTENSION_ID in ctx.session.core.extensions
            if support == "required" and not (declared and active):
                raise McpError(
                    rpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
                    f"Missing required client capability: tool {name!r} runs only as a task "
                    f"(extension {EXTENSION_ID!r})",
                    {"requiredCapabilities": {"extensions": {EXTENSION_ID: {}}}},
                )
            return declared and active
        if ctx.version != LEGACY_TASKS_VERSION:
            return False
        if not _advertises_tool_tasks(ctx.session.core.capabilities):
            return False  # not advertised: the task field is ignored
        requested = getattr(params, "task", msgspec.UNSET) not in (msgspec.UNSET, None)
        if requested and support not in ("optional", "required"):
            raise McpError(rpc.METHOD_NOT_FOUND, f"Tool {name!r} does not support task-augmented execution")
        if not requested and support == "required":
            raise McpError(
                rpc.METHOD_NOT_FOUND,
                f"Tool {name!r} must be called as a task (add 'task' to the params)",
            )
        return requested

    # --------------------------------------------------------------- creating

    async def create(self, ctx: RequestContext, work: Work, *, ttl_ms: int | None = None) -> dict[str, Any]:
        """Create a task for the request ``ctx`` and start ``work`` in the
        background; returns the ``CreateTaskResult`` to answer with."""
        now = trio.current_time()
        self._purge(now)
        owner = self._owner(ctx)
        running = sum(1 for t in self._tasks.values() if t.owner == owner and not t.terminal)
        if running >= self.max_tasks:
            raise McpError(rpc.INVALID_REQUEST, f"Too many tasks in progress (at most {self.max_tasks})")
        ttl = self.default_ttl_ms if ttl_ms is None else max(1, min(int(ttl_ms), self.max_ttl_ms))
        task_id = secrets.token_urlsafe(24)
        self._seq += 1
        task = _Task(task_id, owner, ctx.session, _versions.is_stateless(ctx.version), self._seq, now, ttl)
        task.auth = ctx.auth  # read now: the transport forgets it once the request is answered
        if self._sharing is not None:
            task.shared_owner = self._shared_owner(ctx)
            try:
                await self._sharing.created(task)
            except StoreError as exc:
                raise McpError(rpc.INTERNAL_ERROR, f"The task store failed: {exc}") from None
        self._tasks[task_id] = task
        task_ctx = TaskRequestContext(ctx.session, ctx.incoming, task.scope, task, self.statuses)
        try:
            # A shared task outlives this worker's replica of its session (the session
            # goes on elsewhere): it runs here too.
            if (task.stateless or self._sharing is not None) and self._host is not None:
                self._host.start_soon(self._run, task, task_ctx, work, name=f"task {task_id}")
            else:
                ctx.session.spawn(self._run, task, task_ctx, work, name=f"task {task_id}")
        except ConnectionClosed:
            del self._tasks[task_id]
            raise
        if task.stateless:
            return {**self.statuses.fields(task), "resultType": "task"}
        return {"task": self.statuses.fields(task)}

    async def _run(self, task: _Task, ctx: TaskRequestContext, work: Work) -> None:
        try:
            with task.scope:
                try:
                    result = await work(ctx)
                except McpError as exc:
                    self._finish(task, error=exc)
                except Exception as exc:
                    log.exception("task %s failed", task.task_id)
                    self._finish(
                        task,
                        error=McpError(rpc.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}"),
                    )
                else:
                    self._finish(task, result=_as_dict(result))
            if task.scope.cancelled_caught and not task.terminal:
                self._drop(task)  # the ttl ran out while it was running
                return
            await trio.sleep_until(task.expires_at)
            self._drop(task)
        finally:
            if not task.terminal:  # its session (or the manager) is shutting down
                task.shared_owner = None  # (a shared task's record is left to its lease: this worker stops)
                self.statuses.set(task, "cancelled", "The server stopped running the task.", notify=False)
            if not task.stateless:
                self._tasks.pop(task.task_id, None)  # gone with its session

    def _finish(
        self, task: _Task, *, result: dict[str, Any] | None = None, error: McpError | None = None
    ) -> None:
        if task.terminal:
            return  # cancelled meanwhile: it stays cancelled
        if error is not None:
            task.error = error
            self.statuses.set(task, "failed", error.message)
        else:
            assert result is not None
            task.result = result
            if result.get("isError") is True and not task.stateless:
                self.statuses.set(task, "failed", _first_text(result) or "The tool reported an error.")
            else:
                self.statuses.set(task, "completed", None)

    def _drop(self, task: _Task) -> None:
        self._tasks.pop(task.task_id, None)
        task.scope.cancel()

    def _purge(self, now: float) -> None:
        for task in [t for t in self._tasks.values() if now >= t.expires_at]:
            self._drop(task)

    # ------------------------------------------------------------- handlers

    async def get_task(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """``tasks/get`` in both eras."""
        task = self._lookup(ctx, params.taskId, shared=True)
        if task is None:  # another worker's
            assert self._sharing is not None
            return self._sharing.fields(await self._sharing.find(ctx, params.taskId, self._shared_owner(ctx)))
        if task.stateless:
            return self.statuses.detailed(task)
        return self.statuses.fields(task)

    async def get_result(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """``tasks/result`` (2025-11-25): waits for a terminal status."""
        task = self._lookup(ctx, params.taskId, shared=True)
        if task is None:
            assert self._sharing is not None
            result = await self._sharing.result(ctx, params.taskId, self._shared_owner(ctx))
            return _with_related_task(result, params.taskId)
        task.waiting_streams.append(ctx.id)
        try:
            await task.done.wait()
        finally:
            task.waiting_streams.remove(ctx.id)
        if task.error is not None:
            raise McpError(task.error.code, task.error.message, task.error.data)
        if task.result is None:
            raise McpError(rpc.INVALID_PARAMS, f"Task {task.task_id} was cancelled; it has no result")
        return _with_related_task(task.result, task.task_id)

    async def list_tasks(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """``tasks/list`` (2025-11-25): the caller's tasks, oldest first."""
        self._purge(trio.current_time())
        if self._sharing is not None:
            return self._paged(await self._sharing.listed(self._shared_owner(ctx)), params)
        owner = self._owner(ctx)
        mine = sorted((t for t in self._tasks.values() if t.owner == owner), key=lambda t: t.seq)
        cursor = getattr(params, "cursor", msgspec.UNSET) if params is not None else msgspec.UNSET
        if cursor is not msgspec.UNSET and cursor is not None:
            after = _decode_cursor(cursor, self._seq)
            mine = [t for t in mine if t.seq > after]
        page = mine[: self.page_size]
        result: dict[str, Any] = {"tasks": [self.statuses.fields(t) for t in page]}
        if len(mine) > len(page):
            result["nextCursor"] = _encode_cursor(page[-1].seq)
        return result

    async def cancel_task(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """``tasks/cancel`` in both eras."""
        task = self._lookup(ctx, params.taskId, shared=True)
        if task is None:
            assert self._sharing is not None
            return await self._sharing.cancel(ctx, params.taskId, self._shared_owner(ctx))
        if task.stateless:
            if not task.terminal:
                self._cancel(task)
            return {}
        if task.terminal:
            raise McpError(
                rpc.INVALID_PARAMS,
                f"Cannot cancel task: already in terminal status {task.status!r}",
            )
        self._cancel(task)
        return self.statuses.fields(task)

    async def update_task(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """``tasks/update`` (extension): answers to outstanding input requests."""
        task = self._lookup(ctx, params.taskId, shared=True)
        if task is None:
            assert self._sharing is not None
            responses = dict(params.inputResponses)
            await self._sharing.update(ctx, params.taskId, self._shared_owner(ctx), responses)
            return {}
        self._apply_inputs(task, self._accept_inputs(task, params.inputResponses))
        if self._sharing is not None and task.shared_owner is not None:
            await self._sharing.write(task)  # (before the answer: a tasks/get anywhere then sees it)
        return {}

    def _take_inputs(self, task: _Task, responses: dict[str, Any]) -> None:
        """Input responses another worker took for ``task`` (one that does not fit is dropped)."""
        try:
            accepted = self._accept_inputs(task, responses)
        except McpError as exc:
            log.info("task %s: input responses dropped: %s", task.task_id, exc.message)
            return
        self._apply_inputs(task, accepted)

    def _accept_inputs(self, task: _Task, responses: dict[str, Any]) -> list[tuple[_InputWait, Any]]:
        accepted: list[tuple[_InputWait, Any]] = []
        for key, response in responses.items():
            wait = task.inputs.get(key)
            if wait is None or wait.answered.is_set():
                continue  # never issued, already answered or superseded: ignored
            try:
                value: Any = msgspec.convert(response, wait.result_type)
            except msgspec.ValidationError as exc:
                raise McpError(
                    rpc.INVALID_PARAMS,
                    f"Invalid params: inputResponses[{key!r}] is not a {wait.request['method']} "
                    f"result: {exc}",
                ) from None
            accepted.append((wait, value))
        return accepted

    def _apply_inputs(self, task: _Task, accepted: list[tuple[_InputWait, Any]]) -> None:
        for wait, value in accepted:
            wait.response = value
            wait.answered.set()
        if accepted and all(w.answered.is_set() for w in task.inputs.values()):
            self.statuses.set(task, "working", None)  # nothing outstanding any more
        elif accepted:
            self.statuses.inputs_changed(task)

    def _cancel(self, task: _Task) -> None:
        self.statuses.set(task, "cancelled", "The task was cancelled by request.")
        task.scope.cancel()

    # --------------------------------------------------------------- lookups

    def _principal(self, ctx: RequestContext) -> Hashable | None:
        if self.owner is not None:
            return self.owner(ctx)
        principal = ctx.session.principal
        return _authorization_context(ctx.auth) if principal is None else principal

    def _owner(self, ctx: RequestContext) -> Hashable:
        principal = self._principal(ctx)
        if _versions.is_stateless(ctx.version):
            return ("owner", principal)
        return ("session", ctx.session, principal)

    def _shared_owner(self, ctx: RequestContext) -> str:
        assert self._sharing is not None
        return self._sharing.owner_key(ctx, self._principal(ctx))

    def _paged(self, tasks: list[dict[str, Any]], params: Any) -> dict[str, Any]:
        """A ``tasks/list`` page of ``tasks`` (the cursor: a position)."""
        cursor = getattr(params, "cursor", msgspec.UNSET) if params is not None else msgspec.UNSET
        start = 0
        if cursor is not msgspec.UNSET and cursor is not None:
            start = _decode_cursor(cursor, len(tasks))
        end = start + self.page_size
        result: dict[str, Any] = {"tasks": tasks[start:end]}
        if end < len(tasks):
            result["nextCursor"] = _encode_cursor(end)
        return result

    @overload
    def _lookup(self, ctx: RequestContext, task_id: str) -> _Task: ...

    @overload
    def _lookup(self, ctx: RequestContext, task_id: str, *, shared: bool) -> _Task | None: ...

    def _lookup(self, ctx: RequestContext, task_id: str, *, shared: bool = False) -> _Task | None:
        """The caller's task ``task_id`` (-32602 if unknown); with ``shared``,
        None when it is not here but the store may know it (another worker's)."""
        task = self._tasks.get(task_id)
        if task is None and shared and self._sharing is not None:
            return None
        if task is None or task.owner != self._owner(ctx):
            raise McpError(rpc.INVALID_PARAMS, _NOT_FOUND)
        if trio.current_time() >= task.expires_at:
            self._drop(task)
            raise McpError(rpc.INVALID_PARAMS, _EXPIRED)
        return task


# ------------------------------------------------------------------ helpers


def _declares(caps: dict[str, Any], extension: str) -> bool:
    declared = caps.get("extensions") if isinstance(caps, dict) else None
    return isinstance(declared, dict) and isinstance(declared.get(extension), dict)


def _advertises_tool_tasks(caps: dict[str, Any]) -> bool:
    node: Any = caps
    for key in ("tasks", "requests", "tools", "call"):
        node = node.get(key) if isinstance(node, dict) else None
    return isinstance(node, dict)


def _as_dict(result: Any) -> dict[str, Any]:
    if isinstance(result, msgspec.Struct):
        result = msgspec.to_builtins(result)
    if result is None:
        return {}
    if not isinstance(result, dict):
        raise TypeError(f"a task's work must return a result object, not {type(result).__name__}")
    return result


def _first_text(result: dict[str, Any]) -> str | None:
    for block in result.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
    return None


def _with_related_task(result: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A task's result as ``tasks/result`` answers it: with the related-task ``_meta``."""
    meta = result.get("_meta")
    related = {RELATED_TASK: {"taskId": task_id}}
    return {**result, "_meta": {**meta, **related} if isinstance(meta, dict) else related}


def _encode_cursor(position: int) -> str:
    return encode_cursor("t", position)


def _decode_cursor(cursor: Any, upper: int) -> int:
    return decode_cursor(cursor, "t", upper)
