"""Batches (JSON arrays of messages) of the 2025-03-26 revision.

Rules it keeps:

* A batch is accepted only in a revision that has them (2025-03-26): before
  initialization or in any other revision it gets one -32600 with id ``null``;
  so does an empty batch, and bytes that are not JSON get -32700.
* Each member is received as a message of its own; the answers to a batch go
  back together as one array once the last of its requests is answered (or
  dropped), and a batch that owes no answer (only notifications and
  responses, or only cancelled requests) gets no reply at all.
* :meth:`_Batching.receive_slices` takes a batch a slice of members at a
  time (its driver yields between slices, so one large batch does not hold
  up other sessions); the batch's reply waits until its last member has been
  received, however quickly the first ones are answered.

State: reads ``version``; the answers collect in the :class:`_Batch` an
in-flight request keeps (``_InFlight.batch``).
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from .. import _jsonrpc as rpc
from ..types import _versions
from ._events import Event, Outgoing
from ._lifecycle import State
from ._shared import _Batch, _InFlight
from ._state import _CoreState

_WHITESPACE = b" \t\r\n"


class _Batching(_CoreState):
    """The batch side of :class:`SessionCore`: receiving a batch, sending its answers."""

    def _batching_allowed(self) -> bool:
        return self.version is not None and _versions.supports_batching(self.version)

    def is_batch(self, data: bytes) -> bool:
        """Whether ``data`` is a JSON array (a batch), judged by its first byte
        that is not whitespace, as :meth:`receive` does."""
        i = 0
        n = len(data)
        while i < n and data[i] in _WHITESPACE:
            i += 1
        return i < n and data[i] == 0x5B

    def receive_slices(self, data: bytes, size: int) -> Iterator[list[Event]]:
        """:meth:`receive` for a batch, ``size`` members at a time: yields the
        events of each slice (the first one also for a batch refused as a
        whole).  The batch's reply comes with the slice of its last member, or
        later from :meth:`respond` / :meth:`error` / :meth:`drop`, never
        before every member was received.  A driver that stops iterating
        (its session ended) gets nothing more."""
        if self.state is State.CLOSED:
            return
        try:
            if not data.isascii():
                data.decode("utf-8")  # (see receive)
            events: list[Event] = []
            items = self._batch_items(data, events)
        except (RecursionError, UnicodeDecodeError):
            yield self.receive(data)  # (the same parse error)
            return
        if items is None:
            yield self._silent_client(events)
            return
        batch = _Batch()
        batch.remaining = 1  # held until the last member is received
        for start in range(0, len(items), size):
            events = []
            try:
                for raw in items[start : start + size]:
                    self._receive_one(raw, events, batch)
            except RecursionError:
                events.append(
                    Outgoing(
                        rpc.encode_error(
                            None, rpc.PARSE_ERROR, "Parse error: the message is nested too deeply"
                        ),
                        final=True,
                    )
                )
            if start + size >= len(items):
                batch.remaining -= 1
                if batch.remaining == 0:
                    self._flush_batch(batch, events)
            yield self._silent_client(events)

    def _receive_batch(self, data: bytes, events: list[Event]) -> None:
        items = self._batch_items(data, events)
        if items is None:
            return
        batch = _Batch()
        for raw in items:
            self._receive_one(raw, events, batch)
        if batch.remaining == 0:
            self._flush_batch(batch, events)

    def _batch_items(self, data: bytes, events: list[Event]) -> list[msgspec.Raw] | None:
        """A batch's members, or ``None`` with the error for a batch refused as a whole in ``events``."""
        try:
            items = rpc.decode_batch(data)
        except msgspec.DecodeError as exc:
            events.append(
                Outgoing(rpc.encode_error(None, rpc.PARSE_ERROR, f"Parse error: {exc}"), final=True)
            )
            return None
        if not self._batching_allowed():
            where = f"in protocol version {self.version}" if self.version else "before initialization"
            events.append(
                Outgoing(
                    rpc.encode_error(
                        None,
                        rpc.INVALID_REQUEST,
                        f"Invalid request: JSON-RPC batches are not allowed {where}",
                    ),
                    final=True,
                )
            )
            return None
        if not items:
            events.append(
                Outgoing(
                    rpc.encode_error(None, rpc.INVALID_REQUEST, "Invalid request: empty batch"), final=True
                )
            )
            return None
        return items

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
