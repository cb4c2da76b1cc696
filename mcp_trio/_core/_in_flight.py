"""The peer's requests in flight: admitted, cancelled, answered.

:class:`PeerRequests` owns the in-flight table: each request the peer sent
that was admitted and has not been answered, keyed by the peer's id verbatim
(an :class:`._shared._InFlight` record: its method, revision, progress token,
cancellation mark, batch and per-request client capabilities).

Rules it keeps:

* A request joins the table as a :class:`RequestReceived` event; while it is
  there its id may not be reused by the peer (the receiving side checks
  :meth:`PeerRequests.__contains__`).
* ``notifications/cancelled`` for a request in flight (never ``initialize``)
  marks it cancelled: no answer will be sent for it.  Unknown or finished
  ids are ignored.
* An answer is sent only for a request in flight, and none for a cancelled
  one; a dict result must fit the method's result type (the request then
  stays in flight, to be answered with an error), gets ``resultType`` in a
  stateless revision, and a result of an extension's type (``resultType:
  "task"``) is never sent to a client that did not declare the extension.
* Progress is sent only for a request in flight that carried a progress
  token, must be finite and increase, and stops with the answer.
* A member of a batch is answered into its batch (:func:`._shared.batch_done`).
"""

from __future__ import annotations

import math
from typing import Any, cast

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from .._exceptions import LocalProtocolError
from ..types._wire import MethodSpec, RequestId
from ._events import CancelRequested, Event, RequestReceived
from ._negotiation import Negotiation
from ._shared import _NOT_CANCELLABLE, _Batch, _declares, _InFlight, _path_message, batch_done


class PeerRequests:
    """The peer's requests we admitted and have not answered."""

    __slots__ = ("_negotiation", "_table")

    def __init__(self, negotiation: Negotiation) -> None:
        self._negotiation = negotiation
        self._table: dict[RequestId, _InFlight] = {}

    def __contains__(self, id: object) -> bool:
        return id in self._table

    def __len__(self) -> int:
        return len(self._table)

    @property
    def ids(self) -> list[RequestId]:
        return list(self._table)

    def close(self) -> None:
        self._table.clear()

    def admit(
        self,
        id: RequestId,
        method: str,
        params: Any,
        spec: MethodSpec | None,
        version: str,
        modern: bool,
        client_caps: dict[str, Any] | None,
        token: int | str | None,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        """Let the request ``id`` in: its entry, and its :class:`RequestReceived`."""
        if batch is not None:
            batch.remaining += 1
        self._table[id] = _InFlight(method, token, batch, version, modern, client_caps)
        events.append(RequestReceived(id, method, params, spec, version, token, client_caps))

    def on_cancelled(self, params: Any, events: list[Event]) -> None:
        """A valid ``notifications/cancelled`` from the peer."""
        request_id = getattr(params, "requestId", UNSET)
        entry = self._table.get(request_id) if request_id is not UNSET else None
        if entry is not None and entry.method not in _NOT_CANCELLABLE and not entry.cancelled:
            entry.cancelled = True
            reason = getattr(params, "reason", None)
            events.append(
                CancelRequested(cast("int | str", request_id), reason if isinstance(reason, str) else None)
            )

    def is_cancelled(self, id: RequestId) -> bool:
        entry = self._table.get(id)
        return entry is None or entry.cancelled

    # ------------------------------------------------------------ answers

    def respond(self, id: RequestId, result: Any) -> bytes | None:
        """Answer ``id`` with ``result`` (see ``SessionCore.respond``)."""
        entry = self._table.get(id)
        if entry is None:
            raise LocalProtocolError(f"no request {id!r} is in progress")
        if result is None:
            result = {}
        if isinstance(result, dict):
            if entry.modern and "resultType" not in result:
                result = {**result, "resultType": "complete"}
            spec = self._negotiation.methods(entry.version).get(entry.method)
            if spec is not None and spec.results:
                errors = []
                for candidate in spec.results:
                    try:
                        msgspec.convert(result, candidate)
                        break
                    except msgspec.ValidationError as exc:
                        errors.append(exc)
                else:
                    raise LocalProtocolError(
                        f"invalid result for {entry.method}: {_path_message(errors[0], '$.result')}"
                    )
                _check_extension_result(entry, candidate)
        elif isinstance(result, msgspec.Struct):
            _check_extension_result(entry, type(result))
        del self._table[id]
        if entry.cancelled:
            return batch_done(entry, None)
        return batch_done(entry, rpc.encode_response(id, result))

    def error(self, id: RequestId, code: int, message: str, data: Any) -> bytes | None:
        """Answer ``id`` with an error (see ``SessionCore.error``)."""
        entry = self._table.pop(id, None)
        if entry is None:
            raise LocalProtocolError(f"no request {id!r} is in progress")
        if entry.cancelled:
            return batch_done(entry, None)
        return batch_done(entry, rpc.encode_error(id, code, message, data))

    def drop(self, id: RequestId) -> bytes | None:
        """The handler of ``id`` ended without an answer (see ``SessionCore.drop``)."""
        entry = self._table.pop(id, None)
        if entry is None:
            return None
        return batch_done(entry, None)

    def progress(
        self, id: RequestId, progress: float, total: float | None, message: str | None
    ) -> bytes | None:
        """A progress notification for ``id`` (see ``SessionCore.progress``)."""
        entry = self._table.get(id)
        if entry is None or entry.token is None or entry.cancelled:
            return None
        params = progress_params(entry.token, progress, entry.last_progress, total, message)
        entry.last_progress = params["progress"]
        return rpc.encode_notification("notifications/progress", params)


def _check_extension_result(entry: _InFlight, result_type: type) -> None:
    ext = getattr(result_type, "EXTENSION", None)
    if isinstance(ext, str) and not _declares(entry.client_caps, ext):
        raise LocalProtocolError(
            f"cannot answer {entry.method} with {result_type.__name__}: the client did not "
            f"declare the {ext!r} extension in this request"
        )


def progress_params(
    token: Any, progress: float, last: float | None, total: float | None, message: str | None
) -> dict[str, Any]:
    """The params of a ``notifications/progress`` for ``token`` (its ``progress``
    a float, as is ``total``); ``last`` is the progress sent before, if any.

    Raises:
        LocalProtocolError: ``progress`` is not finite, or not above ``last``.
    """
    value = float(progress)
    if not math.isfinite(value):
        raise LocalProtocolError(f"progress must be a finite number, not {value!r}")
    if last is not None and not value > last:
        raise LocalProtocolError(f"progress must increase: {value} after {last}")
    params: dict[str, Any] = {"progressToken": token, "progress": value}
    if total is not None:
        params["total"] = float(total)
    if message is not None:
        params["message"] = message
    return params
