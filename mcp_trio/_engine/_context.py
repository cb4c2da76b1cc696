"""The context object a request handler receives (no globals, no ContextVars)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import trio

from .._core import RequestReceived
from ..transports._base import Authorizing

if TYPE_CHECKING:
    from ._outgoing import ProgressCallback
    from ._session import Session

__all__ = ["RequestContext"]


class RequestContext:
    """Everything a handler may need about the request it is answering.

    Attributes:
        session: The :class:`~mcp_trio.Session` the request came in on.
        incoming: The core's ``RequestReceived`` event for the request.
        id: The request id (exactly as the peer sent it).
        method: The method name.
        params: The decoded params (a Struct, a dict for custom methods, or None).
        version: The protocol revision the request was validated against.
        progress_token: The caller's progress token, or ``None``.
        cancel_scope: The request's cancel scope; the peer's
            ``notifications/cancelled`` cancels it.  (A request the
            session's reader serves itself shares the reader's scope until
            the handler first waits; reading this attribute makes the
            reader move to a fresh scope afterwards, so cancelling it, now
            or later, never touches another request; see docs/engine.md.)
    """

    __slots__ = ("session", "incoming", "_cancel_scope", "_scope_seen")

    def __init__(self, session: Session, request: RequestReceived, cancel_scope: trio.CancelScope):
        self.session = session
        self.incoming = request
        self._cancel_scope = cancel_scope
        self._scope_seen = False  # (the engine lends a reader's scope only until a handler sees it)

    @property
    def cancel_scope(self) -> trio.CancelScope:
        self._scope_seen = True
        return self._cancel_scope

    @property
    def id(self) -> int | str:
        return self.incoming.id

    @property
    def method(self) -> str:
        return self.incoming.method

    @property
    def params(self) -> Any:
        return self.incoming.params

    @property
    def version(self) -> str:
        return self.incoming.version

    @property
    def progress_token(self) -> int | str | None:
        return self.incoming.progress_token

    @property
    def meta(self) -> dict[str, Any]:
        """The request's ``_meta`` object (empty when absent)."""
        meta = getattr(self.incoming.params, "meta", None)
        if meta is None and isinstance(self.incoming.params, dict):
            meta = self.incoming.params.get("_meta")
        return meta if isinstance(meta, dict) else {}

    @property
    def client_capabilities(self) -> dict[str, Any]:
        """The capabilities the client declared: in this request's ``_meta``
        (2026-07-28) or at initialization (earlier revisions)."""
        caps = self.incoming.client_capabilities
        if caps is not None:
            return caps
        return self.session.peer_capabilities if self.session.role == "server" else {}

    @property
    def auth(self) -> Any:
        """What the transport's authorization layer verified for this request
        (behind a protected HTTP endpoint: an ``mcp_trio.auth.server.AccessToken``),
        or ``None``.  The transport keeps it, so the core never sees it."""
        channel = self.session.channel
        return channel.auth_for(self.id) if isinstance(channel, Authorizing) else None

    @property
    def cancelled(self) -> bool:
        """True once the peer cancelled this request."""
        return self._cancel_scope.cancel_called

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the caller asked for progress.

        Values must increase from one call to the next.

        Raises:
            LocalProtocolError: ``progress`` did not increase.
        """
        await self.session.send_progress(self.id, progress, total, message)

    async def close_stream(self) -> bool:
        """End this request's response stream now; the request goes on and
        its later messages reach the client when it resumes the stream (GET
        with ``Last-Event-ID`` after the ``retry`` delay).  Streamable HTTP
        only, and only where the stream is resumable; see
        :meth:`Session.close_stream`.  Returns False on transports without
        response streams."""
        return await self.session.close_stream(self.id)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification related to this request (same HTTP stream)."""
        await self.session.notify(method, params, related=self.id)

    async def request(
        self,
        method: str,
        params: Any = None,
        *,
        timeout: float | None | object = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call back to the peer while handling this request (sampling,
        elicitation, roots ...), related to this request."""
        kwargs: dict[str, Any] = {"related": self.id, "on_progress": on_progress}
        if timeout is not None:
            kwargs["timeout"] = timeout
        return await self.session.request(method, params, **kwargs)
