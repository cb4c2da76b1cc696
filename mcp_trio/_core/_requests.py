"""The peer's requests: gates, negotiation, and the in-flight table.

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

State: reads ``role``, ``state``, ``capabilities``, ``extensions``, the
versions; writes ``version``, ``state``, ``peer_info``,
``peer_capabilities`` (negotiation), ``_in_flight``, and the per-revision
gate caches ``_accepted`` and ``_request_decoders``.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw

from .. import _jsonrpc as rpc
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._capabilities import as_dict, has_capability
from ._events import Event, Outgoing, PeerInitialized
from ._lifecycle import State, transition
from ._shared import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    _BadParams,
    _Batch,
    _declares,
    _decode_params,
    _has_meta_dict,
    _path_message,
    _progress_token,
)
from ._state import _CoreState

# Requests the one-pass path leaves to the two-pass one: each has its own flow.
_OWN_FLOW = frozenset({"initialize", "ping", "server/discover"})


class _MetaPeek(msgspec.Struct, gc=False):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class _InitializePeek(msgspec.Struct, gc=False):
    protocolVersion: Any = None


_meta_peek = msgspec.json.Decoder(_MetaPeek)
_init_peek = msgspec.json.Decoder(_InitializePeek)

# (revision, extensions, role, capabilities as sorted JSON) -> (accepted requests, one-pass decoder)
_GATES: dict[tuple[Any, ...], tuple[dict[str, MethodSpec], msgspec.json.Decoder[Any] | None]] = {}
_GATES_MAX = 256


class _Requests(_CoreState):
    """The request side of :class:`SessionCore`: what the peer asks of us."""

    # --------------------------------------------------------------- requests

    def _on_request(
        self,
        id: RequestId,
        method: str,
        params_raw: Raw | Any,
        events: list[Event],
        batch: _Batch | None,
    ) -> None:
        if id in self._in_flight:
            self._error_reply(
                events,
                batch,
                id,
                rpc.INVALID_REQUEST,
                f"Invalid request: id {id!r} is already in use by a request in progress",
            )
            return

        if method == "initialize" and self.role == "server":
            meta = self._peek_meta(params_raw)
            named = meta.get(META_PROTOCOL_VERSION) if meta is not None else None
            if self._modern_only or (isinstance(named, str) and named in self.modern_versions):
                # A stateless request: that revision has no initialize.
                self._error_reply(
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
        state = self.state
        version: str | None
        if self.role == "server" and state in (State.NEW, State.MODERN):
            meta = self._peek_meta(params_raw)
            requested = meta.get(META_PROTOCOL_VERSION) if meta is not None else None
            if requested is None:
                if method == "ping" and state is State.NEW and self.legacy_versions:
                    self._answer_ping(id, params_raw, None, events, batch)
                    return
                if state is State.NEW:
                    self._error_reply(
                        events,
                        batch,
                        id,
                        rpc.INVALID_REQUEST,
                        f"Invalid request: {method!r} before initialization; send 'initialize' first"
                        + (
                            f" (or name a protocol version in _meta[{META_PROTOCOL_VERSION!r}])"
                            if self.modern_versions
                            else ""
                        ),
                    )
                else:
                    self._error_reply(
                        events,
                        batch,
                        id,
                        rpc.INVALID_PARAMS,
                        f"Invalid params: _meta[{META_PROTOCOL_VERSION!r}] is required",
                    )
                return
            if not isinstance(requested, str) or requested not in self.modern_versions:
                self._error_reply(
                    events,
                    batch,
                    id,
                    rpc.UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                    {"supported": list(self.versions), "requested": requested},
                )
                return
            caps = meta.get(META_CLIENT_CAPABILITIES) if meta is not None else None
            if not isinstance(caps, dict):
                self._error_reply(
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
            self.version = requested
            if state is State.NEW:
                self.state = transition(self.role, state, "modern_request")
        elif self.role == "client" and state in (State.NEW, State.INITIALIZING):
            if method == "ping":
                self._answer_ping(id, params_raw, None, events, batch)
                return
            self._error_reply(
                events,
                batch,
                id,
                rpc.INVALID_REQUEST,
                f"Invalid request: {method!r} before initialization finished",
            )
            return
        else:
            version = self.version

        assert version is not None
        spec = self._accepted_requests(version).get(method)
        if spec is None:
            known = self._methods(version).get(method)
            if not self._is_peer_request(known):
                known = None
            if known is not None or method not in self.extra_methods:
                # Not ours to answer, or (``known``) its capability is not advertised.
                self._refuse_method(id, method, known, events, batch)
                return
            # A method outside the spec that this side handles: params as plain JSON.
            params = UNSET if params_raw is UNSET else rpc.decode_any(params_raw)
            if params is not UNSET and not isinstance(params, dict | list):
                self._error_reply(events, batch, id, rpc.INVALID_PARAMS, "Invalid params: expected an object")
                return
            self._accept_request(
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
            self._error_reply(
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
            self._error_reply(events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {detail}")
            return
        token = _progress_token(params)

        if method == "server/discover" and self.role == "server":
            self._reply(events, batch, id, rpc.encode_response(id, self._discover_result(version)))
            return
        self._accept_request(id, method, params, spec, version, modern, client_caps, token, events, batch)

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
        spec = self._methods(version).get("ping")
        if spec is not None:
            try:
                _decode_params(spec, params_raw)
            except _BadParams as bad:
                self._error_reply(events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {bad.detail}")
                return
        self._reply(events, batch, id, rpc.encode_response(id, {}))

    def _accepted_requests(self, version: str) -> dict[str, MethodSpec]:
        """The requests of ``version`` this side answers: registry entries of
        the peer's direction whose capability this side advertises.

        Built once per revision (the role, capabilities and extensions never
        change after construction), so the per-message gate is one lookup.
        """
        table = self._accepted.get(version)
        if table is None:
            table, self._request_decoders[version] = self._gate(version)
            self._accepted[version] = table
        return table

    def _gate(self, version: str) -> tuple[dict[str, MethodSpec], msgspec.json.Decoder[Any] | None]:
        """:meth:`_accepted_requests` and the one-pass request decoder of
        ``version``, shared by every core made alike (same role, extensions and
        advertised capabilities): a stateless Streamable HTTP request gets a
        core of its own, which then builds neither."""
        try:
            key: tuple[Any, ...] | None = (
                version,
                self.extensions,
                self.role,
                msgspec.json.encode(self.capabilities, order="sorted"),
            )
        except (TypeError, ValueError):  # capabilities that are not JSON: nothing shared
            key = None
        gate = _GATES.get(key) if key is not None else None
        if gate is None:
            table = {
                method: spec
                for method, spec in self._methods(version).items()
                if self._is_peer_request(spec)
                and (spec.capability is None or has_capability(self.capabilities, spec.capability))
            }
            params_types = {
                method: spec.params
                for method, spec in table.items()
                if method not in _OWN_FLOW and spec.params is not None and _has_meta_dict(spec.params)
            }
            gate = (table, rpc.request_decoder(params_types) if params_types else None)
            if key is not None:
                if len(_GATES) >= _GATES_MAX:
                    _GATES.clear()  # (a bound, never reached by a program with a few kinds of sessions)
                _GATES[key] = gate
        return gate

    def _is_peer_request(self, spec: MethodSpec | None) -> bool:
        """``spec`` is a JSON-RPC request the peer may send us (whatever the capabilities)."""
        return (
            spec is not None
            and spec.kind == "request"
            and not spec.input_request
            and spec.direction in (self.peer_role, "both")
        )

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
        self._error_reply(events, batch, id, rpc.METHOD_NOT_FOUND, message)

    def _peek_meta(self, params_raw: Raw | Any) -> dict[str, Any] | None:
        if params_raw is UNSET:
            return None
        try:
            return _meta_peek.decode(params_raw).meta
        except msgspec.ValidationError:
            return None

    def _discover_result(self, version: str) -> dict[str, Any]:
        result: dict[str, Any] = {
            "resultType": "complete",
            "supportedVersions": list(self.versions),
            "capabilities": _versions.capabilities_for(version, self.capabilities, "server"),
            "ttlMs": self.discover_ttl_ms,
            "cacheScope": "public",
            "_meta": {META_SERVER_INFO: self.info},
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        return result

    def _on_initialize(
        self, id: RequestId, params_raw: Any, events: list[Event], batch: _Batch | None
    ) -> None:
        if batch is not None:
            self._error_reply(
                events, batch, id, rpc.INVALID_REQUEST, "Invalid request: initialize must not be in a batch"
            )
            return
        if self.state in (State.INITIALIZING, State.READY):
            self._error_reply(
                events, batch, id, rpc.INVALID_REQUEST, "Invalid request: the session is already initialized"
            )
            return
        if not self.legacy_versions:
            self._error_reply(
                events,
                batch,
                id,
                rpc.METHOD_NOT_FOUND,
                "Method not found: initialize (this server speaks only stateless protocol versions)",
            )
            return
        if params_raw is UNSET:
            self._error_reply(
                events, batch, id, rpc.INVALID_PARAMS, "Invalid params: initialize requires params"
            )
            return
        try:
            requested = _init_peek.decode(params_raw).protocolVersion
        except msgspec.ValidationError as exc:
            self._error_reply(
                events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {_path_message(exc, '$.params')}"
            )
            return
        if not isinstance(requested, str):
            self._error_reply(
                events, batch, id, rpc.INVALID_PARAMS, "Invalid params: protocolVersion must be a string"
            )
            return
        version = requested if requested in self.legacy_versions else self.legacy_versions[0]
        spec = self._methods(version)["initialize"]
        assert spec.params is not None
        try:
            params = _versions.decoder_for(spec.params).decode(params_raw)
        except msgspec.ValidationError as exc:
            self._error_reply(
                events, batch, id, rpc.INVALID_PARAMS, f"Invalid params: {_path_message(exc, '$.params')}"
            )
            return
        self._initialize(id, version, params, events)

    def _initialize(self, id: RequestId, version: str, params: Any, events: list[Event]) -> None:
        """Answer a valid ``initialize`` (params decoded with ``version``'s type)."""
        self.version = version
        self.peer_info = as_dict(params.clientInfo)
        self.peer_capabilities = as_dict(params.capabilities)
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": _versions.capabilities_for(version, self.capabilities, "server"),
            "serverInfo": self.info,
        }
        if self.instructions is not None:
            result["instructions"] = self.instructions
        self.state = transition(self.role, self.state, "initialize_answered")
        events.append(Outgoing(rpc.encode_response(id, result), related=id, final=True))
        events.append(PeerInitialized(version, self.peer_info, self.peer_capabilities))
