"""The sans-IO session core: every protocol decision, no I/O, no event loop.

``SessionCore`` turns incoming bytes into events and outgoing intentions into
bytes: request-id allocation, the pending and in-flight tables, lifecycle and
version negotiation, capability gates, batching, progress and cancellation
bookkeeping, and the mapping of every malformed input to the JSON-RPC error
the spec prescribes.

It is an orchestrator: its public methods forward to collaborators, each
owning one piece of state and stating at its top the rules it keeps:

* :class:`._negotiation.Negotiation` (``negotiation``): this side's
  declarations, the lifecycle state, the era, the revision and the peer;
* :class:`._outgoing.OutgoingRequests` (``outgoing``): our request ids, the
  requests waiting for an answer, their progress tokens (and a task's);
* :class:`._in_flight.PeerRequests` (``in_flight``): the peer's requests we
  admitted and have not answered, their cancellation, our answers and progress;
* :class:`._gate.RequestGate` (``gate``): which of the peer's requests this
  side answers in each revision, and their one-pass decoder.

and over the steps that hold no state of their own: :class:`._incoming.Receiver`
(``receiver``: the envelope, dispatch, the one-pass paths, notifications;
with :class:`._requests.RequestIntake`, :class:`._responses.ResponseIntake`
and :class:`._batch.Batches`) and :class:`._sending.Sender` (``sender``: our
requests and notifications, checked).  :mod:`._shared` holds the records of
the tables and the params helpers, :mod:`._lifecycle` the state machine.

Rules kept here: ``close`` forgets every table and returns the ids of our
requests that will never be answered.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import Any

from ..types._wire import RequestId
from ._events import Event, PeerInitialized
from ._gate import RequestGate
from ._in_flight import PeerRequests
from ._incoming import Receiver
from ._lifecycle import State
from ._negotiation import Negotiation, Role
from ._outgoing import OutgoingRequests
from ._sending import Sender

__all__ = ["Role", "SessionCore"]


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

    __slots__ = ("negotiation", "outgoing", "in_flight", "gate", "receiver", "sender")

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
        self.negotiation = Negotiation(
            role,
            info=info,
            capabilities=capabilities,
            versions=versions,
            instructions=instructions,
            extra_methods=extra_methods,
            discover_ttl_ms=discover_ttl_ms,
        )
        self.outgoing = OutgoingRequests()
        self.in_flight = PeerRequests(self.negotiation)
        self.gate = RequestGate(self.negotiation)
        self.receiver = Receiver(self.negotiation, self.gate, self.outgoing, self.in_flight)
        self.sender = Sender(self.negotiation, self.outgoing)

    # ----------------------------------------------- what the session settled

    @property
    def role(self) -> Role:
        return self.negotiation.role

    @property
    def peer_role(self) -> Role:
        return self.negotiation.peer_role

    @property
    def info(self) -> dict[str, Any]:
        """This side's ``Implementation``."""
        return self.negotiation.info

    @property
    def capabilities(self) -> dict[str, Any]:
        """The capabilities this side advertises."""
        return self.negotiation.capabilities

    @property
    def versions(self) -> tuple[str, ...]:
        """The revisions this side accepts, newest first."""
        return self.negotiation.versions

    @property
    def legacy_versions(self) -> tuple[str, ...]:
        """The handshake-era revisions of :attr:`versions`."""
        return self.negotiation.legacy_versions

    @property
    def modern_versions(self) -> tuple[str, ...]:
        """The stateless revisions of :attr:`versions`."""
        return self.negotiation.modern_versions

    @property
    def instructions(self) -> str | None:
        return self.negotiation.instructions

    @property
    def extra_methods(self) -> frozenset[str]:
        return self.negotiation.extra_methods

    @property
    def discover_ttl_ms(self) -> int:
        return self.negotiation.discover_ttl_ms

    @property
    def extensions(self) -> frozenset[str]:
        """The known extensions this side declares (their methods are in the registry)."""
        return self.negotiation.extensions

    @property
    def state(self) -> State:
        return self.negotiation.state

    @property
    def version(self) -> str | None:
        """The negotiated revision (``None`` until the era is settled)."""
        return self.negotiation.version

    @property
    def peer_info(self) -> dict[str, Any]:
        return self.negotiation.peer_info

    @property
    def peer_capabilities(self) -> dict[str, Any]:
        return self.negotiation.peer_capabilities

    @property
    def peer_instructions(self) -> str | None:
        return self.negotiation.peer_instructions

    @property
    def id_prefix(self) -> str | None:
        """Our request ids are ``f"{id_prefix}{n}"`` strings when set, else ``n``: a
        session served by several processes (shared through a store) keeps them unique."""
        return self.outgoing.id_prefix

    @id_prefix.setter
    def id_prefix(self, prefix: str | None) -> None:
        self.outgoing.id_prefix = prefix

    # ------------------------------------------------------------------ state

    @property
    def closed(self) -> bool:
        return self.negotiation.state is State.CLOSED

    @property
    def pending_ids(self) -> list[RequestId]:
        """Ids of our requests still waiting for an answer."""
        return self.outgoing.ids

    @property
    def in_flight_ids(self) -> list[RequestId]:
        """Ids of the peer's requests we have not answered."""
        return self.in_flight.ids

    def close(self) -> list[RequestId]:
        """End the session; returns the ids of our requests that will never be answered."""
        self.negotiation.advance("close")
        self.in_flight.close()
        return self.outgoing.close()

    # ---------------------------------------------------------------- the era

    def use_modern(
        self,
        version: str,
        *,
        server_capabilities: Any = None,
        server_info: Any = None,
        instructions: str | None = None,
    ) -> PeerInitialized:
        """Client: speak a stateless (2026-07-28+) revision with this server."""
        return self.negotiation.use_modern(version, server_capabilities, server_info, instructions)

    def expect_modern(self) -> None:
        """Server: every request on this session must be a stateless one (a
        transport that saw a stateless version in the request's headers): a
        request without ``_meta`` naming its version gets -32602, and
        ``initialize`` -32601."""
        self.negotiation.expect_modern()

    def assume_initialized(self, version: str) -> None:
        """Server: serve ``version`` without an ``initialize`` handshake (a
        transport with no sessions, where each request arrives on a fresh one).
        The client's capabilities and info are unknown (empty)."""
        self.negotiation.assume_initialized(version)

    def restore(self, version: str, *, peer_info: Any = None, peer_capabilities: Any = None) -> None:
        """Server: serve a session whose ``initialize`` handshake another
        process answered (a session shared through a store): ``version`` was
        negotiated there, the client declared ``peer_info`` and
        ``peer_capabilities``; NEW moves to READY with no handshake."""
        self.negotiation.restore(version, peer_info, peer_capabilities)

    def reset_era(self) -> None:
        """Client: forget a modern probe (the server turned out to be legacy)."""
        self.negotiation.reset_era()

    # ------------------------------------------------------------- receiving

    def receive(self, data: bytes) -> list[Event]:
        """Process one framed message (or batch) from the peer.

        Never raises for anything the peer sent.
        """
        return self.receiver.receive(data)

    def framing_error(self, message: str) -> list[Event]:
        """The transport could not deliver a message whole (e.g. it was too large)."""
        return self.receiver.framing_error(message)

    def is_batch(self, data: bytes) -> bool:
        """Whether ``data`` is a JSON array (a batch), judged by its first byte
        that is not whitespace, as :meth:`receive` does."""
        return self.receiver.batches.is_batch(data)

    def receive_slices(self, data: bytes, size: int) -> Iterator[list[Event]]:
        """:meth:`receive` for a batch, ``size`` members at a time: yields the
        events of each slice (the first one also for a batch refused as a
        whole).  The batch's reply comes with the slice of its last member, or
        later from :meth:`respond` / :meth:`error` / :meth:`drop`, never
        before every member was received.  A driver that stops iterating
        (its session ended) gets nothing more."""
        return self.receiver.batches.receive_slices(self.receiver, data, size)

    # --------------------------------------------------------------- sending

    def start_request(
        self, method: str, params: Any = None, *, progress: bool = False, result_type: Any = None
    ) -> tuple[RequestId, bytes]:
        """Prepare a request.

        Args:
            method: The method name.
            params: A params Struct, a dict (validated against the revision's
                params type), or ``None``.
            progress: Ask the peer for progress (adds ``_meta.progressToken``).
            result_type: Decode the ordinary result as this type instead of
                the revision's (the alternatives keep theirs).

        Returns:
            The new request id and the bytes to send.

        Raises:
            LocalProtocolError: the request is not allowed now (lifecycle,
                capability, direction) or the params are invalid.
        """
        return self.sender.start_request(method, params, progress, result_type)

    def cancel(self, id: RequestId, reason: str | None = None) -> bytes | None:
        """Give up on our request ``id``; returns the ``notifications/cancelled`` to send.

        Returns ``None`` when there is nothing to cancel (already answered, or
        ``initialize``, which may not be cancelled); the pending entry is
        dropped either way, so a late answer is ignored.
        """
        return self.outgoing.cancel(id, self.negotiation.state is State.CLOSED, reason)

    def notify(self, method: str, params: Any = None) -> bytes:
        """Prepare a notification (checked against direction and our capabilities)."""
        return self.sender.notify(method, params)

    # -------------------------------------------------------------- answering

    def respond(self, id: RequestId, result: Any) -> bytes | None:
        """Answer the peer's request ``id``.

        Returns the bytes to send, or ``None`` when nothing must be sent (the
        request was cancelled, or it is part of a batch still being answered).

        Raises:
            LocalProtocolError: ``id`` is not a request in progress, or a dict
                result does not fit the method's result type (the request then
                stays in progress so it can still be answered with an error).
        """
        return self.in_flight.respond(id, result)

    def error(self, id: RequestId, code: int, message: str, data: Any = None) -> bytes | None:
        """Answer the peer's request ``id`` with an error (``None``: nothing to send)."""
        return self.in_flight.error(id, code, message, data)

    def drop(self, id: RequestId) -> bytes | None:
        """The handler of ``id`` ended without an answer (it was cancelled).

        Returns the bytes of a batch reply that this completes, if any.
        """
        return self.in_flight.drop(id)

    def is_cancelled(self, id: RequestId) -> bool:
        return self.in_flight.is_cancelled(id)

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
        return self.in_flight.progress(id, progress, total, message)
