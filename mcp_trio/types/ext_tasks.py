"""Wire types of the MCP Tasks extension, ``io.modelcontextprotocol/tasks``.

Hand-written (the extension's schema is not one of the revisions the code
generator reads), after the extension's ``schema.ts``.  The extension builds
on the stateless revisions (2026-07-28 on):

* a client declares it per request, in
  ``_meta["io.modelcontextprotocol/clientCapabilities"].extensions``, and a
  server advertises it in the ``capabilities.extensions`` of
  ``server/discover``;
* a server may then answer ``tools/call`` with :class:`CreateTaskResult`
  (``resultType: "task"``) instead of a ``CallToolResult``;
* the client follows the task with ``tasks/get``, answers its
  ``inputRequests`` with ``tasks/update`` and may ``tasks/cancel`` it; a
  server may push ``notifications/tasks`` on a ``subscriptions/listen`` stream.

The 2025-11-25 revision has tasks of its own (``tasks/get``, ``tasks/result``,
``tasks/list``, ``tasks/cancel``), generated in ``v2025_11_25``; they are a
different protocol and share nothing with this module.

A :class:`GetTaskResult` is one Struct for all five ``DetailedTask`` variants:
``inputRequests`` is present when the status is ``input_required``,
``result`` when it is ``completed`` and ``error`` when it is ``failed``.

``TASKS`` is the :class:`ExtensionSpec` that ``types._versions.methods_for``
merges into a revision's ``METHODS`` when a session enables the extension.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

from msgspec import UNSET, Struct, UnsetType, field

from ._versions import TASKS_EXTENSION
from ._wire import ExtensionSpec, MethodSpec
from .v2026_07_28 import Error, InputRequests, InputResponses

__all__ = [
    "EXTENSION_ID",
    "TASKS",
    "CancelTaskRequest",
    "CancelTaskRequestParams",
    "CancelTaskResult",
    "CreateTaskResult",
    "GetTaskRequest",
    "GetTaskRequestParams",
    "GetTaskResult",
    "Task",
    "TaskStatus",
    "TaskStatusNotification",
    "TaskStatusNotificationParams",
    "UpdateTaskRequest",
    "UpdateTaskRequestParams",
    "UpdateTaskResult",
]

#: The extension identifier (the key under ``capabilities.extensions``).
EXTENSION_ID = TASKS_EXTENSION

TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
"""``completed``, ``failed`` and ``cancelled`` are terminal."""


class Task(Struct, kw_only=True, dict=True):
    """Operational metadata of a task."""

    taskId: str
    status: TaskStatus
    createdAt: str
    """ISO 8601 timestamp of the creation."""
    lastUpdatedAt: str
    """ISO 8601 timestamp of the last change."""
    ttlMs: int | None
    """Time to live from creation in milliseconds, ``None`` for unlimited."""
    statusMessage: str | UnsetType = UNSET
    pollIntervalMs: int | UnsetType = UNSET


class CreateTaskResult(Task, kw_only=True):
    """The answer to a request the server chose to run as a task (``resultType: "task"``)."""

    RESULT_TYPE: ClassVar[str] = "task"
    EXTENSION: ClassVar[str] = EXTENSION_ID

    resultType: Literal["task"] = "task"
    meta: dict[str, Any] | UnsetType = field(name="_meta", default=UNSET)


class _Detailed(Task, kw_only=True):
    inputRequests: InputRequests | UnsetType = UNSET
    """Outstanding server-to-client requests (status ``input_required``)."""
    result: dict[str, Any] | UnsetType = UNSET
    """The result of the original request (status ``completed``)."""
    error: Error | UnsetType = UNSET
    """The JSON-RPC error of the original request (status ``failed``)."""
    meta: dict[str, Any] | UnsetType = field(name="_meta", default=UNSET)


class GetTaskResult(_Detailed, kw_only=True):
    """The answer to ``tasks/get``: the task with its status-specific fields."""

    resultType: Literal["complete"] = "complete"


class TaskStatusNotificationParams(_Detailed, kw_only=True):
    """Params of ``notifications/tasks``: what ``tasks/get`` would answer at that moment."""


class _Ack(Struct, kw_only=True, dict=True):
    resultType: Literal["complete"] = "complete"
    meta: dict[str, Any] | UnsetType = field(name="_meta", default=UNSET)


class UpdateTaskResult(_Ack, kw_only=True):
    """The (empty) acknowledgement of ``tasks/update``."""


class CancelTaskResult(_Ack, kw_only=True):
    """The (empty) acknowledgement of ``tasks/cancel``."""


class _TaskParams(Struct, kw_only=True, dict=True):
    taskId: str
    meta: dict[str, Any] | UnsetType = field(name="_meta", default=UNSET)


class GetTaskRequestParams(_TaskParams, kw_only=True):
    pass


class CancelTaskRequestParams(_TaskParams, kw_only=True):
    pass


class UpdateTaskRequestParams(_TaskParams, kw_only=True):
    inputResponses: InputResponses
    """Answers to outstanding ``inputRequests``, by key."""


class GetTaskRequest(Struct, kw_only=True, dict=True, tag_field="method", tag="tasks/get"):
    id: int | str
    params: GetTaskRequestParams
    jsonrpc: Literal["2.0"] = "2.0"


class UpdateTaskRequest(Struct, kw_only=True, dict=True, tag_field="method", tag="tasks/update"):
    id: int | str
    params: UpdateTaskRequestParams
    jsonrpc: Literal["2.0"] = "2.0"


class CancelTaskRequest(Struct, kw_only=True, dict=True, tag_field="method", tag="tasks/cancel"):
    id: int | str
    params: CancelTaskRequestParams
    jsonrpc: Literal["2.0"] = "2.0"


class TaskStatusNotification(Struct, kw_only=True, dict=True, tag_field="method", tag="notifications/tasks"):
    params: TaskStatusNotificationParams
    jsonrpc: Literal["2.0"] = "2.0"


_GATE = ("extensions", EXTENSION_ID)


def _request(method: str, message: type, params: type, result: type) -> MethodSpec:
    return MethodSpec(
        method=method,
        kind="request",
        direction="client",
        message=message,
        params=params,
        params_required=True,
        results=(result,),
        capability=_GATE,
        extension=EXTENSION_ID,
    )


TASKS = ExtensionSpec(
    id=EXTENSION_ID,
    methods={
        "tasks/get": _request("tasks/get", GetTaskRequest, GetTaskRequestParams, GetTaskResult),
        "tasks/update": _request(
            "tasks/update", UpdateTaskRequest, UpdateTaskRequestParams, UpdateTaskResult
        ),
        "tasks/cancel": _request(
            "tasks/cancel", CancelTaskRequest, CancelTaskRequestParams, CancelTaskResult
        ),
        "notifications/tasks": MethodSpec(
            method="notifications/tasks",
            kind="notification",
            direction="server",
            message=TaskStatusNotification,
            params=TaskStatusNotificationParams,
            params_required=True,
            capability=_GATE,
            extension=EXTENSION_ID,
        ),
    },
    results={"tools/call": (CreateTaskResult,)},
)
