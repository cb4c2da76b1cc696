"""The sans-IO session core: every protocol decision, no I/O, no event loop.

``SessionCore`` turns incoming bytes into events and outgoing intentions into
bytes.  It owns request-id allocation, the pending and in-flight tables,
lifecycle and version negotiation, capability gates, batching, progress and
cancellation bookkeeping, and the mapping of every malformed input to the
JSON-RPC error the spec prescribes.

This module keeps the state of a session and its public lifecycle methods;
the behaviour is composed from one mixin per concern, each stating at its top
the rules it keeps and the state it touches:

* :mod:`._incoming`: receiving, the envelope, dispatch by kind, the one-pass
  decoders beside the two-pass path, notifications;
* :mod:`._requests`: the peer's requests, gates, negotiation (``initialize``
  and the stateless era), the in-flight table;
* :mod:`._responses`: the answers to our own requests, and their progress;
* :mod:`._batch`: 2025-03-26 batches;
* :mod:`._sending`: our requests and notifications, our answers, progress;
* :mod:`._state`: the shared state, declared (the base of every mixin);
  :mod:`._shared`: the records and helpers the concerns share;
  :mod:`._lifecycle`: the state machine.

Rules kept here: the role and the accepted revisions (all known, at least
one) are fixed at construction; ``use_modern``, ``expect_modern``,
``assume_initialized``, ``restore`` and ``reset_era`` settle or undo the era only as the
lifecycle allows, each for one role; ``close`` forgets every table and
returns the ids of our requests that will never be answered.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import Any

import msgspec

from .._exceptions import LocalProtocolError
from ..types import _versions
from ..types._wire import MethodSpec, RequestId
from ._batch import _Batching
from ._capabilities import as_dict
from ._events import PeerInitialized
from ._incoming import _Incoming
from ._lifecycle import State, transition
from ._requests import _Requests
from ._responses import _Responses
from ._sending import _Sending
from ._shared import _InFlight, _Pending
from ._state import Role

__all__ = ["Role", "SessionCore"]


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


class SessionCore(_Incoming, _Batching, _Requests, _Responses, _Sending):
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
        #: Our request ids are ``f"{id_prefix}{n}"`` strings when set, else ``n``: a
        #: session served by several processes (shared through a store) keeps them unique.
        self.id_prefix: str | None = None
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
        self._require_legacy_server(version)
        self.state = transition(self.role, self.state, "assume_initialized")
        self.version = version

    def restore(
        self,
        version: str,
        *,
        peer_info: Any = None,
        peer_capabilities: Any = None,
    ) -> None:
        """Server: serve a session whose ``initialize`` handshake another
        process answered (a session shared through a store): ``version`` was
        negotiated there, the client declared ``peer_info`` and
        ``peer_capabilities``; NEW moves to READY with no handshake."""
        self._require_legacy_server(version)
        self.state = transition(self.role, self.state, "restore")
        self.version = version
        self.peer_info = as_dict(peer_info)
        self.peer_capabilities = as_dict(peer_capabilities)

    def reset_era(self) -> None:
        """Client: forget a modern probe (the server turned out to be legacy)."""
        self._require_role("client")
        self.state = transition(self.role, self.state, "reset_era")
        self.version = None
        self.peer_capabilities = {}
        self.peer_info = {}

    def _require_legacy_server(self, version: str) -> None:
        self._require_role("server")
        if version not in self.legacy_versions:
            raise LocalProtocolError(
                f"{version!r} is not a handshake-era protocol version this server accepts "
                f"({', '.join(self.legacy_versions) or 'none'})"
            )

    def _require_role(self, role: Role) -> None:
        if self.role != role:
            raise LocalProtocolError(f"only a {role} can do this")

    def _methods(self, version: str | None) -> dict[str, MethodSpec]:
        if version is None:
            version = self.legacy_versions[0] if self.legacy_versions else self.versions[0]
        return _versions.methods_for(version, self.extensions)
