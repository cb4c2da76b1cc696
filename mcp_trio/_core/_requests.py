"""The peer's requests: judged, then admitted into the in-flight table.

A request that passed the envelope checks of :mod:`._incoming` is judged here:
the lifecycle and the era (the ``initialize`` handshake or the stateless
revisions' ``_meta``), the gate of the requests this side answers, the params,
and then it joins the in-flight table as a :class:`RequestReceived` event.

Rules it keeps:

* A request id that is still in flight may not be reused by the peer (-32600).
* ``initialize`` is answered here (never in a batch, never twice; the
  revision is the client's if this side speaks it, else this side's newest
  handshake revision).  A stateless request (``_meta`` naming a 2026-07-28+
  revision, or any request on a session that expects them) has no
  ``initialize`` (-32601), must name a revision this side speaks (-32022
  with the supported ones) and carry an object of client capabilities
  (-32602); before either era is settled only ``ping`` is answered.
* A client answers only ``ping`` before its handshake is finished.
* -32601 for an unknown method or one whose capability this side did not
  advertise (saying so); methods in ``extra_methods`` get their params as
  plain JSON (an object or an array); -32602 for params that do not fit the
  revision's types.
* Extensions (``types.ext_tasks``) are active when this side lists them under
  ``capabilities.extensions``: their methods join the registry of the
  stateless revisions.  A request for an extension method from a client that
  did not declare the extension in that request's capabilities gets -32021
  naming it.
* A standard capability the protocol removed is not advertised in the
  revisions after its removal (``types._versions.capabilities_for``): the
  2025-11-25 ``tasks`` capability stays out of ``server/discover``.
* ``ping`` and ``server/discover`` are answered here, at once.

:class:`RequestIntake` owns no state: it reads and settles the era in the
:class:`._negotiation.Negotiation`, asks the :class:`._gate.RequestGate` which
requests this side answers, and admits a request into the
:class:`._in_flight.PeerRequests`.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw

from .. import _jsonrpc as rpc
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._events import Event, Outgoing
from ._gate import RequestGate
from ._in_flight import PeerRequests
from ._lifecycle import State
from ._negotiation import Negotiation
from ._shared import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    _BadParams,
    _Batch,
    _declares,
    _decode_params,
    _path_message,
    _progress_token,
    error_reply,
    reply,
)


class _MetaPeek(msgspec.Struct, gc=False):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class _InitializePeek(msgspec.Struct, gc=False):
    protocolVersion: Any = None


_meta_peek = msgspec.json.Decoder(_MetaPeek)
_init_peek = msgspec.json.Decoder(_InitializePeek)


class RequestIntake:
    """What the peer asks of us: each request judged, then admitted or answered."""

    __slots__ = ("_negotiation", "_gate", "_peer")

    def __init__(self, negotiation: Negotiation, gate: RequestGate, peer: PeerRequests) -> None:
        self._negotiation = negotiation
        self._gate = gate
        self._peer = peer

    def on_request(
        self,
        id: RequestId,
        method: str,
        params_raw: Raw | Any,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        neg = self._negotiation
        if id in self._peer:
            error_reply(
                events,
                batch,
                id,
                rpc.INVALID_REQUEST,
                f"Invalid request: id {id!r} is already in use by a request in progress",
            )
            return

        if method == "initialize" and neg.role == "server":
            meta = self._peek_meta(params_raw)
            named = meta.get(META_PROTOCOL_VERSION) if meta is not None else None
            if neg.modern_only or (isinstance(named, str) and named in neg.modern_versions):
                # A stateless request: that revision has no initialize.
                error_reply(
                    events,
                    batch,
                    id,
                    rpc.METHOD_NOT_FOUND,
                    "Method not found: initialize (stateless protocol versions have no handshake)",
                )
                return
            self._on_initialize(id, params_raw, events, batch)
            return

        modern = False
        client_caps: dict[str, Any] | None = None
        state = neg.state
        version: str | None
        if neg.role == "server" and state in (State.NEW, State.MODERN):
            meta = self._peek_meta(params_raw)
            requested = meta.get(META_PROTOCOL_VERSION) if meta is not None else None
            if requested is None:
                if method == "ping" and state is State.NEW and neg.legacy_versions:
                    self._answer_ping(id, params_raw, None, events, batch)
                    return
                if state is State.NEW:
                    error_reply(
                        events,
                        batch,
                        id,
                        rpc.INVALID_REQUEST,
                        f"Invalid request: {method!r} before initialization; send 'initialize' first"
                        + (
                            f" (or name a protocol version in _meta[{META_PROTOCOL_VERSION!r}])"
                            if neg.modern_versions
                            else ""
                        ),
                    )
                else:
                    error_reply(
                        events,
                        batch,
                        id,
                        rpc.INVALID_PARAMS,
                        f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] is required",
                    )
                return
            if not isinstance(requested, str) or requested not in neg.modern_versions:
                error_reply(
                    events,
                    batch,
                    id,
                    rpc.UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                    {"supported": list(neg.versions), "requested": requested},
                )
                return
            caps = meta.get(META_CLIENT_CAPABILITIES) if meta is not None else None
            if not isinstance(caps, dict):
                error_reply(
                    events,
                    batch,
                    id,
                    rpc.INVALID_PARAMS,
                    f"Invalid params: _meta[{META_CLIENT_CAPABILITIES!r}] must be an object",
                )
                return
            version = requested
            modern = True
            client_caps = caps
            neg.version = requested
            if state is State.NEW:
                neg.advance("modern_request")
        elif neg.role == "client" and state in (State.NEW, State.INITIALIZING):
            if method == "ping":
                self._answer_ping(id, params_raw, None, events, batch)
                return
            error_reply(
                events,
                batch,
                id,
                rpc.INVALID_REQUEST,
                f"Invalid request: {method!r} before initialization finished",
            )
            return
        else:
            version = neg.version

        assert version is not None
        spec = self._gate.accepted(version).get(method)
        if spec is None:
            known = neg.methods(version).get(method)
            if not self._gate.is_peer_request(known):
                known = None
            if known is not None or method not in neg.extra_methods:
                # Not ours to answer, or (``known``) its capability is not advertised.
                self._refuse_method(id, method, known, events, batch)
                return
            # A method outside the spec that this side handles: params as plain JSON.
            params = UNSET if params_raw is UNSET else rpc.decode_any(params_raw)
            if params is not UNSET and not isinstance(params, dict | list):
                error_reply(events, batch, id, rpc.INVALID_PARAMS, "Invalid params: expected an object")
                return
            self._peer.admit(
                id,
                method,
                None if params is UNSET else params,
                None,
                version,
                modern,
                client_caps,
                None,
                events,
                batch,
            )
            return
        if spec.extension is not None and modern and not _declares(client_caps, spec.extension):
            error_reply(
                events,
                batch,
                id,
                rpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
                f"Missing required client capability: extension {spec.extension!r}",
                {"requiredCapabilities": {"extensions": {spec.extension: {}}}},
            )
            return

        if method == "ping":
            self._answer_ping(id, params_raw, version, events, batch)
            return

        try:
            params = _decode_params(spec, params_raw)
        except _BadParams as bad:
            detail = f"{method} requires params" if bad.missing else bad.detail
            error_reply(events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {detail}")
            return
        token = _progress_token(params)

        if method == "server/discover" and neg.role == "server":
            reply(events, batch, id, rpc.encode_response(id, neg.discover_result(version)))
            return
        self._peer.admit(id, method, params, spec, version, modern, client_caps, token, events, batch)

    def _answer_ping(
        self,
        id: RequestId,
        params_raw: Raw | Any,
        version: str | None,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        """``ping`` is answered here at any stage of the session, but only when its
        params (optional) are what the revision's types say: ``"x"`` or a non-object
        ``_meta`` get -32602 like any other request's bad params."""
        neg = self._negotiation
        spec = neg.methods(version).get("ping")
        if spec is not None:
            try:
                _decode_params(spec, params_raw)
            except _BadParams as bad:
                error_reply(events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {bad.detail}")
                return
        reply(events, batch, id, rpc.encode_response(id, {}))

    def _refuse_method(
        self,
        id: RequestId,
        method: str,
        known: MethodSpec | None,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        """-32601 for a request this side does not answer; ``known`` is its
        registry entry when only its (unadvertised) capability is missing."""
        message = f"Method not found: {method}"
        if known is not None and known.capability is not None:
            message += f" (the {'.'.join(known.capability)!r} capability is not advertised)"
        error_reply(events, batch, id, rpc.METHOD_NOT_FOUND, message)

    def _peek_meta(self, params_raw: Raw | Any) -> dict[str, Any] | None:
        if params_raw is UNSET:
            return None
        try:
            return _meta_peek.decode(params_raw).meta
        except msgspec.ValidationError:
            return None

    def _on_initialize(
        self, id: RequestId, params_raw: Any, events: list[Event], batch: _Batch | None
    ) -> None:
        neg = self._negotiation
        if batch is not None:
            error_reply(
                events, batch, id, rpc.INVALID_REQUEST, "Invalid request: initialize must not be in a batch"
            )
            return
        if neg.state in (State.INITIALIZING, State.READY):
            error_reply(
                events, batch, id, rpc.INVALID_REQUEST, "Invalid request: the session is already initialized"
            )
            return
        if not neg.legacy_versions:
            error_reply(
                events,
                batch,
                id,
                rpc.METHOD_NOT_FOUND,
                "Method not found: initialize (this server speaks only stateless protocol versions)",
            )
            return
        if params_raw is UNSET:
            error_reply(events, batch, id, rpc.INVALID_PARAMS, "Invalid params: initialize requires params")
            return
        try:
            requested = _init_peek.decode(params_raw).protocolVersion
        except msgspec.ValidationError as exc:
            error_reply(
                events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {_path_message(exc, '$.params')}"
            )
            return
        if not isinstance(requested, str):
            error_reply(
                events, batch, id, rpc.INVALID_PARAMS, "Invalid params: protocolVersion must be a string"
            )
            return
        version = requested if requested in neg.legacy_versions else neg.legacy_versions[0]
        spec = neg.methods(version)["initialize"]
        assert spec.params is not None
        try:
            params = _versions.decoder_for(spec.params).decode(params_raw)
        except msgspec.ValidationError as exc:
            error_reply(
                events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {_path_message(exc, '$.params')}"
            )
            return
        self.initialize(id, version, params, events)

    def initialize(self, id: RequestId, version: str, params: Any, events: list[Event]) -> None:
        """Answer a valid ``initialize`` (params decoded with ``version``'s type)."""
        result, initialized = self._negotiation.initialized(version, params)
        events.append(Outgoing(rpc.encode_response(id, result), related=id, final=True))
        events.append(initialized)
