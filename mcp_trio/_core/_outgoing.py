"""Our requests: their ids, the ones waiting for an answer, and their progress.

:class:`OutgoingRequests` owns the id counter, the pending table (keyed by
our id), the progress tokens of the pending requests, and the progress tokens
that outlive their request because it was answered with a 2025-11-25 task.

Rules it keeps:

* Our ids come from an integer counter and never repeat within a session:
  ``n``, or ``f"{id_prefix}{n}"`` when a prefix is set (a session served by
  several processes, shared through a store, keeps them unique).  An id is
  used once the request's params were found valid (:meth:`OutgoingRequests.claim_id`).
* A request asking for progress carries its id as its progress token; its
  token ends with its answer, or with its cancellation.
* Progress is reported only for a pending request that carried a token, and
  must increase.
* A progress token of a request answered with a ``CreateTaskResult`` stays
  valid for the task (its progress arrives as a plain notification) until
  the task's terminal ``notifications/tasks/status``; at most
  ``_MAX_TASK_TOKENS`` are kept.
* A cancelled request forgets its entry, so a late answer is ignored;
  ``initialize`` is never cancelled (nothing is sent), nor is anything sent
  once the session is closed.
"""

from __future__ import annotations

from typing import Any

from msgspec import UNSET

from .. import _jsonrpc as rpc
from ..types._wire import MethodSpec, RequestId
from ._events import Event, NotificationReceived, ProgressReceived, ProtocolViolation
from ._shared import _NOT_CANCELLABLE, _Pending

_MAX_TASK_TOKENS = 1024
_TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "cancelled"})


class OutgoingRequests:
    """Our requests still waiting for an answer, their ids and progress tokens."""

    __slots__ = ("_next_id", "id_prefix", "_pending", "_progress_tokens", "_task_tokens")

    def __init__(self) -> None:
        self._next_id = 0
        #: Our request ids are ``f"{id_prefix}{n}"`` strings when set, else ``n``.
        self.id_prefix: str | None = None
        self._pending: dict[RequestId, _Pending] = {}
        self._progress_tokens: dict[RequestId, RequestId] = {}
        # progress token -> task id, for requests answered with a 2025-11-25 task
        self._task_tokens: dict[RequestId, str] = {}

    # ----------------------------------------------------------- the table

    def next_id(self) -> RequestId:
        """The id the next request will have (once :meth:`claim_id` takes it)."""
        number = self._next_id + 1
        return number if self.id_prefix is None else f"{self.id_prefix}{number}"

    def claim_id(self) -> None:
        """The id :meth:`next_id` gave is used (its request's params were valid)."""
        self._next_id += 1

    def add(self, id: RequestId, method: str, spec: MethodSpec | None, progress: bool, task: bool) -> None:
        """Our request ``id`` was sent: wait for its answer."""
        self._pending[id] = _Pending(method, spec, id if progress else None, task)
        if progress:
            self._progress_tokens[id] = id

    def pop(self, id: RequestId) -> _Pending | None:
        """Stop waiting for ``id`` (answered or given up): its entry, if it was pending."""
        pending = self._pending.pop(id, None)
        if pending is not None and pending.token is not None:
            self._progress_tokens.pop(pending.token, None)
        return pending

    def only(self) -> tuple[RequestId, _Pending] | None:
        """The one pending request, when exactly one is pending."""
        if len(self._pending) != 1:
            return None
        ((id, pending),) = self._pending.items()
        return id, pending

    @property
    def ids(self) -> list[RequestId]:
        return list(self._pending)

    @property
    def progress_tokens(self) -> dict[RequestId, RequestId]:
        """Progress token -> the id of our pending request that carries it (a copy)."""
        return dict(self._progress_tokens)

    @property
    def task_tokens(self) -> dict[RequestId, str]:
        """Progress token -> the task it now belongs to (a copy)."""
        return dict(self._task_tokens)

    def cancel(self, id: RequestId, closed: bool, reason: str | None) -> bytes | None:
        """Give up on ``id``: the ``notifications/cancelled`` to send, if any."""
        pending = self.pop(id)
        if pending is None or pending.method in _NOT_CANCELLABLE or closed:
            return None
        params: dict[str, Any] = {"requestId": id}
        if reason is not None:
            params["reason"] = reason
        return rpc.encode_notification("notifications/cancelled", params)

    def close(self) -> list[RequestId]:
        """Forget everything: the ids of the requests that will never be answered."""
        lost = list(self._pending)
        self._pending.clear()
        self._progress_tokens.clear()
        self._task_tokens.clear()
        return lost

    # ------------------------------------------------------------ progress

    def on_progress(self, params: Any, events: list[Event], spec: MethodSpec, version: str) -> None:
        """A valid ``notifications/progress`` from the peer."""
        token = params.progressToken
        request_id = self._progress_tokens.get(token)
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is None:
            if token in self._task_tokens:
                # Progress of a task: its request was answered, so no waiter is left.
                events.append(NotificationReceived("notifications/progress", params, spec, version))
                return
            events.append(ProtocolViolation(f"dropped progress for unknown token {token!r}"))
            return
        progress = float(params.progress)
        if pending.last_progress is not None and not progress > pending.last_progress:
            events.append(
                ProtocolViolation(
                    f"dropped progress {progress} for request {request_id!r}: "
                    f"it does not increase (last {pending.last_progress})"
                )
            )
            return
        pending.last_progress = progress
        total = params.total if params.total is not UNSET else None
        message = getattr(params, "message", UNSET)
        assert request_id is not None  # a pending request has an id
        events.append(
            ProgressReceived(
                request_id,
                progress,
                None if total is None else float(total),
                message if isinstance(message, str) else None,
            )
        )

    def task_started(self, pending: _Pending, task_id: Any) -> None:
        """``pending`` (answered) now runs as task ``task_id``: keep its progress token."""
        if pending.task and pending.token is not None and isinstance(task_id, str):
            if len(self._task_tokens) >= _MAX_TASK_TOKENS:
                del self._task_tokens[next(iter(self._task_tokens))]
            self._task_tokens[pending.token] = task_id

    def task_status(self, params: Any) -> None:
        """A valid ``notifications/tasks/status``: a terminal one ends its task's tokens."""
        if self._task_tokens and getattr(params, "status", None) in _TERMINAL_TASK_STATUSES:
            task_id = getattr(params, "taskId", None)
            for token in [t for t, tid in self._task_tokens.items() if tid == task_id]:
                del self._task_tokens[token]
