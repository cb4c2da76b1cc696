"""What every part of the Streamable HTTP client uses: its settings, its HTTP requests.

:class:`_Settings` holds the options the channel was made with (checked
there).  :class:`_Sender` owns the connections (the pool, and the limit on
requests in flight) and the credentials: every HTTP request to the server goes
through :meth:`_Sender.send` (``auth`` headers, 401/403 answered at most
``_AUTH_RETRIES`` times) with the headers :meth:`_Sender.headers` builds (the
user's headers never replace the transport's own).  :class:`_Exchange` is the
record of one request's POST.  The parts built on them (the session state, the
incoming messages, the exchanges, the GET stream, the legacy client) have
modules of their own; :class:`~mcp_trio.transports.http.client.HTTPClientChannel`
composes them.
"""

from __future__ import annotations

import logging
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Protocol

import trio

from ...._version import __version__
from ..._base import RequestId
from ._http11 import Failure, Headers, Pool, Response, Target, excerpt
from ._peek import _Message
from ._proxy import choose_proxy

log = logging.getLogger("mcp_trio.http")


class HTTPAuth(Protocol):
    """What ``auth=`` plugs in: credentials for every request to the endpoint.

    :meth:`headers` gives the headers to add (``Authorization``, ``DPoP``) for
    one request.  When the server answers 401 or 403, :meth:`challenge` is
    told (with what was sent) and may authorize, refresh or step up; it
    returns True to have the request sent again, False to give up.  An
    exception it raises becomes the request's failure (reason ``"auth"``).
    The MCP session never sees any of it.
    """

    async def headers(self, method: str, url: str) -> list[tuple[str, str]]: ...

    async def challenge(
        self, status: int, headers: Mapping[str, str], sent: list[tuple[str, str]]
    ) -> bool: ...


_ERROR_BODY_LIMIT = 64 * 1024  # bytes of an HTTP error body read for the message
_AUTH_RETRIES = 3  # times one request is sent again after a 401/403 its ``auth`` answered
_LINGER = 1.0  # seconds to wait for a stream to end after its last response
_MIN_POLL = 0.01  # floor on a reconnection delay
_USER_AGENT = f"mcp-trio/{__version__}"
_ACCEPT_BOTH = "application/json, text/event-stream"
_RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "content-type",
        "accept",
        "transfer-encoding",
        "connection",
        "mcp-session-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "last-event-id",
    }
)
_SESSION_ID = re.compile(r"[\x21-\x7e]+")


class _Renewed(Exception):
    """The session was renewed after a 404: send the message again."""


class _Exchange:
    """One POST of a request (or batch) and the streams that carry its answer."""

    __slots__ = (
        "data",
        "msg",
        "remaining",
        "scope",
        "sending",
        "abandoned",
        "modern",
        "last_event_id",
        "retry",
        "dropped",
    )

    def __init__(self, data: bytes, msg: _Message, modern: bool) -> None:
        self.data = data
        self.msg = msg
        self.remaining: set[RequestId] = set(msg.methods)
        self.scope = trio.CancelScope()
        self.sending = False
        self.abandoned = False
        self.modern = modern
        self.last_event_id: str | None = None
        self.retry: int | None = None
        self.dropped: str | None = None  # how the last response stream broke, if it did


class _Settings:
    """The options a channel was made with, checked; read by all its parts, changed by none."""

    __slots__ = (
        "timeout",
        "max_message_size",
        "reconnect_delay",
        "reconnect_attempts",
        "listen",
        "terminate_on_close",
        "legacy_fallback",
        "close_timeout",
        "renew_sessions",
        "max_renewals",
    )

    def __init__(
        self,
        *,
        timeout: float,
        max_message_size: int,
        reconnect_delay: float,
        reconnect_attempts: int,
        listen: bool,
        terminate_on_close: bool,
        legacy_fallback: bool,
        close_timeout: float,
        renew_sessions: bool,
        max_renewals: int,
    ) -> None:
        if max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        if reconnect_attempts < 1:
            raise ValueError("reconnect_attempts must be at least 1")
        self.timeout = timeout
        self.max_message_size = max_message_size
        self.reconnect_delay = reconnect_delay
        self.reconnect_attempts = reconnect_attempts
        self.listen = listen
        self.terminate_on_close = terminate_on_close
        self.legacy_fallback = legacy_fallback
        self.close_timeout = close_timeout
        self.renew_sessions = renew_sessions
        self.max_renewals = max_renewals

    def delay(self, retry: int | None) -> float:
        """Seconds to wait before reopening a stream: the server's ``retry``, else ours."""
        return max(_MIN_POLL, retry / 1000 if retry is not None else self.reconnect_delay)


class _Sender:
    """Every HTTP request to the server: the connections, the credentials, the headers."""

    __slots__ = ("url", "target", "pool", "limiter", "_auth", "_user_headers")

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None,
        timeout: float,
        read_timeout: float | None,
        ssl_context: ssl.SSLContext | None,
        max_connections: int,
        auth: HTTPAuth | None,
        proxy: str | None,
        trust_env: bool,
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.target = Target(url)
        self.url = url
        extra = list((headers or {}).items())
        for name, _ in extra:
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"the transport sets the {name!r} header itself")
        self._user_headers = extra
        self._auth = auth
        self.pool = Pool(
            self.target,
            ssl_context=ssl_context,
            connect_timeout=timeout,
            read_timeout=read_timeout,
            max_idle=max_connections,
            proxy=choose_proxy(self.target.scheme, self.target.host, self.target.port, proxy, trust_env),
        )
        #: One connection per request in flight (a request's task holds it until its answer is in).
        self.limiter = trio.CapacityLimiter(max_connections)

    async def send(self, method: str, target: str, headers: Headers, body: bytes | None = None) -> Response:
        """Every request to the server goes through here.

        With ``auth``, its headers are added, and a 401/403 that it answers
        (by authorizing, refreshing or stepping up) sends the request again,
        at most ``_AUTH_RETRIES`` times; the last refusal is returned as is.
        """
        auth = self._auth
        if auth is None:
            return await self.pool.request(method, target, headers, body)
        url = urllib.parse.urljoin(self.url, target)
        for _ in range(_AUTH_RETRIES):
            sent = await auth.headers(method, url)
            resp = await self.pool.request(method, target, headers + list(sent), body)
            if resp.status not in (401, 403):
                return resp
            text = excerpt(await resp.read_prefix(_ERROR_BODY_LIMIT))
            resp.finish()
            try:
                retry = await auth.challenge(resp.status, resp.headers, sent)
            except Exception as exc:  # the auth's own failure: the request's error
                log.debug("authorization failed", exc_info=True)
                raise Failure("auth", f"authorization failed: {exc}", status=resp.status) from None
            if not retry:
                raise Failure(
                    "auth",
                    f"{resp.describe()} from {self.url}" + (f": {text}" if text else ""),
                    status=resp.status,
                    body=text,
                )
        sent = await auth.headers(method, url)
        return await self.pool.request(method, target, headers + list(sent), body)

    def headers(
        self,
        *,
        accept: str,
        session_id: str | None,
        body: bytes | None = None,
        version: str | None = None,
        extra: Headers | None = None,
    ) -> Headers:
        """The headers of one request: the transport's own, ``extra``, then the user's."""
        headers: Headers = [
            ("Host", self.target.host_header),
            ("User-Agent", _USER_AGENT),
            ("Accept", accept),
        ]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
            headers.append(("Content-Length", str(len(body))))
        if session_id is not None:
            headers.append(("Mcp-Session-Id", session_id))
        if version is not None:
            headers.append(("MCP-Protocol-Version", version))
        if extra:
            headers.extend(extra)
        headers.extend(self._user_headers)
        return headers


class _Tasks:
    """The channel's tasks (exchanges, streams): their nursery, and whether they were stopped."""

    __slots__ = ("_scope", "_nursery", "closed")

    def __init__(self) -> None:
        self._scope = trio.CancelScope()
        self._nursery: trio.Nursery | None = None
        self.closed = False  # stopped for good: the channel was closed

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the tasks until :meth:`stop` (the channel's lifetime)."""
        with self._scope:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()

    @property
    def nursery(self) -> trio.Nursery:
        assert self._nursery is not None, "the channel's tasks run from open_http_client"
        return self._nursery

    def stop(self) -> None:
        self.closed = True
        self._scope.cancel()
