"""The sans-IO session core: every protocol decision, no I/O, no event loop.

``SessionCore`` turns incoming bytes into events and outgoing intentions into
bytes.  It owns request-id allocation, the pending and in-flight tables,
lifecycle and version negotiation, capability gates, batching, progress and
cancellation bookkeeping, and the mapping of every malformed input to the
JSON-RPC error the spec prescribes.

Rules it keeps (see also ``_lifecycle.py``):

* Ids are kept verbatim: ``1`` and ``"1"`` are different ids; ``null`` is
  never a request id and booleans are never ids.  Our own ids come from an
  integer counter and never repeat within a session.
* A malformed message is answered (-32700 with id ``null`` for bytes that are
  not JSON, -32600 for JSON that is not a valid request, -32601 for an unknown
  method or one whose capability we did not advertise, -32602 for params that
  do not fit the revision's types) or, when it is not a request, dropped with
  a :class:`ProtocolViolation` event.  Nothing ever answers a notification or
  a response, and nothing the peer sends can raise out of ``receive``.
* A request id that is still in flight may not be reused by the peer.
* ``notifications/cancelled`` for an in-flight request (never ``initialize``)
  marks it cancelled: no response will be produced for it.  Unknown or
  finished ids are ignored.
* Progress is reported only for requests that carried a progress token, must
  increase, and stops when the request is answered.
* Batches (JSON arrays) are accepted only in revisions that have them
  (2025-03-26); the answers to a batch go back as one array, and a batch of
  notifications gets no reply at all.
* Extensions (``types.ext_tasks``) are active when this side lists them under
  ``capabilities.extensions``: their methods join the registry of the
  stateless revisions.  A request for an extension method from a client that
  did not declare the extension in that request's capabilities gets -32021
  naming it, and a result of an extension's type (``resultType: "task"``) is
  never sent to such a client.
* A standard capability the protocol removed is not advertised in the
  revisions after its removal (``types._versions.capabilities_for``): the
  2025-11-25 ``tasks`` capability stays out of ``server/discover`` and of a
  2026-07-28 client's per-request capabilities.
* A progress token of a request answered with a 2025-11-25
  ``CreateTaskResult`` stays valid for the task: its progress arrives as a
  ``notifications/progress`` notification (until the task's terminal
  ``notifications/tasks/status``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Collection, Sequence
from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw

from .. import _jsonrpc as rpc
from .._exceptions import LocalProtocolError, McpError, RemoteProtocolError
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._capabilities import as_dict, has_capability
from ._events import (
    CancelRequested,
    Event,
    NotificationReceived,
    Outgoing,
    PeerInitialized,
    ProgressReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
)
from ._lifecycle import State, transition

__all__ = ["Role", "SessionCore"]

Role = Literal["client", "server"]

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"

_WHITESPACE = b" \t\r\n"
# Server states whose requests may take the one-pass path: the revision is settled.
_ONE_PASS_STATES = frozenset({State.READY, State.MODERN})
# Requests the one-pass path leaves to the two-pass one: each has its own flow.
_OWN_FLOW = frozenset({"initialize", "ping", "server/discover"})
_NOT_CANCELLABLE = frozenset({"initialize"})
_TERMINAL_TASK_STATUSES = frozenset({"completed", "failed", "cancelled"})
_MAX_TASK_TOKENS = 1024


class _MetaPeek(msgspec.Struct, gc=False):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


class _InitializePeek(msgspec.Struct, gc=False):
    protocolVersion: Any = None


class _ResultTypePeek(msgspec.Struct, gc=False):
    resultType: Any = "complete"


class _TaskPeek(msgspec.Struct, gc=False):
    task: Any = UNSET


_meta_peek = msgspec.json.Decoder(_MetaPeek)
_task_peek = msgspec.json.Decoder(_TaskPeek)
_init_peek = msgspec.json.Decoder(_InitializePeek)
_result_type_peek = msgspec.json.Decoder(_ResultTypePeek)


class _Batch:
    """Answers collected for one incoming batch."""

    __slots__ = ("parts", "remaining")

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.remaining = 0


class _InFlight:
    """A request we received and have not answered yet."""

    __slots__ = (
        "method", "token", "last_progress", "cancelled", "batch", "version", "modern", "client_caps"
    )

    def __init__(
        self,
        method: str,
        token: int | str | None,
        batch: _Batch | None,
        version: str,
        modern: bool,
        client_caps: dict[str, Any] | None = None,
    ) -> None:
        self.method = method
        self.token = token
        self.last_progress: float | None = None
        self.cancelled = False
        self.batch = batch
        self.version = version
        self.modern = modern
        self.client_caps = client_caps


class _Pending:
    """A request we sent and have no answer for yet."""

    __slots__ = ("method", "spec", "token", "last_progress", "task")

    def __init__(
        self, method: str, spec: MethodSpec | None, token: RequestId | None, task: bool
    ) -> None:
        self.method = method
        self.spec = spec
        self.token = token
        self.last_progress: float | None = None
        self.task = task


class _BadParams(Exception):
    def __init__(self, missing: bool, detail: str = "") -> None:
        self.missing = missing
        self.detail = detail


def _decode_params(spec: MethodSpec, params_raw: Any) -> Any:
    """The params Struct of a message (``None`` when absent and optional).

    Raises:
        _BadParams: required params are missing, or they fail the type.
    """
    if params_raw is UNSET:
        if spec.params_required:
            raise _BadParams(missing=True)
        return None
    if spec.params is None:
        return None
    try:
        return _versions.decoder_for(spec.params).decode(params_raw)
    except msgspec.ValidationError as exc:
        raise _BadParams(missing=False, detail=_path_message(exc, "$.params")) from None


def _path_message(exc: msgspec.ValidationError, where: str) -> str:
    """msgspec's error text with its path rooted at ``where`` (named even at the top level)."""
    return _versions.error_message(exc, where)


def _has_plain_field(struct: type, name: str) -> bool:
    """``struct`` has a field ``name`` that is also its name on the wire."""
    fields = getattr(struct, "__struct_fields__", ())
    return name in fields and struct.__struct_encode_fields__[fields.index(name)] == name


def _progress_token(params: Any) -> int | str | None:
    """The valid ``_meta.progressToken`` of decoded params, if any."""
    meta = getattr(params, "meta", None)
    if isinstance(meta, dict):
        candidate = meta.get("progressToken")
        if _valid_token(candidate):
            return candidate
    return None


# (revision, extensions, role, capabilities as sorted JSON) -> (accepted requests, one-pass decoder)
_GATES: dict[tuple[Any, ...], tuple[dict[str, MethodSpec], msgspec.json.Decoder[Any] | None]] = {}
_GATES_MAX = 256


@functools.lru_cache(maxsize=64)
def _version_sets(versions: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """All, legacy (handshake) and modern (stateless) revisions of ``versions``, checked."""
    for v in versions:
        if v not in _versions.SUPPORTED_VERSIONS:
            raise ValueError(
                f"unknown protocol version {v!r}; known: {', '.join(_versions.SUPPORTED_VERSIONS)}"
            )
    if not versions:
        raise ValueError("at least one protocol version is required")
    return (
        versions,
        tuple(v for v in versions if not _versions.is_stateless(v)),
        tuple(v for v in versions if _versions.is_stateless(v)),
    )


@functools.lru_cache(maxsize=64)
def _known_extensions(declared: tuple[str, ...]) -> frozenset[str]:
    return _versions.known_extensions(declared)


_EMPTY: frozenset[str] = frozenset()


def _frozen(methods: Collection[str]) -> frozenset[str]:
    if isinstance(methods, frozenset):
        return methods
    return frozenset(methods) if methods else _EMPTY


def _has_meta_dict(params_type: type) -> bool:
    """``params_type`` keeps ``_meta`` as a plain dict in ``.meta`` (what the
    ``_meta`` peek of the two-pass path reads)."""
    for field in msgspec.structs.fields(params_type):
        if field.name == "meta":
            return field.encode_name == "_meta" and field.type in (
                dict[str, Any],
                dict[str, Any] | msgspec.UnsetType,
            )
    return False


def _valid_token(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


class SessionCore:
    """One side of one MCP session, without I/O.

    Args:
        role: ``"client"`` or ``"server"``.
        info: This side's ``Implementation`` (``{"name": ..., "version": ...}``).
        capabilities: The capabilities this side advertises (dict or Struct).
        versions: Protocol revisions this side accepts, newest first.
        instructions: Server only: the instructions returned by ``initialize``
            and ``server/discover``.
        extra_methods: Methods outside the spec that this side handles; their
            params are delivered as plain JSON values.
        discover_ttl_ms: Server only: ``ttlMs`` of ``server/discover`` results.
    """

    def __init__(
        self,
        role: Role,
        *,
        info: Any,
        capabilities: Any = None,
        versions: Sequence[str] | None = None,
        instructions: str | None = None,
        extra_methods: Collection[str] = (),
        discover_ttl_ms: int = 0,
    ) -> None:
        if role not in ("client", "server"):
            raise ValueError(f"role must be 'client' or 'server', not {role!r}")
        self.role: Role = role
        self.peer_role: Role = "server" if role == "client" else "client"
        self.info = as_dict(info)
        self.capabilities = as_dict(capabilities)
        # (shared between sessions made alike: an idle session stays small)
        self.versions, self.legacy_versions, self.modern_versions = _version_sets(
            tuple(versions) if versions is not None else _versions.SUPPORTED_VERSIONS
        )
        self.instructions = instructions
        self.extra_methods = _frozen(extra_methods)
        self.discover_ttl_ms = discover_ttl_ms
        declared = self.capabilities.get("extensions")
        #: The known extensions this side declares (their methods are in the registry).
        self.extensions = _known_extensions(tuple(declared) if isinstance(declared, dict) else ())

        self.state = State.NEW
        self._modern_only = False
        #: The negotiated revision (``None`` until the era is settled).
        self.version: str | None = None
        self.peer_info: dict[str, Any] = {}
        self.peer_capabilities: dict[str, Any] = {}
        self.peer_instructions: str | None = None

        self._next_id = 0
        self._pending: dict[RequestId, _Pending] = {}
        self._progress_tokens: dict[RequestId, RequestId] = {}
        self._in_flight: dict[RequestId, _InFlight] = {}
        # progress token -> task id, for requests answered with a 2025-11-25 task
        self._task_tokens: dict[RequestId, str] = {}
        # revision -> the requests this side answers in it (see _accepted_requests)
        self._accepted: dict[str, dict[str, MethodSpec]] = {}
        self._request_decoders: dict[str, msgspec.json.Decoder[Any] | None] = {}

    # ------------------------------------------------------------------ state

    @property
    def closed(self) -> bool:
        return self.state is State.CLOSED

    @property
    def pending_ids(self) -> list[RequestId]:
        """Ids of our requests still waiting for an answer."""
        return list(self._pending)

    @property
    def in_flight_ids(self) -> list[RequestId]:
        """Ids of the peer's requests we have not answered."""
        return list(self._in_flight)

    def close(self) -> list[RequestId]:
        """End the session; returns the ids of our requests that will never be answered."""
        self.state = State.CLOSED
        lost = list(self._pending)
        self._pending.clear()
        self._progress_tokens.clear()
        self._in_flight.clear()
        self._task_tokens.clear()
        return lost

    def use_modern(
        self,
        version: str,
        *,
        server_capabilities: Any = None,
        server_info: Any = None,
        instructions: str | None = None,
    ) -> PeerInitialized:
        """Client: speak a stateless (2026-07-28+) revision with this server."""
        self._require_role("client")
        if version not in self.modern_versions:
            raise LocalProtocolError(
                f"{version!r} is not a stateless protocol version this client accepts "
                f"({', '.join(self.modern_versions) or 'none'})"
            )
        if self.state is not State.MODERN:
            self.state = transition(self.role, self.state, "use_modern")
        self.version = version
        self.peer_capabilities = as_dict(server_capabilities)
        self.peer_info = as_dict(server_info)
        self.peer_instructions = instructions
        return PeerInitialized(version, self.peer_info, self.peer_capabilities, instructions)

    def expect_modern(self) -> None:
        """Server: every request on this session must be a stateless one (a
        transport that saw a stateless version in the request's headers): a
        request without ``_meta`` naming its version gets -32602, and
        ``initialize`` -32601."""
        self._require_role("server")
        if not self.modern_versions:
            raise LocalProtocolError("this server accepts no stateless protocol version")
        self.state = transition(self.role, self.state, "modern_request")
        self._modern_only = True

    def assume_initialized(self, version: str) -> None:
        """Server: serve ``version`` without an ``initialize`` handshake (a
        transport with no sessions, where each request arrives on a fresh one).
        The client's capabilities and info are unknown (empty)."""
        self._require_role("server")
        if version not in self.legacy_versions:
            raise LocalProtocolError(
                f"{version!r} is not a handshake-era protocol version this server accepts "
                f"({', '.join(self.legacy_versions) or 'none'})"
            )
        self.state = transition(self.role, self.state, "assume_initialized")
        self.version = version

    def reset_era(self) -> None:
        """Client: forget a modern probe (the server turned out to be legacy)."""
        self._require_role("client")
        self.state = transition(self.role, self.state, "reset_era")
        self.version = None
        self.peer_capabilities = {}
        self.peer_info = {}

    def _require_role(self, role: Role) -> None:
        if self.role != role:
            raise LocalProtocolError(f"only a {role} can do this")

    def _methods(self, version: str | None) -> dict[str, MethodSpec]:
        if version is None:
            version = self.legacy_versions[0] if self.legacy_versions else self.versions[0]
        return _versions.methods_for(version, self.extensions)

    # ---------------------------------------------------------------- receive

    def receive(self, data: bytes) -> list[Event]:
        """Process one framed message (or batch) from the peer.

        Never raises for anything the peer sent.
        """
        events: list[Event] = []
        if self.state is State.CLOSED:
            return events
        i = 0
        n = len(data)
        while i < n and data[i] in _WHITESPACE:
            i += 1
        try:
            if i < n and data[i] == 0x5B:  # "["
                self._receive_batch(data, events)
            else:
                self._receive_one(data, events, None)
        except (RecursionError, UnicodeDecodeError) as exc:
            # Nesting deeper than the decoder goes, or bytes that are not UTF-8
            # inside a part decoded late (``_meta``, params): not valid JSON text.
            what = "nested too deeply" if isinstance(exc, RecursionError) else "not valid UTF-8"
            events = [Outgoing(rpc.encode_error(None, rpc.PARSE_ERROR, f"Parse error: the message is {what}"), final=True)]
        return self._silent_client(events)

    def framing_error(self, message: str) -> list[Event]:
        """The transport could not deliver a message whole (e.g. it was too large)."""
        return self._silent_client([Outgoing(rpc.encode_error(None, rpc.INVALID_REQUEST, message), final=True)])

    def _silent_client(self, events: list[Event]) -> list[Event]:
        """From 2026-07-28 on, "the client MUST NOT send JSON-RPC responses": the replies
        the core would owe (a parse error for a junk event, an error for a stray request)
        are reported as :class:`ProtocolViolation` instead of being sent."""
        if self.role != "client" or self.version is None or not _versions.is_stateless(self.version):
            return events
        return [
            ProtocolViolation(f"not answered (a client sends no responses at {self.version})", e.data)
            if isinstance(e, Outgoing)
            else e
            for e in events
        ]

    def _batching_allowed(self) -> bool:
        return self.version is not None and _versions.supports_batching(self.version)

    def _receive_batch(self, data: bytes, events: list[Event]) -> None:
        try:
            items = rpc.decode_batch(data)
        except msgspec.DecodeError as exc:
            events.append(
                Outgoing(rpc.encode_error(None, rpc.PARSE_ERROR, f"Parse error: {exc}"), final=True)
            )
            return
        if not self._batching_allowed():
            where = f"protocol version {self.version}" if self.version else "before initialization"
            events.append(
                Outgoing(
                    rpc.encode_error(
                        None, rpc.INVALID_REQUEST, f"Invalid request: JSON-RPC batches are not allowed {where}"
                    ),
                    final=True,
                )
            )
            return
        if not items:
            events.append(
                Outgoing(
                    rpc.encode_error(None, rpc.INVALID_REQUEST, "Invalid request: empty batch"), final=True
                )
            )
            return
        batch = _Batch()
        for raw in items:
            self._receive_one(raw, events, batch)
        if batch.remaining == 0:
            self._flush_batch(batch, events)

    def _flush_batch(self, batch: _Batch, events: list[Event]) -> None:
        if batch.parts:
            events.append(Outgoing(b"[" + b",".join(batch.parts) + b"]", final=True))

    def _reply(
        self, events: list[Event], batch: _Batch | None, id: RequestId | None, data: bytes
    ) -> None:
        if batch is not None:
            batch.parts.append(data)
        else:
            events.append(Outgoing(data, related=id, final=True))

    def _error_reply(
        self,
        events: list[Event],
        batch: _Batch | None,
        id: RequestId | None,
        code: int,
        message: str,
        data: Any = None,
    ) -> None:
        self._reply(events, batch, id, rpc.encode_error(id, code, message, data))

    def _receive_one(self, data: bytes | Raw, events: list[Event], batch: _Batch | None) -> None:
        if batch is None:
            # Requests and notifications name their method, responses do not (outside
            # their payload): one scan picks the one-pass decoder worth trying, so a
            # message is not parsed by a decoder that must refuse it.  Only a hint: the
            # two-pass path below takes whatever the one-pass ones pass on.
            named = b'"method"' in data
            if self.role == "server" and named:
                state = self.state
                if state in _ONE_PASS_STATES and self._receive_known_request(data, events):
                    return
                if state is State.NEW and self._receive_initialize(data, events):
                    return
            if not named and len(self._pending) == 1 and self._receive_expected_result(data, events):
                return
        try:
            env = rpc.decode_envelope(data)
        except msgspec.ValidationError as exc:
            try:
                obj = rpc.decode_any(data)
            except msgspec.DecodeError as parse_exc:
                # msgspec checks the shape before it reaches trailing garbage.
                self._error_reply(events, batch, None, rpc.PARSE_ERROR, f"Parse error: {parse_exc}")
                return
            if isinstance(obj, dict) and "method" not in obj and ("result" in obj or "error" in obj):
                reason = f"dropped an invalid response: {_path_message(exc, '$')}"
                events.append(ProtocolViolation(reason, bytes(data)))
                return
            self._error_reply(
                events,
                batch,
                rpc.salvage_id(data),
                rpc.INVALID_REQUEST,
                f"Invalid request: {_path_message(exc, '$')}",
            )
            return
        except msgspec.DecodeError as exc:
            self._error_reply(events, batch, None, rpc.PARSE_ERROR, f"Parse error: {exc}")
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
                self._error_reply(
                    events, batch, None, rpc.INVALID_REQUEST, "Invalid request: the id must not be null"
                )
                return
            if env.jsonrpc != "2.0":
                self._error_reply(
                    events, batch, env.id, rpc.INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"'
                )
                return
            if env.result is not UNSET or env.error is not UNSET:
                self._error_reply(
                    events,
                    batch,
                    env.id,
                    rpc.INVALID_REQUEST,
                    "Invalid request: a request has no result or error member",
                )
                return
            self._on_request(env.id, method, env.params, events, batch)
            return

        if env.id is UNSET or (env.result is UNSET) == (env.error is UNSET) or env.jsonrpc != "2.0":
            if env.id is UNSET and env.result is UNSET and env.error is UNSET:
                # Not a response either: answer as an invalid request.
                self._error_reply(
                    events, batch, None, rpc.INVALID_REQUEST, "Invalid request: no method"
                )
                return
            events.append(ProtocolViolation("dropped an invalid response", bytes(data)))
            return
        self._on_response(env.id, env.result, env.error, events, bytes(data))

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
                self._error_reply(
                    events, batch, id, rpc.INVALID_PARAMS, "Invalid params: expected an object"
                )
                return
            self._accept_request(
                id, method, None if params is UNSET else params, None, version, modern,
                client_caps, None, events, batch,
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
        self._accept_request(
            id, method, params, spec, version, modern, client_caps, token, events, batch
        )

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
                version, self.extensions, self.role, msgspec.json.encode(self.capabilities, order="sorted")
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

    def _accept_request(
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
        if batch is not None:
            batch.remaining += 1
        self._in_flight[id] = _InFlight(method, token, batch, version, modern, client_caps)
        events.append(RequestReceived(id, method, params, spec, version, token, client_caps))

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
            self._error_reply(events, batch, id, rpc.INVALID_PARAMS, "Invalid params: initialize requires params")
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

    # ---------------------------------------------------------- notifications

    def _on_notification(self, method: str, params_raw: Any, events: list[Event]) -> None:
        version = self.version
        if version is None:
            if method == "notifications/cancelled" or method == "notifications/progress":
                version = self.versions[0]
            else:
                events.append(
                    ProtocolViolation(f"dropped notification {method!r} received before initialization")
                )
                return
        spec = self._methods(version).get(method)
        if spec is None or spec.kind != "notification" or spec.direction not in (self.peer_role, "both"):
            if method in self.extra_methods:
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
            request_id = getattr(params, "requestId", UNSET)
            entry = self._in_flight.get(request_id) if request_id is not UNSET else None
            if entry is not None and entry.method not in _NOT_CANCELLABLE and not entry.cancelled:
                entry.cancelled = True
                reason = getattr(params, "reason", None)
                events.append(CancelRequested(request_id, reason if isinstance(reason, str) else None))
            return
        if method == "notifications/progress":
            self._on_progress(params, events, spec, version)
            return
        if method == "notifications/tasks/status" and self._task_tokens:
            if getattr(params, "status", None) in _TERMINAL_TASK_STATUSES:
                task_id = getattr(params, "taskId", None)
                for token in [t for t, tid in self._task_tokens.items() if tid == task_id]:
                    del self._task_tokens[token]
        if method == "notifications/initialized":
            if self.role == "server" and self.state is State.INITIALIZING:
                self.state = transition(self.role, self.state, "initialized_received")
            else:
                events.append(ProtocolViolation("dropped an unexpected notifications/initialized"))
                return
        events.append(NotificationReceived(method, params, spec, version))

    def _on_progress(
        self, params: Any, events: list[Event], spec: MethodSpec, version: str
    ) -> None:
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
        events.append(
            ProgressReceived(
                request_id,
                progress,
                None if total is None else float(total),
                message if isinstance(message, str) else None,
            )
        )

    # -------------------------------------------------------------- responses

    def _on_response(
        self, id: Any, result_raw: Any, error_raw: Any, events: list[Event], data: bytes
    ) -> None:
        if id is None:
            # An error the peer could not attribute to a request (e.g. a parse error).
            events.append(ProtocolViolation("the peer reported an error without an id", data))
            return
        pending = self._pending.pop(id, None)
        if pending is None:
            events.append(ProtocolViolation(f"dropped a response for unknown id {id!r}", data))
            return
        if pending.token is not None:
            self._progress_tokens.pop(pending.token, None)
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
            if method == "initialize":
                self.state = transition(self.role, self.state, "initialize_failed")
            events.append(ResponseReceived(id, method, error=error))
            return
        spec = pending.spec
        if spec is None or not spec.results:
            events.append(ResponseReceived(id, method, result=rpc.decode_any(result_raw)))
            return
        result_type = self._result_type(pending, spec, result_raw)
        try:
            result = _versions.decoder_for(result_type).decode(result_raw)
        except msgspec.ValidationError as exc:
            if method == "initialize":
                self.state = transition(self.role, self.state, "initialize_failed")
            events.append(
                ResponseReceived(
                    id,
                    method,
                    error=RemoteProtocolError(
                        f"invalid result for {method}: {_path_message(exc, '$.result')}"
                    ),
                )
            )
            return
        self._deliver_result(id, pending, result, events)

    def _deliver_result(self, id: Any, pending: _Pending, result: Any, events: list[Event]) -> None:
        """A validated result for ``pending`` (already popped): the lifecycle and task
        bookkeeping it implies, then its event."""
        method = pending.method
        if method == "initialize":
            version = result.protocolVersion
            if version not in self.legacy_versions:
                self.state = transition(self.role, self.state, "initialize_failed")
                events.append(
                    ResponseReceived(
                        id,
                        method,
                        error=RemoteProtocolError(
                            f"the server answered protocol version {version!r}, which this client "
                            f"does not support (supported: {', '.join(self.legacy_versions)})"
                        ),
                    )
                )
                return
            self.version = version
            self.peer_info = as_dict(result.serverInfo)
            self.peer_capabilities = as_dict(result.capabilities)
            instructions = getattr(result, "instructions", UNSET)
            self.peer_instructions = instructions if isinstance(instructions, str) else None
            self.state = transition(self.role, self.state, "initialize_accepted")
            events.append(ResponseReceived(id, method, result=result))
            events.append(
                PeerInitialized(version, self.peer_info, self.peer_capabilities, self.peer_instructions)
            )
            return
        is_task = type(result).__name__ == "CreateTaskResult"
        if pending.task and pending.token is not None and is_task:
            # The request now runs as a task: keep its progress token for the task's progress.
            task_id = getattr(getattr(result, "task", None), "taskId", None)
            if isinstance(task_id, str):
                if len(self._task_tokens) >= _MAX_TASK_TOKENS:
                    del self._task_tokens[next(iter(self._task_tokens))]
                self._task_tokens[pending.token] = task_id
        events.append(ResponseReceived(id, method, result=result))

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
            and id not in self._in_flight
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
        version = self.version
        if version is None:
            return False
        if version not in self._request_decoders:
            self._accepted_requests(version)
        decoder = self._request_decoders[version]
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
        spec = self._accepted_requests(version)[method]
        params = env.params
        modern = self.state is State.MODERN
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
        self._accept_request(
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
        if not self.legacy_versions or self._modern_only:
            return False
        version = self.legacy_versions[0]
        spec = self._methods(version)["initialize"]
        if spec.params is None or not _has_meta_dict(spec.params):
            return False
        try:
            env = rpc.request_decoder({"initialize": spec.params}).decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False
        id, params = env.id, env.params
        if (
            not self._plain_request(env)
            or params is UNSET
        ):
            return False
        meta = params.meta
        named = meta.get(META_PROTOCOL_VERSION) if meta is not UNSET else None
        if isinstance(named, str) and named in self.modern_versions:
            return False
        requested = params.protocolVersion
        if not isinstance(requested, str):
            return False
        if requested != version and requested in self.legacy_versions:
            return False  # an older revision: its own params type
        self._initialize(id, version, params, events)
        return True

    def _receive_expected_result(self, data: bytes | Raw, events: list[Event]) -> bool:
        """The one-pass path for the answer to our only pending request.

        The envelope and the result are decoded together with
        :func:`rpc.response_decoder` of the type :meth:`_result_type` would pick.
        Only a well-formed response to that request with a valid result is
        handled here; anything else (``False``) goes through the two-pass path,
        which owns every error message, so no check is skipped.
        """
        ((id, pending),) = self._pending.items()
        expected = self._expected_result(pending)
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
        del self._pending[id]
        if pending.token is not None:
            self._progress_tokens.pop(pending.token, None)
        self._deliver_result(id, pending, result, events)
        return True

    def _expected_result(self, pending: _Pending) -> tuple[type, frozenset[str]] | None:
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
        self, method: str, params: Any = None, *, progress: bool = False
    ) -> tuple[RequestId, bytes]:
        """Prepare a request.

        Args:
            method: The method name.
            params: A params Struct, a dict (validated against the revision's
                params type), or ``None``.
            progress: Ask the peer for progress (adds ``_meta.progressToken``).

        Returns:
            The new request id and the bytes to send.

        Raises:
            LocalProtocolError: the request is not allowed now (lifecycle,
                capability, direction) or the params are invalid.
        """
        spec = self._checked_spec(method, "request")
        id = self._next_id + 1
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
        self._next_id = id
        data = rpc.encode_request(id, method, typed)
        task = spec is not None and getattr(typed, "task", UNSET) not in (UNSET, None)
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

    def _batch_done(self, entry: _InFlight, data: bytes | None) -> bytes | None:
        batch = entry.batch
        if batch is None:
            return data
        if data is not None:
            batch.parts.append(data)
        batch.remaining -= 1
        if batch.remaining == 0 and batch.parts:
            return b"[" + b",".join(batch.parts) + b"]"
        return None

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
        progress = float(progress)
        if not math.isfinite(progress):
            raise LocalProtocolError(f"progress must be a finite number, not {progress!r}")
        if entry.last_progress is not None and not progress > entry.last_progress:
            raise LocalProtocolError(
                f"progress must increase: {progress} after {entry.last_progress}"
            )
        entry.last_progress = progress
        params: dict[str, Any] = {"progressToken": entry.token, "progress": progress}
        if total is not None:
            params["total"] = float(total)
        if message is not None:
            params["message"] = message
        return rpc.encode_notification("notifications/progress", params)


def _declares(client_caps: dict[str, Any] | None, extension: str) -> bool:
    """Whether per-request client capabilities declare ``extension``."""
    if not isinstance(client_caps, dict):
        return False
    declared = client_caps.get("extensions")
    return isinstance(declared, dict) and isinstance(declared.get(extension), dict)


def _with_meta(params: Any, extra: dict[str, Any]) -> Any:
    """``params`` with ``extra`` merged into its ``_meta`` (a copy; the caller's object is untouched)."""
    if params is UNSET or params is None:
        return {"_meta": extra}
    if isinstance(params, dict):
        meta = params.get("_meta")
        merged = {**meta, **extra} if isinstance(meta, dict) else extra
        return {**params, "_meta": merged}
    if isinstance(params, msgspec.Struct) and hasattr(params, "meta"):
        meta = params.meta
        merged = {**meta, **extra} if isinstance(meta, dict) else extra
        return msgspec.structs.replace(params, meta=merged)
    raise LocalProtocolError(
        f"cannot add _meta to params of type {type(params).__name__}; pass a dict or a params Struct"
    )
