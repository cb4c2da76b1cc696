"""The sending side: our requests and notifications, and our answers to the
peer's requests.

Rules it keeps:

* Our ids come from an integer counter and never repeat within a session; a
  request asking for progress carries its id as its progress token.
* What may be sent when: nothing once the session is closed; a client sends
  only ``initialize`` and ``ping`` before its handshake, and nothing but
  ``ping`` while it is in progress; a server sends requests only once the
  client sent ``notifications/initialized``, and none in a stateless
  revision (which has no server-to-client requests).
* A message must be one this role may send in the revision (direction, kind);
  a request needs the peer's capability, a notification our own; dict params
  are validated against the revision's params type.
* A stateless client's requests carry its revision, capabilities and info in
  ``_meta``; a standard capability the protocol removed is left out of them
  (``types._versions.capabilities_for``).
* ``initialize`` is never cancelled; a cancelled request of ours forgets its
  entry, so a late answer is ignored.
* An answer is sent only for a request in flight, and none for a cancelled
  one; a dict result must fit the method's result type (the request then
  stays in flight, to be answered with an error), gets ``resultType`` in a
  stateless revision, and a result of an extension's type (``resultType:
  "task"``) is never sent to a client that did not declare the extension.
* Progress is sent only for a request in flight that carried a progress
  token, must be finite and increase, and stops with the answer.

State: reads ``role``, ``state``, ``version``, the capabilities; writes
``_next_id``, ``_pending``, ``_progress_tokens``, ``state`` (``initialize``
sent) and pops ``_in_flight``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from .._exceptions import LocalProtocolError
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._capabilities import has_capability
from ._lifecycle import State, transition
from ._shared import (
    _NOT_CANCELLABLE,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    _declares,
    _InFlight,
    _path_message,
    _Pending,
)
from ._state import _CoreState


class _Sending(_CoreState):
    """The sending side of :class:`SessionCore`."""

    # --------------------------------------------------------------- sending

    def _outgoing_spec(self, method: str, kind: str) -> tuple[MethodSpec | None, str | None]:
        version = self.version
        if version is None and self.role == "client" and method == "initialize":
            version = self.legacy_versions[0] if self.legacy_versions else None
        if version is None:
            version = self.versions[0]
        spec = self._methods(version).get(method)
        if (
            spec is None
            or spec.kind != kind
            or spec.input_request
            or spec.direction not in (self.role, "both")
        ):
            if method in self.extra_methods:
                return None, version
            raise LocalProtocolError(
                f"{method!r} is not a {kind} a {self.role} may send in protocol version {version}"
            )
        return spec, version

    def _check_send_state(self, method: str, kind: str) -> None:
        state = self.state
        if state is State.CLOSED:
            raise LocalProtocolError("the session is closed")
        if kind == "request":
            if self.role == "client":
                if state is State.NEW and method not in ("initialize", "ping"):
                    raise LocalProtocolError(
                        f"cannot send {method!r} before initialization (send 'initialize' first, "
                        "or choose a stateless protocol version)"
                    )
                if state is State.INITIALIZING and method != "ping":
                    raise LocalProtocolError(f"cannot send {method!r} while initialization is in progress")
                if state is not State.NEW and method == "initialize":
                    raise LocalProtocolError("the session is already initialized")
            else:
                if state is State.MODERN:
                    raise LocalProtocolError(
                        f"cannot send {method!r}: stateless protocol versions have no server-to-client "
                        "requests (return an InputRequiredResult instead)"
                    )
                if state is not State.READY and method != "ping":
                    raise LocalProtocolError(
                        f"cannot send {method!r} before the client sent notifications/initialized"
                    )
        elif self.role == "client" and state in (State.NEW, State.INITIALIZING):
            if method != "notifications/cancelled":
                raise LocalProtocolError(f"cannot send {method!r} before initialization finished")

    def _checked_spec(self, method: str, kind: str) -> MethodSpec | None:
        """The registry entry of an outgoing message, after the lifecycle, direction
        and capability checks (a request needs the peer's capability, a
        notification our own)."""
        self._check_send_state(method, kind)
        spec, _version = self._outgoing_spec(method, kind)
        if spec is None or spec.capability is None:
            return spec
        if kind == "request":
            caps, who = self.peer_capabilities, f"the {self.peer_role}"
        else:
            caps, who = self.capabilities, f"this {self.role}"
        if not has_capability(caps, spec.capability):
            raise LocalProtocolError(
                f"cannot send {method!r}: {who} did not advertise the "
                f"{'.'.join(spec.capability)!r} capability"
            )
        return spec

    def _typed_params(self, spec: MethodSpec | None, params: Any, method: str) -> Any:
        if params is None:
            return UNSET
        if spec is None or spec.params is None or not isinstance(params, dict):
            return params
        try:
            return msgspec.convert(params, spec.params)
        except msgspec.ValidationError as exc:
            raise LocalProtocolError(
                f"invalid params for {method}: {_path_message(exc, '$.params')}"
            ) from None

    def start_request(
        self, method: str, params: Any = None, *, progress: bool = False, result_type: Any = None
    ) -> tuple[RequestId, bytes]:
        """Prepare a request.

        Args:
            method: The method name.
            params: A params Struct, a dict (validated against the revision's
                params type), or ``None``.
            progress: Ask the peer for progress (adds ``_meta.progressToken``).
            result_type: Decode the ordinary result as this type instead of
                the revision's (the alternatives keep theirs).

        Returns:
            The new request id and the bytes to send.

        Raises:
            LocalProtocolError: the request is not allowed now (lifecycle,
                capability, direction) or the params are invalid.
        """
        spec = self._checked_spec(method, "request")
        number = self._next_id + 1
        id: RequestId = number if self.id_prefix is None else f"{self.id_prefix}{number}"
        extra_meta: dict[str, Any] = {}
        if progress:
            extra_meta["progressToken"] = id
        if self.state is State.MODERN and self.role == "client":
            extra_meta[META_PROTOCOL_VERSION] = self.version
            extra_meta[META_CLIENT_CAPABILITIES] = _versions.capabilities_for(
                self.version or "", self.capabilities, "client"
            )
            extra_meta[META_CLIENT_INFO] = self.info
        if extra_meta:
            params = _with_meta(params, extra_meta)
        typed = self._typed_params(spec, params, method)
        self._next_id = number
        data = rpc.encode_request(id, method, typed)
        task = spec is not None and getattr(typed, "task", UNSET) not in (UNSET, None)
        if result_type is not None and spec is not None and spec.results:
            spec = _retyped(spec, result_type)
        self._pending[id] = _Pending(method, spec, id if progress else None, task)
        if progress:
            self._progress_tokens[id] = id
        if method == "initialize":
            self.state = transition(self.role, self.state, "initialize_sent")
        return id, data

    def cancel(self, id: RequestId, reason: str | None = None) -> bytes | None:
        """Give up on our request ``id``; returns the ``notifications/cancelled`` to send.

        Returns ``None`` when there is nothing to cancel (already answered, or
        ``initialize``, which may not be cancelled); the pending entry is
        dropped either way, so a late answer is ignored.
        """
        pending = self._pending.pop(id, None)
        if pending is None:
            return None
        if pending.token is not None:
            self._progress_tokens.pop(pending.token, None)
        if pending.method in _NOT_CANCELLABLE or self.state is State.CLOSED:
            return None
        params: dict[str, Any] = {"requestId": id}
        if reason is not None:
            params["reason"] = reason
        return rpc.encode_notification("notifications/cancelled", params)

    def notify(self, method: str, params: Any = None) -> bytes:
        """Prepare a notification (checked against direction and our capabilities)."""
        spec = self._checked_spec(method, "notification")
        typed = self._typed_params(spec, params, method)
        return rpc.encode_notification(method, typed)

    def _finish(self, id: RequestId) -> _InFlight | None:
        return self._in_flight.pop(id, None)

    def respond(self, id: RequestId, result: Any) -> bytes | None:
        """Answer the peer's request ``id``.

        Returns the bytes to send, or ``None`` when nothing must be sent (the
        request was cancelled, or it is part of a batch still being answered).

        Raises:
            LocalProtocolError: ``id`` is not a request in progress, or a dict
                result does not fit the method's result type (the request then
                stays in progress so it can still be answered with an error).
        """
        entry = self._in_flight.get(id)
        if entry is None:
            raise LocalProtocolError(f"no request {id!r} is in progress")
        if result is None:
            result = {}
        if isinstance(result, dict):
            if entry.modern and "resultType" not in result:
                result = {**result, "resultType": "complete"}
            spec = self._methods(entry.version).get(entry.method)
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
                self._check_extension_result(entry, candidate)
        elif isinstance(result, msgspec.Struct):
            self._check_extension_result(entry, type(result))
        del self._in_flight[id]
        if entry.cancelled:
            return self._batch_done(entry, None)
        return self._batch_done(entry, rpc.encode_response(id, result))

    def _check_extension_result(self, entry: _InFlight, result_type: type) -> None:
        ext = getattr(result_type, "EXTENSION", None)
        if isinstance(ext, str) and not _declares(entry.client_caps, ext):
            raise LocalProtocolError(
                f"cannot answer {entry.method} with {result_type.__name__}: the client did not "
                f"declare the {ext!r} extension in this request"
            )

    def error(self, id: RequestId, code: int, message: str, data: Any = None) -> bytes | None:
        """Answer the peer's request ``id`` with an error (``None``: nothing to send)."""
        entry = self._finish(id)
        if entry is None:
            raise LocalProtocolError(f"no request {id!r} is in progress")
        if entry.cancelled:
            return self._batch_done(entry, None)
        return self._batch_done(entry, rpc.encode_error(id, code, message, data))

    def drop(self, id: RequestId) -> bytes | None:
        """The handler of ``id`` ended without an answer (it was cancelled).

        Returns the bytes of a batch reply that this completes, if any.
        """
        entry = self._finish(id)
        if entry is None:
            return None
        return self._batch_done(entry, None)

    def is_cancelled(self, id: RequestId) -> bool:
        entry = self._in_flight.get(id)
        return entry is None or entry.cancelled

    def progress(
        self,
        id: RequestId,
        progress: float,
        total: float | None = None,
        message: str | None = None,
    ) -> bytes | None:
        """A progress notification for the peer's request ``id``.

        Returns ``None`` when the request carried no progress token or is no
        longer in progress (nothing is sent after the response).

        Raises:
            LocalProtocolError: ``progress`` does not increase, or is not finite.
        """
        entry = self._in_flight.get(id)
        if entry is None or entry.token is None or entry.cancelled:
            return None
        params = progress_params(entry.token, progress, entry.last_progress, total, message)
        entry.last_progress = params["progress"]
        return rpc.encode_notification("notifications/progress", params)


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


def _with_meta(params: Any, extra: dict[str, Any]) -> Any:
    """``params`` with ``extra`` merged into its ``_meta`` (a copy; the caller's object is untouched)."""
    if params is UNSET or params is None:
        return {"_meta": extra}
    if isinstance(params, dict):
        meta = params.get("_meta")
        merged = {**meta, **extra} if isinstance(meta, dict) else extra
        return {**params, "_meta": merged}
    if isinstance(params, msgspec.Struct) and hasattr(params, "meta"):
        meta = getattr(params, "meta")  # noqa: B009 - a generated Struct's optional member
        merged = {**meta, **extra} if isinstance(meta, dict) else extra
        return msgspec.structs.replace(params, meta=merged)
    raise LocalProtocolError(
        f"cannot add _meta to params of type {type(params).__name__}; pass a dict or a params Struct"
    )


@functools.cache
def _retyped(spec: MethodSpec, result_type: Any) -> MethodSpec:
    """``spec`` with its ordinary result type replaced (built once per pair)."""
    return msgspec.structs.replace(spec, results=(result_type, *spec.results[1:]))
