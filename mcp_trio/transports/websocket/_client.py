"""The client side of MCP over WebSocket: :func:`open_websocket_client`.

It connects (``ws://`` or ``wss://``, through the HTTP client's connection
:class:`Pool` for TCP and TLS), offers the ``mcp`` subprotocol, hands a 401 /
403 refusal to ``auth`` and tries again on a new connection (at most
``_AUTH_RETRIES`` times), and turns every failure to open into a
:class:`WebSocketConnectError`.  The open connection is a
:class:`._wsproto_channel._WsprotoChannel` whose reader runs shielded, so
that leaving the block closes cleanly (1000) even when it is cancelled.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, TypedDict, cast

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, RejectConnection, RejectData, Request
from wsproto.utilities import RemoteProtocolError

from ..http.client._channel import _AUTH_RETRIES, HTTPAuth
from ..http.client._http11 import Failure, Pool, Target, close_stream, excerpt
from ..http.client._proxy import choose_proxy
from ..stdio import DEFAULT_MAX_MESSAGE_SIZE
from ._channel import (
    _READ_SIZE,
    _REJECT_BODY_LIMIT,
    SUBPROTOCOL,
    WebSocketChannel,
    _check_limits,
    _joined_headers,
    log,
)
from ._wsproto_channel import _WsprotoChannel

_RESERVED_HEADERS = frozenset(
    {
        "host",
        "upgrade",
        "connection",
        "sec-websocket-key",
        "sec-websocket-version",
        "sec-websocket-protocol",
        "sec-websocket-extensions",
        "sec-websocket-accept",
    }
)


class WebSocketConnectError(Exception):
    """The WebSocket could not be opened: no connection, a TLS failure, or a
    refused or invalid handshake.

    Attributes:
        status: The HTTP status of a refused handshake (``None`` otherwise).
        body: The start of the refusal's body (at most 64 KiB).
        headers: The refusal's headers (lower-case names, repeated ones
            joined with ``", "``): ``WWW-Authenticate`` for a 401 / 403.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})


def _target(url: str) -> Target:
    scheme, sep, rest = url.partition("://")
    http_scheme = {"ws": "http", "wss": "https"}.get(scheme.lower()) if sep else None
    if http_scheme is None:
        raise ValueError(f"not a ws(s) URL: {url!r}")
    return Target(f"{http_scheme}://{rest}")


async def _client_handshake(
    stream: trio.abc.Stream, target: Target, extra_headers: list[tuple[bytes, bytes]]
) -> tuple[WSConnection, str | None]:
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(
        ws.send(
            Request(
                host=target.host_header,
                target=target.path,
                subprotocols=[SUBPROTOCOL],
                extra_headers=extra_headers,
            )
        )
    )
    status: int | None = None
    refusal_headers: dict[str, str] = {}
    body = bytearray()
    finished = False
    while not finished:
        data = await stream.receive_some(_READ_SIZE)
        try:
            ws.receive_data(cast(bytes, data) or None)
        except RemoteProtocolError as exc:
            raise WebSocketConnectError(
                f"invalid WebSocket handshake answer from {target.url}: {exc}"
            ) from None
        for event in ws.events():
            if isinstance(event, AcceptConnection):
                return ws, event.subprotocol
            if isinstance(event, RejectConnection):
                status = event.status_code
                refusal_headers = _joined_headers(event.headers)
                finished = not event.has_body
            elif isinstance(event, RejectData):
                if len(body) < _REJECT_BODY_LIMIT:
                    body += event.data[: _REJECT_BODY_LIMIT - len(body)]
                finished = event.body_finished
        if not data:
            break
    if status is None:
        raise WebSocketConnectError(f"{target.url} closed the connection during the WebSocket handshake")
    shown = excerpt(bytes(body))
    raise WebSocketConnectError(
        f"{target.url} refused the WebSocket: HTTP {status}{': ' + shown if shown else ''}",
        status=status,
        body=bytes(body),
        headers=refusal_headers,
    )


async def _connect(
    pool: Pool,
    url: str,
    target: Target,
    extra: list[tuple[bytes, bytes]],
    connect_timeout: float,
) -> tuple[trio.abc.Stream, WSConnection, str | None]:
    """One connection and opening handshake, within ``connect_timeout``."""
    deadline = trio.current_time() + connect_timeout
    try:
        stream = (await pool._connect()).stream
    except Failure as exc:
        raise WebSocketConnectError(exc.message) from None
    handshake = None
    try:
        with trio.move_on_at(deadline):
            handshake = await _client_handshake(stream, target, extra)
        if handshake is None:
            raise WebSocketConnectError(
                f"{url} did not complete the WebSocket handshake within {connect_timeout} s"
            )
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
        close_stream(stream)
        raise WebSocketConnectError(
            f"the connection to {url} broke during the WebSocket handshake: {exc}"
        ) from None
    except BaseException:
        close_stream(stream)
        raise
    ws, subprotocol = handshake
    return stream, ws, subprotocol


async def _connect_with_auth(
    pool: Pool,
    url: str,
    target: Target,
    extra: list[tuple[bytes, bytes]],
    connect_timeout: float,
    auth: HTTPAuth,
) -> tuple[trio.abc.Stream, WSConnection, str | None]:
    """:func:`_connect` with ``auth``'s headers; a 401 / 403 that ``auth``
    answers (by authorizing, refreshing or stepping up) makes it try again on
    a new connection, at most ``_AUTH_RETRIES`` times."""
    for attempt in range(_AUTH_RETRIES + 1):
        sent = list(await auth.headers("GET", target.url))
        credentials = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in sent]
        try:
            return await _connect(pool, url, target, extra + credentials, connect_timeout)
        except WebSocketConnectError as exc:
            if exc.status not in (401, 403) or attempt == _AUTH_RETRIES:
                raise
            try:
                retry = await auth.challenge(exc.status, exc.headers, sent)
            except Exception as problem:  # the auth's own failure: the connection's error
                log.debug("authorization failed", exc_info=True)
                raise WebSocketConnectError(
                    f"authorization failed: {problem}",
                    status=exc.status,
                    body=exc.body,
                    headers=exc.headers,
                ) from None
            if not retry:
                raise
    raise AssertionError("unreachable")  # the last attempt returns or raises


class WebSocketClientOptions(TypedDict, total=False):
    """The options of :func:`open_websocket_client` after the URL, as a ``TypedDict``: what
    ``connect_websocket(url, websocket_options={...})`` takes."""

    headers: Mapping[str, str] | None
    origin: str | None
    ssl_context: ssl.SSLContext | None
    connect_timeout: float
    max_message_size: int
    keepalive_interval: float | None
    keepalive_timeout: float
    close_timeout: float
    inbound_buffer: int
    auth: HTTPAuth | None
    proxy: str | None
    trust_env: bool


@asynccontextmanager
async def open_websocket_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    origin: str | None = None,
    ssl_context: ssl.SSLContext | None = None,
    connect_timeout: float = 30.0,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    keepalive_interval: float | None = 20.0,
    keepalive_timeout: float = 20.0,
    close_timeout: float = 5.0,
    inbound_buffer: int = 16,
    auth: HTTPAuth | None = None,
    proxy: str | None = None,
    trust_env: bool = True,
) -> AsyncIterator[WebSocketChannel]:
    """Connect to the MCP WebSocket endpoint ``url`` (``ws://`` or ``wss://``).

    Args:
        url: The endpoint.
        headers: Extra handshake headers.
        origin: An ``Origin`` header to send (browsers always send one;
            programs usually none).
        ssl_context: For ``wss://`` (default: the system's trust store).
        connect_timeout: Seconds for the connection, TLS and the handshake.
        max_message_size: Bytes in one incoming message (closed with 1009 beyond).
        keepalive_interval: Seconds between pings (``None``: no pings).
        keepalive_timeout: Seconds a pong may take before the connection is dropped.
        close_timeout: Seconds to wait for the server's close frame on exit.
        inbound_buffer: Messages read ahead of the session.
        auth: Credentials for the handshake (an
            :class:`~mcp_trio.transports.http.client.HTTPAuth`, e.g.
            :class:`mcp_trio.auth.client.OAuthClient`): its headers go on the
            upgrade request (for the URL's ``http(s)://`` form, which is how
            the server names itself as an OAuth resource); a 401 / 403 refusal
            is handed to it, and when it has authorized, refreshed or stepped
            up, the handshake is tried again on a new connection (at most 3
            times).  Authorizing is not bounded by ``connect_timeout``, which
            applies to each attempt.
        proxy: An ``http://`` (or ``https://``) proxy to tunnel through (``CONNECT``), whatever
            the environment says.
        trust_env: Without ``proxy``, use the proxy ``HTTPS_PROXY`` (wss) or
            ``HTTP_PROXY`` (ws) names unless ``NO_PROXY`` covers the host, as
            the HTTP client does (see :mod:`mcp_trio.transports.http.client`);
            False: connect directly.

    Raises:
        WebSocketConnectError: the connection could not be opened (the message
            says why; ``status`` is set when the server refused the handshake).
        ValueError: ``url`` is not a ``ws(s)://`` URL, or a header is one the
            handshake sets itself.
    """
    target = _target(url)
    _check_limits(max_message_size, keepalive_interval, keepalive_timeout, close_timeout)
    extra: list[tuple[bytes, bytes]] = []
    for name, value in (headers or {}).items():
        if name.lower() in _RESERVED_HEADERS:
            raise ValueError(f"the WebSocket handshake sets {name!r} itself")
        extra.append((name.encode("latin-1"), value.encode("latin-1")))
    if origin is not None:
        extra.append((b"origin", origin.encode("latin-1")))
    pool = Pool(
        target,
        ssl_context=ssl_context if target.scheme == "https" else None,  # wss:// only
        connect_timeout=connect_timeout,
        read_timeout=None,
        max_idle=0,
        proxy=choose_proxy(target.scheme, target.host, target.port, proxy, trust_env),
        tunnel=True,
    )
    if auth is None:
        stream, ws, subprotocol = await _connect(pool, url, target, extra, connect_timeout)
    else:
        stream, ws, subprotocol = await _connect_with_auth(pool, url, target, extra, connect_timeout, auth)
    channel = _WsprotoChannel(
        stream,
        ws,
        client=True,
        subprotocol=subprotocol,
        max_message_size=max_message_size,
        keepalive_interval=keepalive_interval,
        keepalive_timeout=keepalive_timeout,
        close_timeout=close_timeout,
        inbound_buffer=inbound_buffer,
    )
    async with trio.open_nursery() as nursery:
        # The reader runs shielded, so that a cancelled block still closes cleanly.
        inner = trio.CancelScope(shield=True)

        async def run(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            with inner:
                task_status.started()
                await channel._run()

        await nursery.start(run)
        try:
            yield channel
        finally:
            with trio.CancelScope(shield=True):
                await channel.close()
            inner.cancel()
