"""Tasks seen and cancelled from every worker serving a server through one store.

With a store (``Server.serve_http(store=...)``), the :class:`TaskManager`
mirrors each task it runs into the store's task records
(:class:`~mcp_trio.store.TaskRecord`): status, status message, result or
error, the worker running it, the owner, the ttl, and a lease that worker
renews (every third of ``lease`` seconds).  A ``tasks/*`` request for a task
another worker runs is answered from its record:

* ``tasks/get``: the record (an extension task with its ``result`` or
  ``error``); a task whose worker died (its lease ran out) is ``failed``;
* ``tasks/result`` (2025-11-25): waits, polling the record, until it is terminal;
* ``tasks/list`` (2025-11-25): the owner's tasks of every worker, oldest first;
* ``tasks/cancel``: asks the worker running it over the bus, then answers
  the record once it is terminal (at most 5 s later);
* ``tasks/update`` (extension): passed to the worker running it.

The owner of a 2025-11-25 task is its session's id (with the principal), so
every replica of the session finds it.  A worker that stops leaves its
running tasks' records to their lease.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._exceptions import McpError
from ..store import Store, StoreError, TaskRecord
from ..transports._base import ChannelTraits
from ..transports.http._bus import listen
from ..types import _versions

if TYPE_CHECKING:
    from ._task_context import _Task
    from ._tasks import TaskManager

log = logging.getLogger("mcp_trio.tasks")

_CHANNEL = "mcp-trio:tasks:"  # + worker id
_NOT_FOUND = "Failed to retrieve task: Task not found"
_TERMINAL = frozenset({"completed", "failed", "cancelled"})
_WRITES = 4096  # record writes waiting, at most


class _Order(msgspec.Struct, omit_defaults=True):
    """What one worker asks of another about a task it runs."""

    task_id: str
    cancel: bool = False
    input_responses: dict[str, Any] | None = None


_encode = msgspec.json.encode
_decode_order = msgspec.json.Decoder(_Order).decode


class TaskSharing:
    """A :class:`TaskManager`'s tasks mirrored into a store (see the module doc)."""

    def __init__(self, manager: TaskManager, store: Store, worker_id: str, lease: float) -> None:
        if not lease > 0:
            raise ValueError("the task lease must be a positive number of seconds")
        self.manager = manager
        self.store = store
        self.worker = worker_id
        self.lease = lease
        self._writes_send, self._writes = trio.open_memory_channel[tuple[str, Any]](_WRITES)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write the records, renew the leases and take other workers' orders, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._writer)
            nursery.start_soon(self._renew)
            await nursery.start(self._listen)
            task_status.started()

    # ---------------------------------------------------------------- owners

    @staticmethod
    def owner_key(ctx: RequestContext, principal: Any) -> str:
        """The owner of the request's tasks as every worker names it."""
        if _versions.is_stateless(ctx.version):
            return repr(("owner", principal))
        channel = ctx.session.channel
        session_id = channel.session_id if isinstance(channel, ChannelTraits) else None
        return repr(("session", session_id, principal))

    # --------------------------------------------------------------- writing

    def _record(self, task: _Task) -> TaskRecord:
        result: bytes | None = None
        if task.error is not None:
            error: dict[str, Any] = {"code": task.error.code, "message": task.error.message}
            if task.error.data is not None:
                error["data"] = task.error.data
            result = _encode({"error": error})
        elif task.result is not None:
            result = _encode({"result": task.result})
        data = {"stateless": b"1"} if task.stateless else {}
        if task.stateless and task.status == "input_required":
            # what tasks/get answers from any worker: the requests still outstanding
            asks = {key: wait.request for key, wait in task.inputs.items() if not wait.answered.is_set()}
            data["input_requests"] = _encode(asks)
        return TaskRecord(
            task_id=task.task_id,
            owner=task.shared_owner or "",
            status=task.status,  # type: ignore[arg-type]
            status_message=task.status_message,
            result=result,
            worker=self.worker,
            data=data,
            ttl=task.ttl_ms / 1000,
        )

    async def created(self, task: _Task) -> None:
        """Keep the record of a task just created here."""
        await self.store.tasks.create(self._record(task), lease=self.lease)

    def changed(self, task: _Task) -> None:
        """The task's status, message, result or error changed: write its record."""
        try:
            self._writes_send.send_nowait(("update", task))
        except trio.WouldBlock:
            log.warning("task %s: its record could not keep up with its changes", task.task_id)

    async def _writer(self) -> None:
        async for _, task in self._writes:
            await self.write(task)

    async def write(self, task: _Task) -> None:
        """Write the task's record now (as it is now: a later write never puts back an older state)."""
        try:
            await self.store.tasks.update(self._record(task))
        except StoreError as exc:
            log.warning("could not write the record of task %s: %s", task.task_id, exc)

    async def _renew(self) -> None:
        while True:
            await trio.sleep(self.lease / 3)
            await self._renew_all()

    async def _renew_all(self) -> None:
        # (a method of its own: the loop variable, left in _renew's frame, would keep the last
        # task, its result with it, alive while _renew sleeps)
        for task in list(self.manager._tasks.values()):
            if task.shared_owner is not None and not task.terminal:
                try:
                    await self.store.tasks.renew(task.task_id, self.lease)
                except StoreError as exc:
                    log.warning("could not renew the lease of task %s: %s", task.task_id, exc)

    # ---------------------------------------------------------------- orders

    async def _listen(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        channels = (_CHANNEL + self.worker,)
        await listen(
            self.store, channels, self._take_order, f"the tasks of {self.worker}", task_status=task_status
        )

    async def _take_order(self, data: bytes) -> None:
        try:
            order = _decode_order(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        task = self.manager._tasks.get(order.task_id)
        if task is None or task.terminal:
            return
        if order.cancel:
            self.manager._cancel(task)
        elif order.input_responses is not None:
            self.manager._take_inputs(task, order.input_responses)

    async def _order(self, record: TaskRecord, order: _Order) -> None:
        if record.worker is not None:
            await self.store.bus.publish(_CHANNEL + record.worker, _encode(order))

    # --------------------------------------------------------------- reading

    async def find(self, ctx: RequestContext, task_id: str, owner: str) -> TaskRecord:
        """The record of another worker's task, or the -32602 "not found"."""
        try:
            record = await self.store.tasks.get(task_id)
        except StoreError as exc:
            raise McpError(rpc.INTERNAL_ERROR, f"The task store failed: {exc}") from None
        if record is None or record.owner != owner:
            raise McpError(rpc.INVALID_PARAMS, _NOT_FOUND)
        return record

    def fields(self, record: TaskRecord) -> dict[str, Any]:
        """The record's ``Task`` object in its era's spelling (see ``TaskStatuses.fields``)."""
        poll = self.manager.poll_interval_ms
        ttl_ms = round(record.ttl * 1000)
        stateless = record.data.get("stateless") == b"1"
        fields: dict[str, Any] = (
            {"ttlMs": ttl_ms, "pollIntervalMs": poll} if stateless else {"ttl": ttl_ms, "pollInterval": poll}
        )
        fields.update(
            taskId=record.task_id,
            status=record.status,
            createdAt=_iso(record.created_at),
            lastUpdatedAt=_iso(record.updated_at),
        )
        if record.status_message is not None:
            fields["statusMessage"] = record.status_message
        if stateless:
            outcome = _outcome(record)
            if record.status == "input_required":
                fields["inputRequests"] = _decoded(record.data.get("input_requests"))
            elif record.status == "completed" and "result" in outcome:
                fields["result"] = outcome["result"]
            elif record.status == "failed":
                fields["error"] = outcome.get("error") or {
                    "code": rpc.INTERNAL_ERROR,
                    "message": record.status_message or "The task failed.",
                }
        return fields

    async def wait_terminal(self, record: TaskRecord, owner: str, limit: float | None) -> TaskRecord:
        """The record once terminal, polled (at most ``limit`` seconds; None: its ttl)."""
        interval = 0.02
        with trio.move_on_after(record.ttl if limit is None else limit):
            while record.status not in _TERMINAL:
                await trio.sleep(interval)
                interval = min(interval * 2, max(self.manager.poll_interval_ms / 1000, 0.02))
                found = await self.store.tasks.get(record.task_id)
                if found is None or found.owner != owner:
                    raise McpError(rpc.INVALID_PARAMS, _NOT_FOUND)
                record = found
        return record

    async def result(self, ctx: RequestContext, task_id: str, owner: str) -> dict[str, Any]:
        """``tasks/result`` of another worker's task."""
        record = await self.wait_terminal(await self.find(ctx, task_id, owner), owner, None)
        outcome = _outcome(record)
        error = outcome.get("error")
        if record.status == "failed" and not isinstance(outcome.get("result"), dict):
            if not isinstance(error, dict):
                error = {"code": rpc.INTERNAL_ERROR, "message": record.status_message or "The task failed."}
            raise McpError(error.get("code", rpc.INTERNAL_ERROR), error.get("message", ""), error.get("data"))
        result = outcome.get("result")
        if not isinstance(result, dict):
            raise McpError(rpc.INVALID_PARAMS, f"Task {task_id} was cancelled; it has no result")
        return result

    async def cancel(self, ctx: RequestContext, task_id: str, owner: str) -> dict[str, Any]:
        """``tasks/cancel`` of another worker's task."""
        record = await self.find(ctx, task_id, owner)
        stateless = record.data.get("stateless") == b"1"
        if record.status in _TERMINAL:
            if stateless:
                return {}
            raise McpError(
                rpc.INVALID_PARAMS, f"Cannot cancel task: already in terminal status {record.status!r}"
            )
        await self._order(record, _Order(task_id, cancel=True))
        record = await self.wait_terminal(record, owner, 5.0)
        return {} if stateless else self.fields(record)

    async def update(self, ctx: RequestContext, task_id: str, owner: str, responses: dict[str, Any]) -> None:
        """``tasks/update`` of another worker's task: its input responses go to that worker."""
        record = await self.find(ctx, task_id, owner)
        if record.status not in _TERMINAL:
            await self._order(record, _Order(task_id, input_responses=responses))
            await self._until_taken(record, owner, set(responses))

    async def _until_taken(self, record: TaskRecord, owner: str, keys: set[str]) -> None:
        """Wait until the record no longer asks for ``keys``: the worker running the task took
        them (at most 5 s), so that a ``tasks/get`` on any worker after the answer sees it."""
        interval = 0.005
        with trio.move_on_after(5.0):
            while (
                record.status == "input_required"
                and keys & _decoded(record.data.get("input_requests")).keys()
            ):
                await trio.sleep(interval)
                interval = min(interval * 2, 0.1)
                found = await self.store.tasks.get(record.task_id)
                if found is None or found.owner != owner:
                    return
                record = found

    async def listed(self, owner: str) -> list[dict[str, Any]]:
        """The owner's tasks on every worker, oldest first."""
        try:
            records = await self.store.tasks.list(owner)
        except StoreError as exc:
            raise McpError(rpc.INTERNAL_ERROR, f"The task store failed: {exc}") from None
        return [self.fields(r) for r in records]


def _asked(record: TaskRecord) -> set[str]:
    """The keys of the input requests the record lists as outstanding."""
    return set(_decoded(record.data.get("input_requests")))


def _outcome(record: TaskRecord) -> dict[str, Any]:
    return _decoded(record.result)


def _decoded(data: bytes | None) -> dict[str, Any]:
    """A JSON object kept in a record (empty when absent or not one)."""
    if data is None:
        return {}
    try:
        value = msgspec.json.decode(data)
    except msgspec.DecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _iso(wall: float) -> str:
    return (
        datetime.fromtimestamp(wall or time.time(), UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )
