"""Batches (JSON arrays of messages) of the 2025-03-26 revision.

Rules it keeps:

* A batch is accepted only in a revision that has them (2025-03-26): before
  initialization or in any other revision it gets one -32600 with id ``null``;
  so does an empty batch, and bytes that are not JSON get -32700.
* Each member is received as a message of its own; the answers to a batch go
  back together as one array once the last of its requests is answered (or
  dropped), and a batch that owes no answer (only notifications and
  responses, or only cancelled requests) gets no reply at all.

State: reads ``version``; the answers collect in the :class:`_Batch` an
in-flight request keeps (``_InFlight.batch``).
"""

from __future__ import annotations

import msgspec

from .. import _jsonrpc as rpc
from ..types import _versions
from ._events import Event, Outgoing
from ._shared import _Batch, _InFlight
from ._state import _CoreState


class _Batching(_CoreState):
    """The batch side of :class:`SessionCore`: receiving a batch, sending its answers."""

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
            where = f"in protocol version {self.version}" if self.version else "before initialization"
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
