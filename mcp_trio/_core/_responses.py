"""Answers to our own requests.

Rules it keeps:

* A response settles the pending request of its id (kept verbatim); one for
  an unknown id, or an error without an id, is dropped with a
  :class:`ProtocolViolation`.  An invalid error object or a result that does
  not fit the method's result type becomes a :class:`RemoteProtocolError` for
  the waiter.
* The result type is the method's, or the alternative the result names:
  ``resultType`` for an extension's result or ``input_required``, a ``task``
  member for a task-augmented request (a receiver without tasks answers
  normally).  The one-pass response path (in :mod:`._incoming`) takes only
  the type :meth:`ResponseIntake._result_type` would pick
  (:meth:`ResponseIntake.expected_result`).
* The answer to ``initialize`` must name a revision this client speaks;
  otherwise, or when it is an error, the handshake failed.
* A request answered with a 2025-11-25 ``CreateTaskResult`` keeps its
  progress token for the task (:meth:`._outgoing.OutgoingRequests.task_started`).

:class:`ResponseIntake` owns no state: it settles the entries of the
:class:`._outgoing.OutgoingRequests`, and the handshake of a client in the
:class:`._negotiation.Negotiation`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from .._exceptions import McpError, RemoteProtocolError
from ..types import _versions
from ..types._wire import MethodSpec
from ._events import Event, ProtocolViolation, ResponseReceived
from ._negotiation import Negotiation
from ._outgoing import OutgoingRequests
from ._shared import _path_message, _Pending


class _ResultTypePeek(msgspec.Struct, gc=False):
    resultType: Any = "complete"


class _TaskPeek(msgspec.Struct, gc=False):
    task: Any = UNSET


_task_peek = msgspec.json.Decoder(_TaskPeek)
_result_type_peek = msgspec.json.Decoder(_ResultTypePeek)


def _has_plain_field(struct: type, name: str) -> bool:
    """``struct`` has a field ``name`` that is also its name on the wire."""
    fields = getattr(struct, "__struct_fields__", ())
    encoded: tuple[str, ...] = getattr(struct, "__struct_encode_fields__", ())
    return name in fields and encoded[fields.index(name)] == name


class ResponseIntake:
    """The peer's answers to our requests: each settles its pending entry."""

    __slots__ = ("_negotiation", "_ours")

    def __init__(self, negotiation: Negotiation, ours: OutgoingRequests) -> None:
        self._negotiation = negotiation
        self._ours = ours

    # -------------------------------------------------------------- responses

    def on_response(self, id: Any, result_raw: Any, error_raw: Any, events: list[Event], data: bytes) -> None:
        if id is None:
            # An error the peer could not attribute to a request (e.g. a parse error).
            events.append(ProtocolViolation("the peer reported an error without an id", data))
            return
        pending = self._ours.pop(id)
        if pending is None:
            events.append(ProtocolViolation(f"dropped a response for unknown id {id!r}", data))
            return
        method = pending.method
        if error_raw is not UNSET:
            try:
                err = rpc.decode_error(error_raw)
            except msgspec.ValidationError as exc:
                error: Exception = RemoteProtocolError(
                    f"invalid error object in response to {method}: {_path_message(exc, '$.error')}"
                )
            else:
                error = McpError(err.code, err.message, None if err.data is UNSET else err.data)
            self._failed(id, method, error, events)
            return
        spec = pending.spec
        if spec is None or not spec.results:
            events.append(ResponseReceived(id, method, result=rpc.decode_any(result_raw)))
            return
        result_type = self._result_type(pending, spec, result_raw)
        try:
            result = _versions.decoder_for(result_type).decode(result_raw)
        except msgspec.ValidationError as exc:
            message = f"invalid result for {method}: {_path_message(exc, '$.result')}"
            self._failed(id, method, RemoteProtocolError(message), events)
            return
        self.deliver_result(id, pending, result, events)

    def _failed(self, id: Any, method: str, error: Exception, events: list[Event]) -> None:
        """Our request ``id`` (of ``method``, already popped) failed with ``error``;
        when it was ``initialize``, so did the handshake."""
        if method == "initialize":
            self._negotiation.advance("initialize_failed")
        events.append(ResponseReceived(id, method, error=error))

    def deliver_result(self, id: Any, pending: _Pending, result: Any, events: list[Event]) -> None:
        """A validated result for ``pending`` (already popped): the lifecycle and task
        bookkeeping it implies, then its event."""
        method = pending.method
        if method == "initialize":
            initialized = self._negotiation.accept_initialize_result(result)
            if isinstance(initialized, Exception):
                events.append(ResponseReceived(id, method, error=initialized))
                return
            events.append(ResponseReceived(id, method, result=result))
            events.append(initialized)
            return
        if pending.task and type(result).__name__ == "CreateTaskResult":
            # The request now runs as a task: keep its progress token for the task's progress.
            self._ours.task_started(pending, getattr(getattr(result, "task", None), "taskId", None))
        events.append(ResponseReceived(id, method, result=result))

    def expected_result(self, pending: _Pending) -> tuple[type, frozenset[str]] | None:
        """The result type :meth:`_result_type` picks unless the result's ``resultType``
        is one of the returned tags, or ``None`` when the choice needs a peek
        (a task-augmented request, an untyped one, or a primary type without
        a ``resultType`` field to tell the alternatives apart)."""
        spec = pending.spec
        if spec is None or not spec.results:
            return None
        primary = spec.results[0]
        tags: set[str] = set()
        for alt in spec.results[1:]:
            tag = getattr(alt, "RESULT_TYPE", None)
            if isinstance(tag, str):
                tags.add(tag)
            elif alt.__name__ == "InputRequiredResult":
                tags.add("input_required")
            elif alt.__name__ == "CreateTaskResult" and pending.task:
                return None
        if tags and not _has_plain_field(primary, "resultType"):
            return None
        return primary, frozenset(tags)

    def _result_type(self, pending: _Pending, spec: MethodSpec, raw: Any) -> type:
        results = spec.results
        if len(results) == 1:
            return results[0]
        for alt in results[1:]:
            name = alt.__name__
            tag = getattr(alt, "RESULT_TYPE", None)
            if isinstance(tag, str):  # an extension's result, told apart by resultType
                try:
                    kind = _result_type_peek.decode(raw).resultType
                except msgspec.ValidationError:
                    continue
                if kind == tag:
                    return alt
            elif name == "InputRequiredResult":
                try:
                    kind = _result_type_peek.decode(raw).resultType
                except msgspec.ValidationError:
                    continue
                if kind == "input_required":
                    return alt
            elif name == "CreateTaskResult" and pending.task:
                # A receiver that does not support tasks answers normally.
                try:
                    has_task = _task_peek.decode(raw).task is not UNSET
                except msgspec.ValidationError:
                    continue
                if has_task:
                    return alt
        return results[0]
