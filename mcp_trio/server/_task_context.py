"""One server-side task: its record, its status changes and how its era shows it
(``Task`` fields, ``notifications/tasks/status``), its input requests (Tasks
extension), and the request context its work runs with.

The rules are in the module docs of :mod:`mcp_trio.server._tasks`; here:

* A terminal status (completed, failed, cancelled) never changes again.
* 2025-11-25 status changes are pushed in order, by one sender per session;
  extension tasks push nothing (clients poll ``tasks/get``).
* What the work sends the client carries the related-task ``_meta``
  (2025-11-25) or becomes one of the task's ``inputRequests`` under a key
  never issued before in that task (extension).
"""

from __future__ import annotations

import math
import time
from collections.abc import Hashable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .._core import RequestReceived, progress_params
from .._engine._context import RequestContext
from .._engine._session import RequestTimeout, Session
from .._exceptions import ConnectionClosed, LocalProtocolError, McpError
from ..types import _versions

if TYPE_CHECKING:
    from ._shared_tasks import TaskSharing

__all__ = ["LEGACY_TASKS_VERSION", "RELATED_TASK", "TASK_SUPPORT", "TaskRequestContext"]

#: The values of a tool's ``execution.taskSupport``.
TASK_SUPPORT: tuple[str, ...] = ("forbidden", "optional", "required")
#: The one revision with the requestor-driven tasks of ``capabilities.tasks``.
LEGACY_TASKS_VERSION = "2025-11-25"
#: The ``_meta`` key that ties a message to a 2025-11-25 task.
RELATED_TASK = "io.modelcontextprotocol/related-task"

_TERMINAL = frozenset({"completed", "failed", "cancelled"})


class _InputWait:
    """One outstanding input request of an extension task."""

    __slots__ = ("request", "result_type", "answered", "response")

    def __init__(self, request: dict[str, Any], result_type: type) -> None:
        self.request = request
        self.result_type = result_type
        self.answered = trio.Event()
        self.response: Any = None


class _Task:
    """What the server knows about one task."""

    __slots__ = (
        "task_id",
        "owner",
        "session",
        "stateless",
        "seq",
        "status",
        "status_message",
        "created",
        "updated",
        "ttl_ms",
        "expires_at",
        "result",
        "error",
        "done",
        "scope",
        "inputs",
        "input_count",
        "issued_keys",
        "asking",
        "waiting_streams",
        "last_progress",
        "auth",
        "shared_owner",
    )

    def __init__(
        self,
        task_id: str,
        owner: Hashable,
        session: Session,
        stateless: bool,
        seq: int,
        now: float,
        ttl_ms: int,
    ) -> None:
        self.task_id = task_id
        self.owner = owner
        self.session = session
        self.stateless = stateless
        self.seq = seq
        self.status = "working"
        self.status_message: str | None = None
        self.created = now
        self.updated = now
        self.ttl_ms = ttl_ms
        self.expires_at = now + ttl_ms / 1000
        self.result: dict[str, Any] | None = None
        self.error: McpError | None = None
        self.done = trio.Event()
        self.scope = trio.CancelScope(deadline=self.expires_at)
        self.inputs: dict[str, _InputWait] = {}  # extension: outstanding input requests
        self.input_count = 0  # extension: keys issued so far (keys never repeat)
        self.issued_keys: set[str] = set()  # extension: every key issued, ever
        self.asking = 0  # 2025-11-25: requests to the client in progress
        self.waiting_streams: list[Any] = []  # 2025-11-25: ids of tasks/result calls waiting
        self.last_progress: float | None = None
        # The authorization of the creating request (``ctx.auth``), for the
        # work's whole life; kept here only, never in what tasks/* answer.
        self.auth: Any = None
        #: Its owner as every worker names it, when its record is in a store (see _shared_tasks.py).
        self.shared_owner: str | None = None

    @property
    def terminal(self) -> bool:
        return self.status in _TERMINAL


class TaskStatuses:
    """The tasks' statuses, their shapes and their input requests: what a running task reaches
    of its :class:`~mcp_trio.server._tasks.TaskManager` (a collaborator of it, owning the
    senders of status notifications and the wall clock's origin)."""

    def __init__(self, poll_interval_ms: int) -> None:
        self.poll_interval_ms = poll_interval_ms
        #: How the tasks are shared through a store (set by ``TaskManager.share``), if they are.
        self.sharing: TaskSharing | None = None
        self._notifiers: dict[Session, trio.MemorySendChannel[dict[str, Any]]] = {}
        self._epoch: tuple[float, float] | None = None  # (trio time, wall time) at first use

    # ---------------------------------------------------------------- status

    def set(self, task: _Task, status: str, message: str | None, *, notify: bool = True) -> None:
        if task.terminal or (task.status == status and message is None):
            return
        task.status = status
        if message is not None or status != "input_required":
            task.status_message = message
        task.updated = trio.current_time()
        if task.terminal:
            task.done.set()
        if self.sharing is not None and task.shared_owner is not None:
            self.sharing.changed(task)
        if notify and not task.stateless:
            self.notify(task)

    def inputs_changed(self, task: _Task) -> None:
        """An input request was added or answered while the status stays ``input_required``:
        the shared record lists the outstanding ones too."""
        if task.status == "input_required" and self.sharing is not None and task.shared_owner is not None:
            self.sharing.changed(task)

    def set_message(self, task: _Task, message: str) -> None:
        if not task.terminal:
            task.status_message = message
            task.updated = trio.current_time()
            if self.sharing is not None and task.shared_owner is not None:
                self.sharing.changed(task)

    def notify(self, task: _Task) -> None:
        """Queue ``notifications/tasks/status``; one sender per session keeps the order."""
        send = self._notifiers.get(task.session)
        if send is None:
            send, receive = trio.open_memory_channel[dict[str, Any]](math.inf)
            try:
                task.session.spawn(self._send_notifications, task.session, receive, name="task status")
            except ConnectionClosed:
                return
            self._notifiers[task.session] = send
        send.send_nowait(self.fields(task))

    async def _send_notifications(
        self, session: Session, receive: trio.MemoryReceiveChannel[dict[str, Any]]
    ) -> None:
        try:
            async for params in receive:
                try:
                    await session.notify("notifications/tasks/status", params)
                except ConnectionClosed:
                    return
        finally:
            self._notifiers.pop(session, None)

    # ---------------------------------------------------------------- shapes

    def iso(self, t: float) -> str:
        if self._epoch is None:
            self._epoch = (trio.current_time(), time.time())
        wall = self._epoch[1] + (t - self._epoch[0])
        return datetime.fromtimestamp(wall, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def fields(self, task: _Task) -> dict[str, Any]:
        """The task's ``Task`` object in its era's spelling."""
        if task.stateless:
            fields: dict[str, Any] = {"ttlMs": task.ttl_ms, "pollIntervalMs": self.poll_interval_ms}
        else:
            fields = {"ttl": task.ttl_ms, "pollInterval": self.poll_interval_ms}
        fields.update(
            taskId=task.task_id,
            status=task.status,
            createdAt=self.iso(task.created),
            lastUpdatedAt=self.iso(task.updated),
        )
        if task.status_message is not None:
            fields["statusMessage"] = task.status_message
        return fields

    def detailed(self, task: _Task) -> dict[str, Any]:
        """An extension task with its status-specific fields."""
        fields = self.fields(task)
        if task.status == "input_required":
            fields["inputRequests"] = {
                key: wait.request for key, wait in task.inputs.items() if not wait.answered.is_set()
            }
        elif task.status == "completed" and task.result is not None:
            fields["result"] = task.result
        elif task.status == "failed" and task.error is not None:
            error: dict[str, Any] = {"code": task.error.code, "message": task.error.message}
            if task.error.data is not None:
                error["data"] = task.error.data
            fields["error"] = error
        return fields

    # ------------------------------------------------- asking the client (ext)

    async def ask(
        self,
        task: _Task,
        version: str,
        method: str,
        params: Any,
        timeout: float | None,
        key: str | None = None,
    ) -> Any:
        spec = _versions.module_for(version).METHODS.get(method)
        if spec is None or not spec.input_request or spec.params is None or spec.result is None:
            raise LocalProtocolError(f"{method!r} is not a request a task can make of the client")
        try:
            typed = (
                params if isinstance(params, msgspec.Struct) else msgspec.convert(params or {}, spec.params)
            )
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(f"invalid params for {method}: {exc}") from None
        task.input_count += 1
        if key is None or key in task.issued_keys:
            base = key or method
            key = f"{base}#{task.input_count}"
            while key in task.issued_keys:  # a tool's own key may look like ours
                task.input_count += 1
                key = f"{base}#{task.input_count}"
        task.issued_keys.add(key)
        wait = _InputWait({"method": method, "params": msgspec.to_builtins(typed)}, spec.result)
        task.inputs[key] = wait
        self.inputs_changed(task)
        self.set(task, "input_required", None)
        try:
            with trio.move_on_after(math.inf if timeout is None else timeout) as scope:
                await wait.answered.wait()
            if scope.cancelled_caught:
                raise RequestTimeout(f"{method} got no answer within {timeout} s")
            return wait.response
        finally:
            del task.inputs[key]
            if not task.inputs:
                self.set(task, "working", None)


class TaskRequestContext(RequestContext):
    """The request context a task's work runs with.

    Same request as the one that created the task, but its cancel scope is the
    task's (``tasks/cancel``, the ttl and the end of the session cancel it),
    and what the work sends to the client follows the task rules of its era
    (see :mod:`mcp_trio.server._tasks`).
    """

    __slots__ = ("task", "_statuses")

    def __init__(
        self,
        session: Session,
        request: RequestReceived,
        cancel_scope: trio.CancelScope,
        task: _Task,
        statuses: TaskStatuses,
    ) -> None:
        super().__init__(session, request, cancel_scope)
        self.task = task
        self._statuses = statuses

    @property
    def task_id(self) -> str:
        return self.task.task_id

    @property
    def auth(self) -> Any:
        """The creating request's authorization, as it was verified then: the
        transport forgets it once that request is answered (at once, with
        ``CreateTaskResult``), the task keeps it for as long as it runs."""
        return self.task.auth

    def _stream(self) -> Any:
        """A waiting ``tasks/result`` call whose stream carries the task's messages."""
        streams = self.task.waiting_streams
        return streams[-1] if streams else None

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        task = self.task
        if task.stateless:
            if message is not None:
                self._statuses.set_message(task, message)
            return
        token = self.progress_token
        if token is None or task.terminal:
            return
        params = progress_params(token, progress, task.last_progress, total, message)
        task.last_progress = params["progress"]
        params["_meta"] = {RELATED_TASK: {"taskId": task.task_id}}
        await self.session.notify("notifications/progress", params, related=self._stream())

    async def notify(self, method: str, params: Any = None) -> None:
        if self.task.stateless:
            return  # no stream to carry it: the extension has no notifications on tasks
        await self.session.notify(method, _with_related(params, self.task.task_id), related=self._stream())

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None | object = None,
        on_progress: Any = None,
        input_key: str | None = None,
    ) -> Any:
        """Ask the client.  With the extension the request becomes one of the
        task's ``inputRequests``, under ``input_key`` when that was never
        used in this task (else a fresh key)."""
        task = self.task
        limit = timeout if isinstance(timeout, int | float) else None
        if task.stateless:
            return await self._statuses.ask(task, self.version, method, params, limit, input_key)
        task.asking += 1
        self._statuses.set(task, "input_required", None)
        try:
            # No timeout unless the tool asks for one: the task's ttl bounds the wait.
            return await self.session.request(
                method,
                _with_related(params, task.task_id),
                timeout=limit,
                related=self._stream(),
                on_progress=on_progress,
            )
        finally:
            task.asking -= 1
            if task.asking == 0:
                self._statuses.set(task, "working", None)


def _with_related(params: Any, task_id: str) -> Any:
    related = {RELATED_TASK: {"taskId": task_id}}
    if params is None:
        return {"_meta": related}
    if isinstance(params, dict):
        meta = params.get("_meta")
        return {**params, "_meta": {**meta, **related} if isinstance(meta, dict) else related}
    if isinstance(params, msgspec.Struct) and hasattr(params, "meta"):
        meta = getattr(params, "meta")  # noqa: B009 - a generated Struct's optional member
        return msgspec.structs.replace(
            params, meta={**meta, **related} if isinstance(meta, dict) else related
        )
    return params
