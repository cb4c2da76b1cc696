"""The state of a session that the concerns of the core share, declared.

``SessionCore.__init__`` (in ``_session.py``) sets every attribute named here;
each concern's mixin derives from :class:`_CoreState`, which holds no values,
only the names and types, the steps every concern takes (queueing a reply,
letting a request into the in-flight table), and (for the type checker only)
the methods one concern calls on another.  Which concern reads or writes
which part is said at the top of its module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import Raw

from .. import _jsonrpc as rpc
from ..types._wire import MethodSpec, RequestId
from ._events import Event, Outgoing, RequestReceived
from ._lifecycle import State
from ._shared import _Batch, _InFlight, _Pending

Role = Literal["client", "server"]


class _CoreState:
    """The state of a session that the concerns share, declared (set by
    ``SessionCore.__init__``; this class holds no values, only the names and
    types), the steps every concern takes, and the methods one concern calls on
    another, for the type checker."""

    # fixed at construction
    role: Role
    peer_role: Role
    info: dict[str, Any]
    capabilities: dict[str, Any]
    versions: tuple[str, ...]
    legacy_versions: tuple[str, ...]
    modern_versions: tuple[str, ...]
    instructions: str | None
    extra_methods: frozenset[str]
    discover_ttl_ms: int
    extensions: frozenset[str]
    # lifecycle and negotiation
    state: State
    _modern_only: bool
    version: str | None
    peer_info: dict[str, Any]
    peer_capabilities: dict[str, Any]
    peer_instructions: str | None
    # the tables
    _next_id: int
    id_prefix: str | None
    _pending: dict[RequestId, _Pending]
    _progress_tokens: dict[RequestId, RequestId]
    _in_flight: dict[RequestId, _InFlight]
    _task_tokens: dict[RequestId, str]
    _accepted: dict[str, dict[str, MethodSpec]]
    _request_decoders: dict[str, msgspec.json.Decoder[Any] | None]

    # The steps every concern takes: queueing a reply (into the batch being
    # answered, if any) and letting a request in (the in-flight table and its event).

    def _reply(self, events: list[Event], batch: _Batch | None, id: RequestId | None, data: bytes) -> None:
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

    if TYPE_CHECKING:
        # _session
        def _methods(self, version: str | None) -> dict[str, MethodSpec]: ...
        # _incoming
        def receive(self, data: bytes) -> list[Event]: ...
        def _silent_client(self, events: list[Event]) -> list[Event]: ...
        def _receive_one(self, data: bytes | Raw, events: list[Event], batch: _Batch | None) -> None: ...
        # _batch
        def _receive_batch(self, data: bytes, events: list[Event]) -> None: ...
        def _batch_done(self, entry: _InFlight, data: bytes | None) -> bytes | None: ...
        # _requests
        def _on_request(
            self, id: RequestId, method: str, params_raw: Raw | Any, events: list[Event], batch: _Batch | None
        ) -> None: ...
        def _accepted_requests(self, version: str) -> dict[str, MethodSpec]: ...
        def _initialize(self, id: RequestId, version: str, params: Any, events: list[Event]) -> None: ...
        # _responses
        def _on_response(
            self, id: Any, result_raw: Any, error_raw: Any, events: list[Event], data: bytes
        ) -> None: ...
        def _on_progress(self, params: Any, events: list[Event], spec: MethodSpec, version: str) -> None: ...
        def _expected_result(self, pending: _Pending) -> tuple[type, frozenset[str]] | None: ...
        def _deliver_result(self, id: Any, pending: _Pending, result: Any, events: list[Event]) -> None: ...
