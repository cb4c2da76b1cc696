"""Hand-written building blocks shared by every generated revision module.

The generated modules (``v2024_11_05.py`` ...) import :class:`MethodSpec` from
here and end with a ``METHODS`` table built from it.  Nothing in this module
knows about any particular revision.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

__all__ = [
    "UNSET",
    "Direction",
    "ExtensionSpec",
    "JSONObject",
    "MethodKind",
    "MethodSpec",
    "ProgressToken",
    "RequestId",
    "UnsetType",
]

UNSET = msgspec.UNSET
UnsetType = msgspec.UnsetType

#: A JSON-RPC request id.  ``1`` and ``"1"`` are different ids; ``bool`` is
#: never an id (msgspec rejects ``true`` for ``int | str``).
RequestId: TypeAlias = int | str
#: A progress token (same rules as :data:`RequestId`).
ProgressToken: TypeAlias = int | str
#: An open JSON object (``_meta``, JSON Schema documents, structured content).
JSONObject: TypeAlias = dict[str, Any]

MethodKind: TypeAlias = Literal["request", "notification"]
#: Who sends the message: ``"client"`` (client to server), ``"server"``
#: (server to client) or ``"both"``.
Direction: TypeAlias = Literal["client", "server", "both"]


class MethodSpec(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of a revision's method registry.

    Attributes:
        method: The JSON-RPC method name, e.g. ``"tools/call"``.
        kind: ``"request"`` or ``"notification"``.
        direction: Which side sends it (``"client"``, ``"server"``, ``"both"``).
        message: The full wire Struct (``jsonrpc``, ``id``, ``method``, ``params``).
        params: The params Struct, or ``None`` when the schema declares no params.
        params_required: Whether ``params`` must be present on the wire.
        results: Result Structs a response may carry (empty for notifications).
            When there are several, the first is the ordinary result and the
            others are alternatives (``CreateTaskResult``, ``InputRequiredResult``).
        capability: Path into the capabilities object that gates the method.
            For a request it is the *receiver's* capability (``("tools",)`` for
            ``tools/call``: the server must advertise ``tools``); for a
            notification it is the *sender's* (``("tools", "listChanged")``).
            ``None`` when nothing gates it.
        input_request: True for the 2026-07-28 server-to-client requests that
            travel inside ``InputRequiredResult.inputRequests`` instead of as
            JSON-RPC requests of their own.
        extension: The identifier of the MCP extension that defines the method
            (``"io.modelcontextprotocol/tasks"``), ``None`` for the methods of
            the specification itself.  A request of an extension method must
            come from a client that declares the extension in that request's
            capabilities.
    """

    method: str
    kind: MethodKind
    direction: Direction
    message: type
    params: type | None
    params_required: bool
    results: tuple[type, ...] = ()
    capability: tuple[str, ...] | None = None
    input_request: bool = False
    extension: str | None = None

    @property
    def result(self) -> type | None:
        """The ordinary result type (``None`` for notifications)."""
        return self.results[0] if self.results else None


class ExtensionSpec(msgspec.Struct, frozen=True, kw_only=True):
    """What an MCP extension adds to the method registry of the revisions it applies to.

    An extension is active on a session when this side lists its identifier
    under ``capabilities.extensions`` (see ``types._versions.methods_for``).

    Attributes:
        id: The extension identifier, e.g. ``"io.modelcontextprotocol/tasks"``.
        methods: New methods (their specs carry ``extension=id``).
        results: Alternative results the extension allows for methods of the
            specification, e.g. ``{"tools/call": (CreateTaskResult,)}``.  Each
            such type names the ``resultType`` it is told apart by in a
            ``RESULT_TYPE`` class variable and the extension in ``EXTENSION``
            (a server core sends it only to a client that declared that
            extension in the request).
        stateless_only: The extension builds on the per-request capabilities of
            the stateless revisions (2026-07-28 on) and does not apply earlier.
    """

    id: str
    methods: dict[str, MethodSpec]
    results: dict[str, tuple[type, ...]] = {}
    stateless_only: bool = True
