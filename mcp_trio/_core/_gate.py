"""The gate: which of the peer's requests this side answers, per revision.

:class:`RequestGate` owns, per revision, the table of the requests this side
answers (registry entries of the peer's direction whose capability this side
advertises) and the one-pass decoder of those requests (envelope and params
in one ``msgspec`` pass).  Both depend only on what is fixed at construction
(the role, the capabilities and extensions), so each is built once per
revision, and shared by every core made alike (a stateless Streamable HTTP
request gets a core of its own, which then builds neither).

Rules it keeps:

* A request of the peer's direction (or ``"both"``), never an input request;
  a request whose capability this side did not advertise is not answered.
* The one-pass decoder leaves ``initialize``, ``ping`` and ``server/discover``
  to the two-pass path (each has its own flow), and only takes params types
  that keep ``_meta`` as a plain dict (what the ``_meta`` checks read).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .. import _jsonrpc as rpc
from ..types._wire import MethodSpec
from ._capabilities import has_capability
from ._negotiation import Negotiation
from ._shared import _has_meta_dict

# Requests the one-pass path leaves to the two-pass one: each has its own flow.
_OWN_FLOW = frozenset({"initialize", "ping", "server/discover"})

Gate = tuple[dict[str, MethodSpec], msgspec.json.Decoder[Any] | None]

# (revision, extensions, role, capabilities as sorted JSON) -> (accepted requests, one-pass decoder)
_GATES: dict[tuple[Any, ...], Gate] = {}
_GATES_MAX = 256


class RequestGate:
    """The requests this side answers in each revision, and their one-pass decoder."""

    __slots__ = ("_negotiation", "_accepted", "_decoders")

    def __init__(self, negotiation: Negotiation) -> None:
        self._negotiation = negotiation
        # revision -> the requests this side answers in it
        self._accepted: dict[str, dict[str, MethodSpec]] = {}
        self._decoders: dict[str, msgspec.json.Decoder[Any] | None] = {}

    def accepted(self, version: str) -> dict[str, MethodSpec]:
        """The requests of ``version`` this side answers (one lookup per message)."""
        table = self._accepted.get(version)
        if table is None:
            table, self._decoders[version] = self.build(version)
            self._accepted[version] = table
        return table

    def decoder(self, version: str) -> msgspec.json.Decoder[Any] | None:
        """The one-pass decoder of the requests :meth:`accepted` lists (``None``
        when none of them can take the one-pass path)."""
        if version not in self._decoders:
            self.accepted(version)
        return self._decoders[version]

    def is_peer_request(self, spec: MethodSpec | None) -> bool:
        """``spec`` is a JSON-RPC request the peer may send us (whatever the capabilities)."""
        return (
            spec is not None
            and spec.kind == "request"
            and not spec.input_request
            and spec.direction in (self._negotiation.peer_role, "both")
        )

    def build(self, version: str) -> Gate:
        """:meth:`accepted` and :meth:`decoder` of ``version``, shared by every core
        made alike (same role, extensions and advertised capabilities)."""
        negotiation = self._negotiation
        try:
            key: tuple[Any, ...] | None = (
                version,
                negotiation.extensions,
                negotiation.role,
                msgspec.json.encode(negotiation.capabilities, order="sorted"),
            )
        except (TypeError, ValueError):  # capabilities that are not JSON: nothing shared
            key = None
        gate = _GATES.get(key) if key is not None else None
        if gate is None:
            table = {
                method: spec
                for method, spec in negotiation.methods(version).items()
                if self.is_peer_request(spec)
                and (spec.capability is None or has_capability(negotiation.capabilities, spec.capability))
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
