"""Negotiation: who this side is, and the era, revision and peer it settled on.

:class:`Negotiation` owns what is fixed at construction (the role, this
side's info, capabilities and instructions, the revisions it accepts, the
methods outside the spec it handles, the extensions it declares) and what the
session settles once: the lifecycle state, the negotiated revision and what
the peer declared (its info, capabilities and instructions).

Rules it keeps:

* The role is ``"client"`` or ``"server"``; the accepted revisions are all
  known and at least one; they split into handshake ("legacy") and stateless
  ("modern") revisions.
* ``use_modern``, ``expect_modern``, ``assume_initialized``, ``restore`` and
  ``reset_era`` settle or undo the era only as the lifecycle
  (:mod:`._lifecycle`) allows, each for one role, each with a revision of the
  right era.
* The answer to ``initialize`` (either side) and ``server/discover`` are
  built here, from this side's declarations and the revision's registry.

Every other collaborator reads the state here; only the lifecycle steps
(:meth:`Negotiation.advance`) and the methods named above change it.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from typing import Any, Literal

from .._exceptions import LocalProtocolError, RemoteProtocolError
from ..types import _versions
from ..types._wire import MethodSpec
from ._capabilities import as_dict
from ._events import PeerInitialized
from ._lifecycle import State, transition
from ._shared import META_SERVER_INFO

Role = Literal["client", "server"]

_EMPTY: frozenset[str] = frozenset()


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


def _frozen(methods: Collection[str]) -> frozenset[str]:
    if isinstance(methods, frozenset):
        return methods
    return frozenset(methods) if methods else _EMPTY


class Negotiation:
    """This side's declarations and the era, revision and peer a session settled on."""

    __slots__ = (
        "role",
        "peer_role",
        "info",
        "capabilities",
        "versions",
        "legacy_versions",
        "modern_versions",
        "instructions",
        "extra_methods",
        "discover_ttl_ms",
        "extensions",
        "state",
        "modern_only",
        "version",
        "peer_info",
        "peer_capabilities",
        "peer_instructions",
    )

    def __init__(
        self,
        role: Role,
        *,
        info: Any,
        capabilities: Any,
        versions: Sequence[str] | None,
        instructions: str | None,
        extra_methods: Collection[str],
        discover_ttl_ms: int,
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
        #: Server: every request must be a stateless one (see ``expect_modern``).
        self.modern_only = False
        #: The negotiated revision (``None`` until the era is settled).
        self.version: str | None = None
        self.peer_info: dict[str, Any] = {}
        self.peer_capabilities: dict[str, Any] = {}
        self.peer_instructions: str | None = None

    def advance(self, event: str) -> None:
        """Take the lifecycle step ``event`` (:data:`._lifecycle.TRANSITIONS`)."""
        self.state = transition(self.role, self.state, event)

    def methods(self, version: str | None) -> dict[str, MethodSpec]:
        """The registry of ``version`` with this side's extensions (the newest
        handshake revision's when ``None``)."""
        if version is None:
            version = self.legacy_versions[0] if self.legacy_versions else self.versions[0]
        return _versions.methods_for(version, self.extensions)

    # ------------------------------------------------------------ the era

    def use_modern(
        self, version: str, server_capabilities: Any, server_info: Any, instructions: str | None
    ) -> PeerInitialized:
        """Client: speak a stateless (2026-07-28+) revision with this server."""
        self._require_role("client")
        if version not in self.modern_versions:
            raise LocalProtocolError(
                f"{version!r} is not a stateless protocol version this client accepts "
                f"({', '.join(self.modern_versions) or 'none'})"
            )
        if self.state is not State.MODERN:
            self.advance("use_modern")
        self.version = version
        self.peer_capabilities = as_dict(server_capabilities)
        self.peer_info = as_dict(server_info)
        self.peer_instructions = instructions
        return PeerInitialized(version, self.peer_info, self.peer_capabilities, instructions)

    def expect_modern(self) -> None:
        """Server: every request on this session must be a stateless one."""
        self._require_role("server")
        if not self.modern_versions:
            raise LocalProtocolError("this server accepts no stateless protocol version")
        self.advance("modern_request")
        self.modern_only = True

    def assume_initialized(self, version: str) -> None:
        """Server: serve ``version`` without an ``initialize`` handshake."""
        self._require_legacy_server(version)
        self.advance("assume_initialized")
        self.version = version

    def restore(self, version: str, peer_info: Any, peer_capabilities: Any) -> None:
        """Server: serve a session whose handshake another process answered."""
        self._require_legacy_server(version)
        self.advance("restore")
        self.version = version
        self.peer_info = as_dict(peer_info)
        self.peer_capabilities = as_dict(peer_capabilities)

    def reset_era(self) -> None:
        """Client: forget a modern probe (the server turned out to be legacy)."""
        self._require_role("client")
        self.advance("reset_era")
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

    # ------------------------------------------------------ the handshake

    def initialized(self, version: str, params: Any) -> tuple[dict[str, Any], PeerInitialized]:
        """Server: a valid ``initialize`` (params decoded with ``version``'s type)
        was received: the result to answer it with, and the event."""
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
        self.advance("initialize_answered")
        return result, PeerInitialized(version, self.peer_info, self.peer_capabilities)

    def accept_initialize_result(self, result: Any) -> PeerInitialized | RemoteProtocolError:
        """Client: the server's valid ``InitializeResult``: the event, or the error
        that failed the handshake (a revision this client does not speak)."""
        version = result.protocolVersion
        if version not in self.legacy_versions:
            self.advance("initialize_failed")
            return RemoteProtocolError(
                f"the server answered protocol version {version!r}, which this client "
                f"does not support (supported: {', '.join(self.legacy_versions)})"
            )
        self.version = version
        self.peer_info = as_dict(result.serverInfo)
        self.peer_capabilities = as_dict(result.capabilities)
        instructions = getattr(result, "instructions", None)
        self.peer_instructions = instructions if isinstance(instructions, str) else None
        self.advance("initialize_accepted")
        return PeerInitialized(version, self.peer_info, self.peer_capabilities, self.peer_instructions)

    def discover_result(self, version: str) -> dict[str, Any]:
        """Server: the result of ``server/discover`` in ``version``."""
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
