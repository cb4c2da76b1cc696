"""The sending side: our requests and notifications, checked.

Rules it keeps:

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
  (``types._versions.capabilities_for``).  Dict params whose ``_meta`` names
  client capabilities already keep those (a proxy forwarding its client's request).

:class:`Sender` owns no state: it reads the :class:`._negotiation.Negotiation`
(and takes its ``initialize_sent`` step), and a request it makes joins the
:class:`._outgoing.OutgoingRequests` (whose rules give our ids, progress
tokens and cancellation).  Our answers to the peer's requests are
:class:`._in_flight.PeerRequests`'s.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec
from msgspec import UNSET

from .. import _jsonrpc as rpc
from .._exceptions import LocalProtocolError
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._capabilities import has_capability
from ._lifecycle import State
from ._negotiation import Negotiation
from ._outgoing import OutgoingRequests
from ._shared import META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, _path_message


class Sender:
    """Our requests and notifications: checked against the lifecycle, the
    direction and the capabilities, then encoded."""

    __slots__ = ("_negotiation", "_ours")

    def __init__(self, negotiation: Negotiation, ours: OutgoingRequests) -> None:
        self._negotiation = negotiation
        self._ours = ours

    def _outgoing_spec(self, method: str, kind: str) -> tuple[MethodSpec | None, str | None]:
        neg = self._negotiation
        version = neg.version
        if version is None and neg.role == "client" and method == "initialize":
            version = neg.legacy_versions[0] if neg.legacy_versions else None
        if version is None:
            version = neg.versions[0]
        spec = neg.methods(version).get(method)
        if (
            spec is None
            or spec.kind != kind
            or spec.input_request
            or spec.direction not in (neg.role, "both")
        ):
            if method in neg.extra_methods:
                return None, version
            raise LocalProtocolError(
                f"{method!r} is not a {kind} a {neg.role} may send in protocol version {version}"
            )
        return spec, version

    def _check_send_state(self, method: str, kind: str) -> None:
        neg = self._negotiation
        state = neg.state
        if state is State.CLOSED:
            raise LocalProtocolError("the session is closed")
        if kind == "request":
            if neg.role == "client":
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
        elif neg.role == "client" and state in (State.NEW, State.INITIALIZING):
            if method != "notifications/cancelled":
                raise LocalProtocolError(f"cannot send {method!r} before initialization finished")

    def _checked_spec(self, method: str, kind: str) -> MethodSpec | None:
        """The registry entry of an outgoing message, after the lifecycle, direction
        and capability checks (a request needs the peer's capability, a
        notification our own)."""
        neg = self._negotiation
        self._check_send_state(method, kind)
        spec, _version = self._outgoing_spec(method, kind)
        if spec is None or spec.capability is None:
            return spec
        if kind == "request":
            caps, who = neg.peer_capabilities, f"the {neg.peer_role}"
        else:
            caps, who = neg.capabilities, f"this {neg.role}"
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
        self, method: str, params: Any, progress: bool, result_type: Any
    ) -> tuple[RequestId, bytes]:
        """Prepare a request (see ``SessionCore.start_request``): its id and bytes."""
        neg = self._negotiation
        spec = self._checked_spec(method, "request")
        id = self._ours.next_id()
        extra_meta: dict[str, Any] = {}
        if progress:
            extra_meta["progressToken"] = id
        if neg.state is State.MODERN and neg.role == "client":
            extra_meta[META_PROTOCOL_VERSION] = neg.version
            extra_meta[META_CLIENT_CAPABILITIES] = _versions.capabilities_for(
                neg.version or "", neg.capabilities, "client"
            )
            extra_meta[META_CLIENT_INFO] = neg.info
            own = params.get("_meta") if isinstance(params, dict) else None
            if isinstance(own, dict) and META_CLIENT_CAPABILITIES in own:
                del extra_meta[META_CLIENT_CAPABILITIES]  # (a proxy's request speaks for its client)
        if extra_meta:
            params = _with_meta(params, extra_meta)
        typed = self._typed_params(spec, params, method)
        self._ours.claim_id()
        data = rpc.encode_request(id, method, typed)
        task = spec is not None and getattr(typed, "task", UNSET) not in (UNSET, None)
        if result_type is not None and spec is not None and spec.results:
            spec = _retyped(spec, result_type)
        self._ours.add(id, method, spec, progress, task)
        if method == "initialize":
            neg.advance("initialize_sent")
        return id, data

    def notify(self, method: str, params: Any) -> bytes:
        """Prepare a notification (checked against direction and our capabilities)."""
        spec = self._checked_spec(method, "notification")
        typed = self._typed_params(spec, params, method)
        return rpc.encode_notification(method, typed)


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
