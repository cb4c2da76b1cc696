"""Batches (JSON arrays of messages) of the 2025-03-26 revision.

Rules it keeps:

* A batch is accepted only in a revision that has them (2025-03-26): before
  initialization or in any other revision it gets one -32600 with id ``null``;
  so does an empty batch, and bytes that are not JSON get -32700.
* Each member is received as a message of its own; the answers to a batch go
  back together as one array once the last of its requests is answered (or
  dropped), and a batch that owes no answer (only notifications and
  responses, or only cancelled requests) gets no reply at all.
* :meth:`Batches.receive_slices` takes a batch a slice of members at a
  time (its driver yields between slices, so one large batch does not hold
  up other sessions); the batch's reply waits until its last member has been
  received, however quickly the first ones are answered.

:class:`Batches` owns no state: the answers collect in the :class:`_Batch` an
in-flight request keeps (``_InFlight.batch``, see :func:`._shared.batch_done`);
each member is received by the session's :class:`._incoming.Receiver`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import msgspec

from .. import _jsonrpc as rpc
from ..types import _versions
from ._events import Event, Outgoing
from ._lifecycle import State
from ._negotiation import Negotiation
from ._shared import _Batch

if TYPE_CHECKING:
    from ._incoming import Receiver

_WHITESPACE = b" \t\r\n"


class Batches:
    """Receiving a batch (whole, or a slice of members at a time) through a
    :class:`Receiver` (passed in, not kept: the receiver holds this object)."""

    __slots__ = ("_negotiation",)

    def __init__(self, negotiation: Negotiation) -> None:
        self._negotiation = negotiation

    def is_batch(self, data: bytes) -> bool:
        """Whether ``data`` is a JSON array (a batch), judged by its first byte
        that is not whitespace, as :meth:`receive` does."""
        i = 0
        n = len(data)
        while i < n and data[i] in _WHITESPACE:
            i += 1
        return i < n and data[i] == 0x5B

    def receive_slices(self, receiver: Receiver, data: bytes, size: int) -> Iterator[list[Event]]:
        """:meth:`receive` for a batch, ``size`` members at a time: yields the
        events of each slice (the first one also for a batch refused as a
        whole).  The batch's reply comes with the slice of its last member, or
        later from :meth:`respond` / :meth:`error` / :meth:`drop`, never
        before every member was received.  A driver that stops iterating
        (its session ended) gets nothing more."""
        if self._negotiation.state is State.CLOSED:
            return
        try:
            if not data.isascii():
                data.decode("utf-8")  # (see receive)
            events: list[Event] = []
            items = self._batch_items(data, events)
        except (RecursionError, UnicodeDecodeError):
            yield receiver.receive(data)  # (the same parse error)
            return
        if items is None:
            yield receiver.silent_client(events)
            return
        batch = _Batch()
        batch.remaining = 1  # held until the last member is received
        for start in range(0, len(items), size):
            events = []
            try:
                for raw in items[start : start + size]:
                    receiver.receive_one(raw, events, batch)
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
            yield receiver.silent_client(events)

    def receive_batch(self, receiver: Receiver, data: bytes, events: list[Event]) -> None:
        """Receive every member of the batch ``data`` (its reply, when every member
        was answered at once, goes into ``events``)."""
        items = self._batch_items(data, events)
        if items is None:
            return
        batch = _Batch()
        receive_one = receiver.receive_one
        for raw in items:
            receive_one(raw, events, batch)
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
        version = self._negotiation.version
        if version is None or not _versions.supports_batching(version):
            where = f"in protocol version {version}" if version else "before initialization"
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
