"""Streamable HTTP client transport (and the legacy HTTP+SSE client), on h11 over trio streams.

:func:`open_http_client` yields a :class:`HTTPClientChannel`: a
``trio.abc.Channel[Frame]`` that the session engine drives like any other
transport::

    async with open_http_client("http://127.0.0.1:8000/mcp") as channel:
        async with open_client(channel) as client:
            result = await client.call_tool("add", {"a": 2, "b": 2})

How messages travel:

* Every outgoing message is one POST to the endpoint (``Accept:
  application/json, text/event-stream``).  A request's POST runs in its own
  task, so several requests are in flight at once, over a small pool of
  keep-alive connections (``max_connections``).  Notifications and responses
  are posted in the sending task, so they reach the server in order.
* A request's answer comes back as JSON (one message or a batch, split into
  frames) or as an SSE stream whose events are frames; the stream's
  connection stays busy until the stream ends.
* The channel reads what it carries to learn the session: the
  ``Mcp-Session-Id`` of the ``initialize`` response (sent on every later
  request), the negotiated ``protocolVersion`` (the ``MCP-Protocol-Version``
  header), and for 2026-07-28 requests the version in each request's
  ``_meta`` plus the ``Mcp-Method`` / ``Mcp-Name`` headers and the
  ``Mcp-Param-*`` headers a tool's ``x-mcp-header`` annotations ask for
  (tools whose annotations are invalid are removed from ``tools/list``
  results, as that revision requires).
* Up to 2025-11-25, once the session is initialized, a GET stream listens
  for server-initiated messages (405 means the server offers none) and is
  reopened after drops.  An SSE stream that ends before the response to its
  request arrived is resumed with GET + ``Last-Event-ID`` after the server's
  ``retry`` delay (``reconnect_delay`` if it set none); consecutive failed
  attempts are bounded by ``reconnect_attempts``.  2026-07-28 has neither.
* With ``auth`` (an :class:`HTTPAuth`, e.g. :class:`mcp_trio.auth.client.OAuthClient`)
  every request carries its headers; a 401/403 it answers is sent again, at
  most ``_AUTH_RETRIES`` times, and one it cannot answer fails the request
  (reason ``"auth"``).
* Through an HTTP proxy (``proxy=``, or ``HTTP_PROXY`` / ``HTTPS_PROXY``
  unless ``NO_PROXY`` covers the host; ``trust_env=False`` ignores them):
  ``http://`` requests in absolute form, ``https://`` through a ``CONNECT``
  tunnel (see :mod:`._proxy`).
* On close, the session is ended with DELETE (a 405 answer is fine).  At
  2026-07-28, cancelling a request closes its response stream instead of
  posting ``notifications/cancelled``, as that revision specifies.

Failures never hang a request.  A request whose exchange fails gets a
JSON-RPC error response for its id, so ``Session.request`` raises
:class:`~mcp_trio.McpError` with code :data:`TRANSPORT_ERROR` and ``data``
like ``{"transport": "http", "reason": "http_status", "status": 500,
"body": "..."}``.  Reasons: ``connect`` (the server cannot be reached),
``connection`` (the connection broke, or stayed silent past ``read_timeout``),
``http_status``, ``redirect`` (not followed), ``too_large`` (over
``max_message_size``), ``bad_response`` (not a valid answer), ``bad_request``
(the message could not be put in an HTTP request), ``stream_ended`` (no
response and no way to resume) and ``session_expired``.
A JSON-RPC error the server put in an HTTP error body is delivered as is.

Session expiry: when the server answers 404 to a message that carried the
session id, the server has forgotten the session, and the specification says
the client starts a new one.  The channel does so by itself: it sends the
session's ``initialize`` again (and ``notifications/initialized``), takes the
new ``Mcp-Session-Id`` and sends the refused message again.  The engine's
session goes on; what the server kept for the old session (resource
subscriptions, the log level, anything a handler stored) is gone.  If the
server answers the new ``initialize`` with another protocol version or not at
all, or the new session is refused too (at most ``max_renewals`` times per
channel; ``renew_sessions=False`` turns renewal off), the session is gone for
good: every pending request fails with reason ``session_expired``,
:attr:`HTTPClientChannel.session_expired` becomes true and the channel ends
(``receive`` raises ``EndOfChannel``), so the engine closes the session and
later calls raise ``ConnectionClosed``.

Legacy HTTP+SSE (2024-11-05): :func:`open_legacy_sse_client` opens the SSE
stream, waits for the ``endpoint`` event and posts every message there; the
channel ends with the stream.  ``open_http_client`` switches to that
transport by itself (unless ``legacy_fallback=False``) when the ``initialize`` POST is refused
with 400, 404 or 405 and no JSON-RPC error, as the specification's backwards
compatibility section describes.

The parts, each an object owning its state, which :class:`HTTPClientChannel`
composes: :mod:`._channel` the settings and the sender of every HTTP request
(connections, credentials, headers), :mod:`._session_state` what the channel knows
of the session (id, version, the tools' header annotations), :mod:`._inbox`
the incoming messages and the requests waiting for an answer,
:mod:`._lifecycle` the session's renewal and expiry, :mod:`._exchanges` a
request's exchange (and the POST of a notification), :mod:`._get_stream` the GET
stream, :mod:`._legacy` the legacy client; :mod:`._peek` reads the outgoing
messages and :mod:`._http11` is the connection pool.
"""

from __future__ import annotations

import inspect
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, ParamSpec, TypedDict, TypeVar, Unpack

import trio

from ..._base import ChannelTraits, Frame
from ...stdio import DEFAULT_MAX_MESSAGE_SIZE
from ._channel import _ACCEPT_BOTH, _ERROR_BODY_LIMIT, _Exchange, _Sender, _Settings, _Tasks, log
from ._channel import HTTPAuth as HTTPAuth
from ._exchanges import _Exchanges
from ._get_stream import _GetStream
from ._http11 import TRANSPORT_ERROR, Failure
from ._inbox import _Inbox
from ._legacy import _Legacy
from ._lifecycle import _Lifecycle
from ._peek import _is_modern, _Message, _peek
from ._session_state import _SessionState

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "TRANSPORT_ERROR",
    "HTTPAuth",
    "HTTPClientChannel",
    "HTTPClientOptions",
    "LegacySSEOptions",
    "open_http_client",
    "open_legacy_sse_client",
]


class HTTPClientChannel(trio.abc.Channel[Frame], ChannelTraits):
    """The client side of Streamable HTTP (or legacy HTTP+SSE), as a message channel.

    Make one with :func:`open_http_client` or :func:`open_legacy_sse_client`.
    What it learnt of the session (:attr:`session_id`, :attr:`protocol_version`,
    :attr:`session_expired`, :attr:`renewals`, :attr:`transport`) and the options
    it was made with are properties, read-only but for :attr:`session_id`.

    Attributes:
        url: The MCP endpoint (for legacy HTTP+SSE: the SSE endpoint).
    """

    # The channel routes each message to the part that owns what it needs: the
    # sender (connections, credentials), the session state (id, version, headers),
    # the inbox (incoming messages, requests waiting), the lifecycle (renewal,
    # expiry), the exchanges (POSTs and their streams), the GET stream, the legacy client.

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        read_timeout: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = 10,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        reconnect_delay: float = 1.0,
        reconnect_attempts: int = 3,
        listen: bool = True,
        terminate_on_close: bool = True,
        legacy_fallback: bool = True,
        close_timeout: float = 2.0,
        renew_sessions: bool = True,
        max_renewals: int = 3,
        auth: HTTPAuth | None = None,
        proxy: str | None = None,
        trust_env: bool = True,
    ) -> None:
        sender = _Sender(
            url,
            headers=headers,
            timeout=timeout,
            read_timeout=read_timeout,
            ssl_context=ssl_context,
            max_connections=max_connections,
            auth=auth,
            proxy=proxy,
            trust_env=trust_env,
        )
        settings = _Settings(
            timeout=timeout,
            max_message_size=max_message_size,
            reconnect_delay=reconnect_delay,
            reconnect_attempts=reconnect_attempts,
            listen=listen,
            terminate_on_close=terminate_on_close,
            legacy_fallback=legacy_fallback,
            close_timeout=close_timeout,
            renew_sessions=renew_sessions,
            max_renewals=max_renewals,
        )
        self.url = url
        self._settings = settings
        self._sender = sender
        self._pool = sender.pool  # (the connections, for tests and diagnostics)
        self._tasks = tasks = _Tasks()
        self._state = state = _SessionState(sender)
        self._inbox = inbox = _Inbox(state)
        self._lifecycle = lifecycle = _Lifecycle(settings, sender, state, inbox)
        self._legacy = legacy = _Legacy(settings, sender, inbox, tasks)
        self._exchanges = _Exchanges(settings, sender, state, inbox, lifecycle, legacy, tasks)
        self._get_stream = _GetStream(settings, sender, state, inbox, lifecycle, tasks)

    # ------------------------------------------------------------ what it says about itself

    # ChannelTraits declares session_id a plain attribute; here the session state owns it.
    @property
    def session_id(self) -> str | None:
        """The ``Mcp-Session-Id`` the server assigned, if any."""
        return self._state.session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:  # pyright: ignore[reportIncompatibleVariableOverride]
        self._state.session_id = value

    @property
    def protocol_version(self) -> str | None:
        """The negotiated revision as seen on the wire (``None`` before it is known)."""
        return self._state.protocol_version

    @property
    def session_expired(self) -> bool:
        """True once the server answered 404 for the session and it could not be renewed."""
        return self._lifecycle.expired

    @property
    def renewals(self) -> int:
        """How many times the session was renewed after a 404."""
        return self._lifecycle.renewals

    @property
    def transport(self) -> str:
        """``"streamable-http"``, or ``"sse"`` (legacy HTTP+SSE, possibly after fallback)."""
        return "streamable-http" if self._legacy.target is None else "sse"

    @property
    def _legacy_target(self) -> str | None:
        """The legacy message endpoint the ``endpoint`` event named (None: Streamable HTTP)."""
        return self._legacy.target

    # ------------------------------------------------------------ lifetime

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._tasks.run(task_status=task_status)

    async def _connect_legacy(self) -> None:
        await self._legacy.connect()

    async def aclose(self) -> None:
        """Stop all exchanges, end the session with DELETE (bounded), close the connections."""
        if self._tasks.closed:
            return
        self._tasks.stop()
        self._lifecycle.scope.cancel()
        if (
            self._state.session_id is not None
            and self._settings.terminate_on_close
            and not self._lifecycle.expired
            and self._legacy.target is None
        ):
            with trio.CancelScope(shield=True), trio.move_on_after(self._settings.close_timeout):
                await self._delete_session()
        self._sender.pool.close()
        self._inbox.close()
        await trio.lowlevel.checkpoint()

    async def _delete_session(self) -> None:
        session_id = self._state.session_id
        try:
            headers = self._state.headers(accept=_ACCEPT_BOTH, version=self._state.protocol_version)
            resp = await self._sender.send("DELETE", self._sender.target.path, headers)
        except Failure as exc:
            log.debug("DELETE of session %s failed: %s", session_id, exc)
            return
        try:
            if resp.status == 405:
                log.debug("the server does not let clients end sessions (405)")
            elif not 200 <= resp.status < 300 and resp.status != 404:
                log.info("DELETE of session %s answered %s", session_id, resp.describe())
            await resp.read_prefix(_ERROR_BODY_LIMIT)
        finally:
            resp.finish()

    # ------------------------------------------------------------ receiving and sending

    async def receive(self) -> Frame:
        return await self._inbox.receive()

    async def send(self, value: Frame) -> None:
        if self._tasks.closed:
            raise trio.ClosedResourceError("the HTTP channel was closed")
        if self._inbox.ended is not None:
            raise trio.BrokenResourceError(self._inbox.ended)
        switching = self._legacy.switching
        if switching is not None:
            await switching.wait()
        data = value.data
        msg = _peek(data)
        self._state.note_sent(data, msg)
        if self._legacy.target is not None:
            if msg.cancel_id is not None and msg.method == "notifications/cancelled":
                self._inbox.forget(msg.cancel_id)
            await self._legacy.post(data, msg)
            return
        if msg.kind == "notification" and msg.method == "notifications/cancelled":
            await self._cancel(data, msg)
            return
        if msg.methods:
            self._exchanges.start(_Exchange(data, msg, _is_modern(msg.version)))
            return
        if await self._exchanges.post(data, msg) and msg.method == "notifications/initialized":
            self._get_stream.start()

    async def _cancel(self, data: bytes, msg: _Message) -> None:
        """An outgoing ``notifications/cancelled``: stop the exchange; tell the server if needed."""
        id = msg.cancel_id
        exchange = self._inbox.exchange_for(id) if id is not None else None
        if exchange is None or id is None:
            return  # nothing in flight for it (already answered)
        if exchange.modern or not exchange.sending:
            # At 2026-07-28 closing the response stream is the cancellation
            # (no such notification exists on HTTP); a request still waiting
            # for a connection never reached the server.
            self._inbox.abandon(exchange, id)
            return
        # Up to 2025-11-25 the notification is the signal (a disconnect is
        # not): post it, then stop listening for the answer.
        await self._exchanges.post(data, msg)
        self._inbox.abandon(exchange, id)

    # ------------------------------------------------------------ the options it was made with

    @property
    def timeout(self) -> float:
        """Seconds allowed to connect, and for exchanges that are not a request's answer."""
        return self._settings.timeout

    @property
    def max_message_size(self) -> int:
        """Limit for one incoming message, in bytes."""
        return self._settings.max_message_size

    @property
    def reconnect_delay(self) -> float:
        """Seconds before resuming a stream when the server set no ``retry``."""
        return self._settings.reconnect_delay

    @property
    def reconnect_attempts(self) -> int:
        """Failed attempts in a row after which resuming a stream stops."""
        return self._settings.reconnect_attempts

    @property
    def listen(self) -> bool:
        """Whether the GET stream for server-initiated messages is opened."""
        return self._settings.listen

    @property
    def terminate_on_close(self) -> bool:
        """Whether the session is ended with DELETE on close."""
        return self._settings.terminate_on_close

    @property
    def legacy_fallback(self) -> bool:
        """Whether a refused ``initialize`` POST switches to legacy HTTP+SSE."""
        return self._settings.legacy_fallback

    @property
    def close_timeout(self) -> float:
        """Seconds allowed for the DELETE on close."""
        return self._settings.close_timeout

    @property
    def renew_sessions(self) -> bool:
        """Whether a session the server forgot (404) is renewed."""
        return self._settings.renew_sessions

    @property
    def max_renewals(self) -> int:
        """Sessions renewed at most, over the channel's life."""
        return self._settings.max_renewals


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


@asynccontextmanager
async def _serve(channel: HTTPClientChannel, legacy: bool) -> AsyncIterator[HTTPClientChannel]:
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(channel._run)
            try:
                if legacy:
                    try:
                        await channel._connect_legacy()
                    except Failure as exc:
                        raise ConnectionError(f"cannot open the SSE stream at {channel.url}: {exc}") from None
                yield channel
            finally:
                with trio.CancelScope(shield=True):
                    await channel.aclose()
    except BaseExceptionGroup as group:
        raise _unwrap(group) from None


class LegacySSEOptions(TypedDict, total=False):
    """The options of :func:`open_legacy_sse_client`, as those of :func:`open_http_client`."""

    headers: Mapping[str, str] | None
    timeout: float
    read_timeout: float | None
    ssl_context: ssl.SSLContext | None
    max_message_size: int
    proxy: str | None
    trust_env: bool


class HTTPClientOptions(LegacySSEOptions, total=False):
    """The options of :func:`open_http_client` (the parameters of :class:`HTTPClientChannel`),
    as a ``TypedDict``: what ``connect_http(url, http_options={...})`` takes."""

    max_connections: int
    reconnect_delay: float
    reconnect_attempts: int
    listen: bool
    terminate_on_close: bool
    legacy_fallback: bool
    close_timeout: float
    renew_sessions: bool
    max_renewals: int
    auth: HTTPAuth | None


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _takes_parameters_of(
    make: Callable[_P, Any],
) -> Callable[[Callable[..., _T]], Callable[_P, _T]]:
    """Give the decorated function the parameters of ``make`` (for type checkers and ``help``)."""

    def take(function: Callable[..., _T]) -> Callable[_P, _T]:
        parameters = list(inspect.signature(make).parameters.values())
        signature = inspect.signature(function).replace(parameters=parameters)
        function.__signature__ = signature  # type: ignore[attr-defined]
        return function

    return take


@_takes_parameters_of(HTTPClientChannel)
@asynccontextmanager
async def open_http_client(url: str, **options: Any) -> AsyncIterator[HTTPClientChannel]:
    """A Streamable HTTP channel to the MCP endpoint ``url``, open for the ``async with`` block.

    Use it like any channel: ``async with open_client(channel) as client``
    or ``open_session(channel, role="client", ...)``.  Nothing is sent until
    the engine sends its first message.

    Args:
        url: The MCP endpoint, ``http://`` or ``https://``.
        headers: Extra headers for every HTTP request (``Authorization`` ...).
        timeout: Seconds allowed to connect (TCP and TLS) and for exchanges
            that are not a request's answer (a notification's 202, opening a
            stream, DELETE).  How long a request may take is the engine's
            ``timeout``.
        read_timeout: Seconds without a byte from the server after which a
            connection counts as broken (``None``: no limit).
        ssl_context: For ``https``: the TLS settings (default:
            ``ssl.create_default_context()``).
        max_connections: Requests in flight at once (each holds one
            connection while its answer streams), and idle connections kept.
        max_message_size: Limit for one incoming message (JSON body or SSE
            event), in bytes.
        reconnect_delay: Seconds to wait before resuming a stream when the
            server set no ``retry``.
        reconnect_attempts: Failed attempts in a row after which resuming a
            response stream (or reopening the GET stream) stops.
        listen: Open the GET stream for server-initiated messages (up to
            2025-11-25).
        terminate_on_close: Send DELETE for the session on close.
        legacy_fallback: Switch to the 2024-11-05 HTTP+SSE transport when the
            ``initialize`` POST is refused (400/404/405 without a JSON-RPC
            error) and a GET of the same URL opens an SSE stream with an
            ``endpoint`` event (default); False: report the refusal.
        close_timeout: Seconds allowed for the DELETE on close.
        renew_sessions: After a 404 for the session, start a new one and send
            the refused message again (see the module docs); False: end.
        max_renewals: Sessions renewed at most, over the channel's life.
        auth: Credentials for every request (see :class:`HTTPAuth`;
            :class:`mcp_trio.auth.client.OAuthClient` is the OAuth 2.1
            implementation).
        proxy: An ``http://`` (or ``https://``) proxy for every request (credentials in the
            URL become ``Proxy-Authorization: Basic``), whatever the
            environment says.
        trust_env: Without ``proxy``, go through the proxy that
            ``HTTP_PROXY`` / ``HTTPS_PROXY`` (or their lower-case forms) name
            for the URL's scheme, unless ``NO_PROXY`` covers its host (loopback
            addresses included: list them there); False: connect directly.
            Through a proxy, ``http://`` requests are sent in absolute form and
            ``https://`` connections tunnelled with ``CONNECT``.  TLS
            verification uses the system's CA settings either way
            (``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` are honoured by the default
            ``ssl_context``).
    """
    async with _serve(HTTPClientChannel(url, **options), legacy=False) as opened:
        yield opened


@asynccontextmanager
async def open_legacy_sse_client(
    url: str, **options: Unpack[LegacySSEOptions]
) -> AsyncIterator[HTTPClientChannel]:
    """A channel over the deprecated HTTP+SSE transport (protocol 2024-11-05).

    Opens the SSE stream at ``url`` and waits (up to ``timeout``) for its
    ``endpoint`` event, which must name a URL on the same origin; every
    message is then POSTed there.  The channel ends when the stream does.
    ``options`` (``headers``, ``timeout``, ``read_timeout``, ``ssl_context``,
    ``max_message_size``, ``proxy``, ``trust_env``) mean what they mean for
    :func:`open_http_client`.

    Raises:
        ConnectionError: the stream could not be opened or sent no endpoint.
    """
    channel = HTTPClientChannel(url, listen=False, terminate_on_close=False, **options)
    async with _serve(channel, legacy=True) as opened:
        yield opened
