"""One log line per HTTP request: what a proxy's access log says, from the server.

:class:`HttpAccessLog` wraps a handler (the MCP endpoint, a route) and, once
the response has ended, writes at INFO on ``mcp_trio.access.http`` (off until
that logger lets INFO through; ``mcp-trio serve --access-log`` does):

    POST /mcp 200 412 B 0.84 ms client=203.0.113.7 session=5f2c...

the method, the path, the status (``-`` when the client left before one was
sent), the body bytes sent, the time until the response ended (for an SSE
stream: its whole life), the client's address and the MCP session (the
request's ``Mcp-Session-Id``, or the one an ``initialize`` answer opened).  The
same fields are on the record (``extra``) as ``http_method``, ``http_path``,
``http_status``, ``http_bytes``, ``duration_ms``, ``http_client`` and
``mcp_session``.  Refusals a front door makes before any handler sees the
request (a head too large or too slow) are not logged here.  The JSON-RPC
level, one line per MCP request, is ``mcp_trio.middleware.AccessLog``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from ._request import Handler, HttpRequest, Responder

__all__ = ["HTTP_ACCESS_LOGGER", "HttpAccessLog"]

HTTP_ACCESS_LOGGER = "mcp_trio.access.http"
_SESSION = "mcp-session-id"


class _Recording:
    """A Responder that notes the status, the session and the bytes it passes on."""

    __slots__ = ("inner", "status", "session", "sent")

    def __init__(self, inner: Responder) -> None:
        self.inner = inner
        self.status: int | None = None
        self.session: str | None = None
        self.sent = 0

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None:
        self.status = status
        for name, value in headers:
            if name.lower() == _SESSION:
                self.session = value
        await self.inner.start(status, headers)

    async def send(self, data: bytes) -> None:
        await self.inner.send(data)
        self.sent += len(data)

    async def end(self) -> None:
        await self.inner.end()


class HttpAccessLog:
    """``handler``, with one log line per request (see the module's docstring).

    Args:
        handler: What answers the requests.
        logger: Where the lines go (default: ``logging.getLogger("mcp_trio.access.http")``).
        level: Their level (default INFO).
    """

    def __init__(
        self, handler: Handler, logger: logging.Logger | None = None, level: int = logging.INFO
    ) -> None:
        self.handler = handler
        self.max_body_size = handler.max_body_size
        self.logger = logger if logger is not None else logging.getLogger(HTTP_ACCESS_LOGGER)
        self.level = level

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        if not self.logger.isEnabledFor(self.level):
            await self.handler.handle(request, responder)
            return
        recording = _Recording(responder)
        start = time.perf_counter()
        try:
            await self.handler.handle(request, recording)
        finally:
            self._write(request, recording, (time.perf_counter() - start) * 1000.0)

    def _write(self, request: HttpRequest, recording: _Recording, ms: float) -> None:
        session = request.headers.get(_SESSION) or recording.session
        status = "-" if recording.status is None else str(recording.status)
        extra = {
            "http_method": request.method,
            "http_path": request.path,
            "http_status": recording.status,
            "http_bytes": recording.sent,
            "duration_ms": ms,
            "http_client": request.client,
            "mcp_session": session,
        }
        who = "".join(
            f" {key}={value}" for key, value in (("client", request.client), ("session", session)) if value
        )
        self.logger.log(
            self.level,
            "%s %s %s %d B %.2f ms%s",
            request.method,
            request.path or "/",
            status,
            recording.sent,
            ms,
            who,
            extra=extra,
        )
