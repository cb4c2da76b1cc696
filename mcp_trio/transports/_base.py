"""The contract between the session engine and every transport.

A transport moves whole JSON-RPC messages (one :class:`Frame` each) and knows
framing, not MCP.  Both directions use :class:`trio.abc.Channel` semantics:

* ``await channel.receive()`` returns the next incoming :class:`Frame`, raises
  :class:`trio.EndOfChannel` when the peer is gone for good, and
  :class:`trio.ClosedResourceError` after ``aclose()``.
* ``await channel.send(frame)`` writes one outgoing message.  Exactly one task
  (the engine's writer) calls it.
* A framing problem never raises from ``receive``: the transport skips the bad
  bytes and hands over a frame whose ``error`` says what was wrong, so the
  engine can answer it with a JSON-RPC error and carry on.

Beyond that, a channel declares what more it offers by inheriting it (the engine checks each
once per session with ``isinstance``; nothing is probed by name):

* :class:`ChannelTraits`: what a channel says about itself (defaults for all of it);
* :class:`DirectOutput`: takes a whole frame without waiting, or refuses it;
* :class:`BatchedOutput`: writes several frames in one call;
* :class:`BufferedInput`: tells how much input it holds already read;
* :class:`PushInput`: feeds frames from its own tasks instead of being read;
* :class:`Authorizing`: knows the authorization each request came with;
* :class:`HostedSession`: is one session of a server endpoint that hosts many;
* :class:`SharedSession`: is a session that several workers serve through a store.

They are abstract base classes, not structural ``Protocol`` classes: a channel opts in by
saying so (a method of the same name by chance is not a contract), and a nominal ``isinstance``
costs a cached lookup where a structural one checks every member each time.
``mcp_trio.testing.check_message_channel`` checks what a channel declares.
"""

from __future__ import annotations

import abc
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias

import msgspec
import trio

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = [
    "CLOSE_STREAM",
    "Authorizing",
    "BatchedOutput",
    "BufferedInput",
    "ChannelTraits",
    "DirectOutput",
    "Frame",
    "HostedSession",
    "MessageChannel",
    "PushInput",
    "RequestId",
    "SharedRecord",
    "SharedSession",
]

CLOSE_STREAM = "close-stream"

RequestId: TypeAlias = int | str


class Frame(msgspec.Struct, frozen=True):
    """One JSON-RPC message (or batch) as bytes, without framing.

    Attributes:
        data: The UTF-8 JSON text of the message, with no trailing newline.
        related: For outgoing frames, the id of the incoming request this
            message belongs to (a response, or a notification or request sent
            while handling it).  Streamable HTTP uses it to pick the SSE stream;
            stdio ignores it.
        final: True on the response that completes ``related``.
        error: Set by a transport on an incoming frame it could not deliver
            whole (for example a message over the size limit); ``data`` then
            holds whatever prefix is useful for diagnostics, possibly empty.
        control: An instruction to the transport instead of a message (``data``
            is empty).  ``"close-stream"``: end the response stream of the
            request ``related`` without ending the request, so the peer
            resumes it (Streamable HTTP polling, 2025-11-25).  The engine only
            sends controls to a channel whose ``stream_controls`` attribute
            is true.
    """

    data: bytes
    related: RequestId | None = None
    final: bool = False
    error: str | None = None
    control: str | None = None


MessageChannel: TypeAlias = trio.abc.Channel[Frame]


class ChannelTraits:
    """What a channel says about itself. Every member has a default; a channel inherits this
    class and sets what differs (a class or an instance attribute)."""

    __slots__ = ()

    #: The peer reads our output after its own input ended (stdio: a client that closes stdin
    #: still reads stdout): requests already read get ``eof_grace`` (2 s by default) to finish.
    output_outlives_input: bool = False
    #: Why the connection ended, in the transport's words (a WebSocket close code), or None.
    end_reason: str | None = None
    #: Where the channel leads (a client's server URL), for messages.
    url: str | None = None
    #: The id the transport knows the session by (``Mcp-Session-Id``), for logs and middleware.
    session_id: str | None = None
    #: The peer's address, for logs and per-client bounds.
    client: str | None = None
    #: Its sessions' label in the server's statistics (None: its module's transport).
    counted_as: str | None = None


class DirectOutput(abc.ABC):
    """A channel that takes a whole frame at once or refuses it (stdio, a Streamable HTTP
    session): the engine writes a lone answer from the handler's own task, around its writer,
    when nothing is queued before it."""

    __slots__ = ()

    @abc.abstractmethod
    def send_nowait(self, frame: Frame) -> None:
        """Write all of ``frame`` now, or nothing.

        Raises:
            trio.WouldBlock: it cannot be written without waiting; the engine's writer sends
                it with ``send`` instead.
        """


class BatchedOutput(abc.ABC):
    """A channel that writes several frames in one call (stdio: one system call per burst)."""

    __slots__ = ()

    @abc.abstractmethod
    async def send_many(self, frames: Sequence[Frame]) -> None:
        """Write ``frames`` in order, as ``send`` would one after another."""


class BufferedInput(abc.ABC):
    """A channel that tells how much input it holds already read: with none, the engine may run
    a request it just read in the reader's own task (the reader relay, docs/engine.md)."""

    __slots__ = ()

    @abc.abstractmethod
    def buffered(self) -> int:
        """How many bytes (or frames) are read and not yet taken by ``receive``."""


class PushInput(abc.ABC):
    """A channel that feeds frames from its own tasks (the task of the HTTP request that carried
    each) instead of being read, and closes without waiting."""

    __slots__ = ()

    @abc.abstractmethod
    async def attach_receiver(
        self, feed: Callable[[Frame], Awaitable[None]], on_end: Callable[[], None]
    ) -> None:
        """From now on hand every frame to ``await feed(frame)`` (those that came before first,
        in order); call ``on_end()`` once when the input ends."""

    @abc.abstractmethod
    def close_nowait(self) -> None:
        """Close the channel at once (``aclose`` with nothing to wait for)."""


class Authorizing(abc.ABC):
    """A channel that knows what its transport's authorization layer verified for each request
    (a protected HTTP endpoint, a WebSocket handshake): ``RequestContext.auth``."""

    __slots__ = ()

    principal: Hashable | None = None  # whom the session belongs to, if known (for logs)

    @abc.abstractmethod
    def auth_for(self, request_id: RequestId) -> Any:
        """What was verified for the request ``request_id`` (an ``AccessToken``...), or None."""


class HostedSession:
    """One session of a server endpoint that hosts many (Streamable HTTP). The engine and the
    server read its attributes as the session starts; the channel sets every one."""

    __slots__ = ()

    #: Served for one request only (stateless mode, a 2026-07-28 request): nothing tied to the
    #: session outlives it.
    sessionless: bool
    #: Stateless mode: the revision to serve without a handshake, else None.
    assumed_version: str | None
    #: The request's headers named a stateless revision: every request is a stateless one.
    expect_modern: bool
    #: The endpoint's bounds on waiting requests, for the engine's queue (None: its default).
    max_queued: int | None
    max_queued_total: int | None
    #: The engine may send ``CLOSE_STREAM`` controls (a request's stream closed, the request
    #: going on).
    stream_controls: bool


class SharedRecord(NamedTuple):
    """Where a shared session's record is: the store's sessions, its id there, and the time to
    live its record is kept for at each change."""

    sessions: SessionStore
    session_id: str
    ttl: float


class SharedSession(abc.ABC):
    """A session that several workers may serve through a store (Streamable HTTP with a store).
    An unshared one says so: ``request_id_prefix`` is None."""

    __slots__ = ()

    #: What the ids of the server's requests start with (this worker's), or None if unshared;
    #: and this worker's id (for logs).
    request_id_prefix: str | None
    worker: str | None
    #: What another worker's record of the session says (revision, client, log level,
    #: subscriptions), when this worker took it over; else None.
    restored: Any
    record: SharedRecord | None  # (where its record is, if a store shares it)
    #: Called with a log level and subscriptions another worker set (the server sets it).
    on_shared_update: Callable[[str | None, list[str]], None] | None

    @abc.abstractmethod
    async def remember(self, *, log_level: str | None, subscriptions: list[str]) -> None:
        """Keep the session's log level and subscriptions where every worker finds them."""

    @abc.abstractmethod
    def announces(self) -> bool:
        """Whether this worker tells the session of list changes and resource updates."""

    @abc.abstractmethod
    async def adopted(self) -> bool:
        """Whether the worker announcing to the session is gone and this one took its place."""
