"""Receiving: one framed message (or batch) from the peer in, events out.

:meth:`Receiver.receive` peeks at the envelope, hands a batch to
:class:`._batch.Batches` and dispatches a single message by kind: a request to
:class:`._requests.RequestIntake`, a response to
:class:`._responses.ResponseIntake`, a notification to
:meth:`Receiver._on_notification` here.  The one-pass decoders (envelope and
payload in one ``msgspec`` pass) sit beside the two-pass path they shortcut.

Rules it keeps:

* Ids are kept verbatim: ``1`` and ``"1"`` are different ids; ``null`` is
  never a request id and booleans are never ids.
* A malformed message is answered (-32700 with id ``null`` for bytes that are
  not JSON, nested too deeply or not UTF-8; -32600 for JSON that is not a
  valid request, with the id salvaged when there is one) or, when it is not a
  request, dropped with a :class:`ProtocolViolation` event.  Nothing ever
  answers a notification or a response, and nothing the peer sends can raise
  out of ``receive``.
* From 2026-07-28 on a client sends no responses: the replies it would owe
  are reported as :class:`ProtocolViolation` events instead.
* The one-pass paths (a request of the settled revision, the ``initialize``
  that opens a session, the answer to our only pending request) take only a
  message the two-pass path would accept as it is, with the same events and
  the same state after; anything else goes the two-pass way, which owns every
  error (``tests/core/test_one_pass_*.py`` compare the two).
* ``notifications/cancelled`` goes to the in-flight table
  (:class:`._in_flight.PeerRequests`), progress and a task's status to our
  requests' (:class:`._outgoing.OutgoingRequests`).
* Notifications before initialization are dropped, except cancellation and
  progress; ``notifications/initialized`` is taken only by a server that
  answered ``initialize``; a terminal ``notifications/tasks/status`` ends the
  progress tokens of its task.

:class:`Receiver` owns no state of its own: it reads the
:class:`._negotiation.Negotiation` (and takes its ``initialized_received``
step), and hands each message to the collaborator whose table it concerns.
"""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, Raw

from .. import _jsonrpc as rpc
from ..types import _versions
from ._batch import Batches
from ._events import Event, NotificationReceived, Outgoing, ProtocolViolation
from ._gate import RequestGate
from ._in_flight import PeerRequests
from ._lifecycle import State
from ._negotiation import Negotiation
from ._outgoing import OutgoingRequests
from ._requests import RequestIntake
from ._responses import ResponseIntake
from ._shared import (
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    _BadParams,
    _Batch,
    _declares,
    _decode_params,
    _has_meta_dict,
    _path_message,
    _progress_token,
    error_reply,
)

_WHITESPACE = b" \t\r\n"
# Server states whose requests may take the one-pass path: the revision is settled.
_ONE_PASS_STATES = frozenset({State.READY, State.MODERN})


class Receiver:
    """The receiving side of a session core: envelope, dispatch, one-pass paths."""

    __slots__ = ("_negotiation", "_gate", "_ours", "_peer", "_requests", "_responses", "batches")

    def __init__(
        self, negotiation: Negotiation, gate: RequestGate, ours: OutgoingRequests, peer: PeerRequests
    ) -> None:
        self._negotiation = negotiation
        self._gate = gate
        self._ours = ours
        self._peer = peer
        self._requests = RequestIntake(negotiation, gate, peer)
        self._responses = ResponseIntake(negotiation, ours)
        #: JSON-RPC batches, received through this receiver.
        self.batches = Batches(negotiation)

    def receive(self, data: bytes) -> list[Event]:
        """Process one framed message (or batch) from the peer.

        Never raises for anything the peer sent.
        """
        neg = self._negotiation
        events: list[Event] = []
        if neg.state is State.CLOSED:
            return events
        i = 0
        n = len(data)
        while i < n and data[i] in _WHITESPACE:
            i += 1
        try:
            if not data.isascii():
                # MCP messages are UTF-8: the decoder checks only the strings it
                # decodes, not those it skips (an unknown member's), so check all.
                data.decode("utf-8")
            if i < n and data[i] == 0x5B:  # "["
                self.batches.receive_batch(self, data, events)
            else:
                self.receive_one(data, events, None)
        except (RecursionError, UnicodeDecodeError) as exc:
            # Nesting deeper than the decoder goes, or bytes that are not UTF-8:
            # not valid JSON text.
            what = "nested too deeply" if isinstance(exc, RecursionError) else "not valid UTF-8"
            events = [
                Outgoing(
                    rpc.encode_error(None, rpc.PARSE_ERROR, f"Parse error: the message is {what}"), final=True
                )
            ]
        return self.silent_client(events)

    def framing_error(self, message: str) -> list[Event]:
        """The transport could not deliver a message whole (e.g. it was too large)."""
        return self.silent_client(
            [Outgoing(rpc.encode_error(None, rpc.INVALID_REQUEST, message), final=True)]
        )

    def silent_client(self, events: list[Event]) -> list[Event]:
        """From 2026-07-28 on, "the client MUST NOT send JSON-RPC responses": the replies
        the core would owe (a parse error for a junk event, an error for a stray request)
        are reported as :class:`ProtocolViolation` instead of being sent."""
        neg = self._negotiation
        if neg.role != "client" or neg.version is None or not _versions.is_stateless(neg.version):
            return events
        return [
            ProtocolViolation(f"not answered (a client sends no responses at {neg.version})", e.data)
            if isinstance(e, Outgoing)
            else e
            for e in events
        ]

    def receive_one(self, data: bytes | Raw, events: list[Event], batch: _Batch | None) -> None:
        neg = self._negotiation
        if batch is None:
            # Requests and notifications name their method, responses do not (outside
            # their payload): one scan picks the one-pass decoder worth trying, so a
            # message is not parsed by a decoder that must refuse it.  Only a hint: the
            # two-pass path below takes whatever the one-pass ones pass on.
            named = b'"method"' in data
            if neg.role == "server" and named:
                state = neg.state
                if state in _ONE_PASS_STATES and self._receive_known_request(data, events):
                    return
                if state is State.NEW and self._receive_initialize(data, events):
                    return
            if not named and self._receive_expected_result(data, events):
                return
        try:
            env = rpc.decode_envelope(data)
        except msgspec.ValidationError as exc:
            try:
                obj = rpc.decode_any(data)
            except msgspec.DecodeError as parse_exc:
                # msgspec checks the shape before it reaches trailing garbage.
                error_reply(events, batch, None, rpc.PARSE_ERROR, f"Parse error: {parse_exc}")
                return
            if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
                reason = f"dropped an invalid response: {_path_message(exc, '$')}"
                events.append(ProtocolViolation(reason, bytes(data)))
                return
            error_reply(
                events,
                batch,
                rpc.salvage_id(data),
                rpc.INVALID_REQUEST,
                f"Invalid request: {_path_message(exc, '$')}",
            )
            return
        except msgspec.DecodeError as exc:
            error_reply(events, batch, None, rpc.PARSE_ERROR, f"Parse error: {exc}")
            return

        method = env.method
        if method is not UNSET:
            if env.id is UNSET:
                if env.jsonrpc != "2.0" or env.result is not UNSET or env.error is not UNSET:
                    events.append(ProtocolViolation("dropped an invalid notification", bytes(data)))
                    return
                self._on_notification(method, env.params, events)
                return
            if env.id is None:
                error_reply(
                    events, batch, None, rpc.INVALID_REQUEST, "Invalid request: the id must not be null"
                )
                return
            if env.jsonrpc != "2.0":
                error_reply(
                    events, batch, env.id, rpc.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"'
                )
                return
            if env.result is not UNSET or env.error is not UNSET:
                error_reply(
                    events,
                    batch,
                    env.id,
                    rpc.INVALID_REQUEST,
                    "Invalid request: a request has no result or error member",
                )
                return
            self._requests.on_request(env.id, method, env.params, events, batch)
            return

        if env.id is UNSET or (env.result is UNSET) == (env.error is UNSET) or env.jsonrpc != "2.0":
            if env.id is UNSET and env.result is UNSET and env.error is UNSET:
                # Not a response either: answer as an invalid request.
                error_reply(events, batch, None, rpc.INVALID_REQUEST, "Invalid request: no method")
                return
            events.append(ProtocolViolation("dropped an invalid response", bytes(data)))
            return
        self._responses.on_response(env.id, env.result, env.error, events, bytes(data))

    def _plain_request(self, env: Any) -> bool:
        """A one-pass decoded envelope is a request as it should be: "2.0", a fresh
        non-null id, no ``result``/``error`` (else the two-pass path says what is wrong)."""
        id = env.id
        return (
            id is not UNSET
            and id is not None
            and env.jsonrpc == "2.0"
            and env.result is UNSET
            and env.error is UNSET
            and id not in self._peer
        )

    def _receive_known_request(self, data: bytes | Raw, events: list[Event]) -> bool:
        """The one-pass path for a request of the settled revision.

        The envelope and the params are decoded together with
        :func:`rpc.request_decoder` over the requests this side answers.  Only
        a well-formed request that the two-pass path would accept as it is is
        handled here (a fresh id, valid params, for a stateless revision
        ``_meta`` naming this revision and an object of capabilities);
        anything else (``False``) goes through the two-pass path, which owns
        every error, so no check is skipped.
        """
        neg = self._negotiation
        version = neg.version
        if version is None:
            return False
        decoder = self._gate.decoder(version)
        if decoder is None:
            return False
        try:
            env = decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False
        id = env.id
        if not self._plain_request(env):
            return False
        method = rpc.request_method(env)
        spec = self._gate.accepted(version)[method]
        params = env.params
        modern = neg.state is State.MODERN
        caps: dict[str, Any] | None = None
        if params is UNSET:
            if modern or spec.params_required:
                return False
            params = None
        elif modern:
            meta = params.meta
            if meta is UNSET or meta.get(META_PROTOCOL_VERSION) != version:
                return False
            caps = meta.get(META_CLIENT_CAPABILITIES)
            if not isinstance(caps, dict):
                return False
            if spec.extension is not None and not _declares(caps, spec.extension):
                return False
        self._peer.admit(
            id, method, params, spec, version, modern, caps, _progress_token(params), events, None
        )
        return True

    def _receive_initialize(self, data: bytes | Raw, events: list[Event]) -> bool:
        """The one-pass path for the ``initialize`` that opens a session.

        Decoded with the params type of this side's newest handshake revision;
        taken only when that is the revision the two-pass path would pick (the
        client asks for it, or for one this side does not know) and ``_meta``
        names no stateless revision. Anything else goes the two-pass way.
        """
        neg = self._negotiation
        if not neg.legacy_versions or neg.modern_only:
            return False
        version = neg.legacy_versions[0]
        spec = neg.methods(version)["initialize"]
        if spec.params is None or not _has_meta_dict(spec.params):
            return False
        try:
            env = rpc.request_decoder({"initialize": spec.params}).decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False
        id, params = env.id, env.params
        if not self._plain_request(env) or params is UNSET:
            return False
        meta = params.meta
        named = meta.get(META_PROTOCOL_VERSION) if meta is not UNSET else None
        if isinstance(named, str) and named in neg.modern_versions:
            return False
        requested = params.protocolVersion
        if not isinstance(requested, str):
            return False
        if requested != version and requested in neg.legacy_versions:
            return False  # an older revision: its own params type
        self._requests.initialize(id, version, params, events)
        return True

    def _receive_expected_result(self, data: bytes | Raw, events: list[Event]) -> bool:
        """The one-pass path for the answer to our only pending request.

        The envelope and the result are decoded together with
        :func:`rpc.response_decoder` of the type :meth:`_result_type` would pick.
        Only a well-formed response to that request with a valid result is
        handled here; anything else (``False``) goes through the two-pass path,
        which owns every error message, so no check is skipped.
        """
        only = self._ours.only()
        if only is None:  # (none pending, or several)
            return False
        id, pending = only
        expected = self._responses.expected_result(pending)
        if expected is None:
            return False
        result_type, tags = expected
        try:
            env = rpc.response_decoder(result_type).decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False
        result = env.result
        if (
            result is UNSET
            or env.error is not UNSET
            or env.method is not UNSET
            or env.jsonrpc != "2.0"
            or type(env.id) is not type(id)
            or env.id != id
            or (tags and result.resultType in tags)
        ):
            return False
        self._ours.pop(id)
        self._responses.deliver_result(id, pending, result, events)
        return True

    # ---------------------------------------------------------- notifications

    def _on_notification(self, method: str, params_raw: Any, events: list[Event]) -> None:
        neg = self._negotiation
        version = neg.version
        if version is None:
            if method == "notifications/cancelled" or method == "notifications/progress":
                version = neg.versions[0]
            else:
                events.append(
                    ProtocolViolation(f"dropped notification {method!r} received before initialization")
                )
                return
        spec = neg.methods(version).get(method)
        if spec is None or spec.kind != "notification" or spec.direction not in (neg.peer_role, "both"):
            if method in neg.extra_methods:
                params = None if params_raw is UNSET else rpc.decode_any(params_raw)
                events.append(NotificationReceived(method, params, None, version))
                return
            events.append(ProtocolViolation(f"dropped unknown notification {method!r}"))
            return
        try:
            params = _decode_params(spec, params_raw)
        except _BadParams as bad:
            if bad.missing:
                events.append(ProtocolViolation(f"dropped {method!r}: params are required"))
            else:
                message = f"dropped {method!r}: invalid params: {bad.detail}"
                events.append(ProtocolViolation(message, bytes(params_raw)))
            return

        if method == "notifications/cancelled":
            self._peer.on_cancelled(params, events)
            return
        if method == "notifications/progress":
            self._ours.on_progress(params, events, spec, version)
            return
        if method == "notifications/tasks/status":
            self._ours.task_status(params)
        if method == "notifications/initialized":
            if neg.role == "server" and neg.state is State.INITIALIZING:
                neg.advance("initialized_received")
            else:
                events.append(ProtocolViolation("dropped an unexpected notifications/initialized"))
                return
        events.append(NotificationReceived(method, params, spec, version))
