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
"""

from __future__ import annotations

import logging
import math
import re
import ssl
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

import msgspec
import trio
from msgspec import UNSET, Raw, UnsetType

from ... import _jsonrpc as rpc
from ..._version import __version__
from .._base import Frame, RequestId
from ..stdio import DEFAULT_MAX_MESSAGE_SIZE
from ._headers import encode_value as _encode_header_value
from ._headers import header_annotations as _header_annotations
from ._headers import param_headers as _param_headers
from ._http11 import (
    TRANSPORT_ERROR,
    Failure,
    Headers,
    Pool,
    Response,
    Target,
    excerpt,
)
from ._sse import SSEDecoder, SSEError

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "TRANSPORT_ERROR",
    "HTTPAuth",
    "HTTPClientChannel",
    "open_http_client",
    "open_legacy_sse_client",
]

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
_INCOMING_BUFFER = 64
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
#: Where ``Mcp-Name`` comes from (the Tasks extension routes its requests by task id).
_NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FIRST_STATELESS = "2026-07-28"
_SESSION_ID = re.compile(r"[\x21-\x7e]+")


def _is_modern(version: Any) -> bool:
    """True for revisions without the initialize handshake (2026-07-28 on)."""
    if not isinstance(version, str):
        return False
    return version == "draft" or (bool(_DATE.fullmatch(version)) and version >= _FIRST_STATELESS)


# ------------------------------------------------------------- peeking


class _ParamsPeek(msgspec.Struct, gc=False):
    name: Any = UNSET
    uri: Any = UNSET
    arguments: Raw | UnsetType = UNSET
    requestId: Any = UNSET  # noqa: N815 - the wire name
    taskId: Any = UNSET  # noqa: N815 - the wire name
    meta: Any = msgspec.field(default=UNSET, name="_meta")


class _InitializePeek(msgspec.Struct, gc=False):
    protocolVersion: Any = UNSET  # noqa: N815 - the wire name


_params_decoder = msgspec.json.Decoder(_ParamsPeek)
_initialize_decoder = msgspec.json.Decoder(_InitializePeek)


class _Message:
    """What the transport needs to know about one outgoing message."""

    __slots__ = ("kind", "method", "methods", "version", "name", "arguments", "cancel_id")

    def __init__(self, kind: str) -> None:
        self.kind = kind  # request | notification | response | batch | invalid
        self.method: str | None = None
        self.methods: dict[RequestId, str] = {}  # request id -> method
        self.version: str | None = None  # the request's _meta protocol version
        self.name: str | None = None  # Mcp-Name source
        self.arguments: Raw | None = None
        self.cancel_id: RequestId | None = None


def _peek_one(data: bytes | Raw) -> _Message:
    try:
        env = rpc.decode_envelope(data)
    except _BAD_JSON:
        return _Message("invalid")
    if isinstance(env.method, str):
        msg = _Message("notification" if env.id is UNSET or env.id is None else "request")
        msg.method = env.method
        if msg.kind == "request":
            assert isinstance(env.id, int | str)
            msg.methods[env.id] = env.method
        if env.params is not UNSET:
            try:
                params = _params_decoder.decode(env.params)
            except _BAD_JSON:
                return msg
            if isinstance(params.meta, dict):
                version = params.meta.get("io.modelcontextprotocol/protocolVersion")
                if isinstance(version, str):
                    msg.version = version
            key = _NAME_PARAM.get(env.method)
            if key is not None:
                value = getattr(params, key)
                if isinstance(value, str):
                    msg.name = value
            if env.method == "tools/call" and isinstance(params.arguments, Raw):
                msg.arguments = params.arguments
            if env.method == "notifications/cancelled" and isinstance(params.requestId, int | str):
                msg.cancel_id = params.requestId
        return msg
    return _Message("response")


def _peek(data: bytes) -> _Message:
    if data.lstrip()[:1] != b"[":
        return _peek_one(data)
    try:
        items = rpc.decode_batch(data)
    except _BAD_JSON:
        return _Message("invalid")
    batch = _Message("batch")
    for raw in items:
        batch.methods.update(_peek_one(raw).methods)
    return batch


#: What decoding a peer's bytes may raise: not JSON, not the expected shape,
#: nested deeper than the decoder goes, or not UTF-8 inside a part decoded late.
_BAD_JSON = (msgspec.DecodeError, msgspec.ValidationError, RecursionError, UnicodeDecodeError)


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


class HTTPClientChannel(trio.abc.Channel[Frame]):
    """The client side of Streamable HTTP (or legacy HTTP+SSE), as a message channel.

    Make one with :func:`open_http_client` or :func:`open_legacy_sse_client`.

    Attributes:
        url: The MCP endpoint (for legacy HTTP+SSE: the SSE endpoint).
        session_id: The ``Mcp-Session-Id`` the server assigned, if any.
        protocol_version: The negotiated revision as seen on the wire
            (``None`` before it is known).
        session_expired: True once the server answered 404 for the session
            and it could not be renewed (see the module docs).
        renewals: How many times the session was renewed after a 404.
        transport: ``"streamable-http"`` or ``"sse"`` (legacy, possibly after
            fallback).
    """

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
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        if reconnect_attempts < 1:
            raise ValueError("reconnect_attempts must be at least 1")
        self._target = Target(url)
        self.url = url
        extra = list((headers or {}).items())
        for name, _ in extra:
            if name.lower() in _RESERVED_HEADERS:
                raise ValueError(f"the transport sets the {name!r} header itself")
        self._user_headers = extra
        self._auth = auth
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
        self.renewals = 0
        self._renewing = trio.Lock()
        self._init_data: bytes | None = None  # the session's initialize, to start a new one
        self._initialized_data: bytes | None = None
        self._pool = Pool(
            self._target,
            ssl_context=ssl_context,
            connect_timeout=timeout,
            read_timeout=read_timeout,
            max_idle=max_connections,
        )
        self._limiter = trio.CapacityLimiter(max_connections)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.session_expired = False
        self.transport = "streamable-http"
        self._incoming_send, self._incoming_recv = trio.open_memory_channel[Frame](_INCOMING_BUFFER)
        self._pending: dict[RequestId, _Exchange] = {}
        self._tool_headers: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        self._scope = trio.CancelScope()
        self._tasks: trio.Nursery | None = None
        self._listening = False
        self._listen_scope = trio.CancelScope()
        self._legacy_target: str | None = None
        self._switching: trio.Event | None = None
        self._closed = False
        self._ended: str | None = None  # why the channel ended, once it has

    # ------------------------------------------------------------ lifetime

    async def _run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with self._scope:
            async with trio.open_nursery() as tasks:
                self._tasks = tasks
                task_status.started()
                await trio.sleep_forever()

    async def aclose(self) -> None:
        """Stop all exchanges, end the session with DELETE (bounded), close the connections."""
        if self._closed:
            return
        self._closed = True
        self._scope.cancel()
        self._listen_scope.cancel()
        if (
            self.session_id is not None
            and self.terminate_on_close
            and not self.session_expired
            and self._legacy_target is None
        ):
            with trio.CancelScope(shield=True), trio.move_on_after(self.close_timeout):
                await self._delete_session()
        self._pool.close()
        self._incoming_send.close()
        self._incoming_recv.close()
        await trio.lowlevel.checkpoint()

    async def _delete_session(self) -> None:
        try:
            headers = self._headers(accept=_ACCEPT_BOTH, version=self.protocol_version)
            resp = await self._send("DELETE", self._target.path, headers)
        except Failure as exc:
            log.debug("DELETE of session %s failed: %s", self.session_id, exc)
            return
        try:
            if resp.status == 405:
                log.debug("the server does not let clients end sessions (405)")
            elif not 200 <= resp.status < 300 and resp.status != 404:
                log.info("DELETE of session %s answered %s", self.session_id, resp.describe())
            await resp.read_prefix(_ERROR_BODY_LIMIT)
        finally:
            resp.finish()

    # ------------------------------------------------------------ receiving

    async def receive(self) -> Frame:
        return await self._incoming_recv.receive()

    async def _put(self, frame: Frame) -> None:
        try:
            await self._incoming_send.send(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    async def _deliver(self, data: bytes) -> None:
        """Hand one incoming message (or a batch, split) to the engine, learning from it."""
        if data.lstrip()[:1] == b"[":
            try:
                items = rpc.decode_batch(data)
            except _BAD_JSON:
                await self._put(Frame(data))  # the engine answers the parse error
                return
            for raw in items:
                await self._deliver_one(bytes(raw))
            return
        await self._deliver_one(data)

    async def _deliver_one(self, data: bytes) -> None:
        try:
            env = rpc.decode_envelope(data)
        except _BAD_JSON:
            await self._put(Frame(data))
            return
        if env.method is UNSET and isinstance(env.id, int | str):
            owner = self._pending.pop(env.id, None)
            if owner is not None:
                owner.remaining.discard(env.id)
                method = owner.msg.methods.get(env.id)
                if env.result is not UNSET:
                    if method == "initialize":
                        self._learn_version(env.result)
                    elif method == "tools/list" and owner.modern:
                        data = self._learn_tools(env.id, env.result, data)
        await self._put(Frame(data))

    def _learn_version(self, result: Any) -> None:
        try:
            peek = _initialize_decoder.decode(result)
        except _BAD_JSON:
            return
        if isinstance(peek.protocolVersion, str):
            self.protocol_version = peek.protocolVersion

    def _learn_tools(self, id: RequestId, result_raw: Any, data: bytes) -> bytes:
        """Record the tools' ``x-mcp-header`` annotations; drop tools with invalid ones."""
        try:
            result = msgspec.json.decode(result_raw)
        except _BAD_JSON:
            return data
        tools = result.get("tools") if isinstance(result, dict) else None
        if not isinstance(tools, list):
            return data
        kept: list[Any] = []
        for tool in tools:
            if not isinstance(tool, dict):
                kept.append(tool)
                continue
            name = tool.get("name")
            annotations = _header_annotations(tool.get("inputSchema"))
            if isinstance(annotations, str):
                log.warning("ignoring tool %r from tools/list: %s", name, annotations)
                if isinstance(name, str):
                    self._tool_headers.pop(name, None)
                continue
            if isinstance(name, str):
                if annotations:
                    self._tool_headers[name] = annotations
                else:
                    self._tool_headers.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return data
        result["tools"] = kept
        return rpc.encode_response(id, result)

    # ------------------------------------------------------------ sending

    async def _send(
        self, method: str, target: str, headers: Headers, body: bytes | None = None
    ) -> Response:
        """Every request to the server goes through here.

        With ``auth``, its headers are added, and a 401/403 that it answers
        (by authorizing, refreshing or stepping up) sends the request again,
        at most ``_AUTH_RETRIES`` times; the last refusal is returned as is.
        """
        auth = self._auth
        if auth is None:
            return await self._pool.request(method, target, headers, body)
        url = urllib.parse.urljoin(self.url, target)
        for _ in range(_AUTH_RETRIES):
            sent = await auth.headers(method, url)
            resp = await self._pool.request(method, target, headers + list(sent), body)
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
        return await self._pool.request(method, target, headers + list(sent), body)

    def _headers(
        self,
        *,
        accept: str,
        body: bytes | None = None,
        version: str | None = None,
        session: bool = True,
        extra: Headers | None = None,
    ) -> Headers:
        headers: Headers = [
            ("Host", self._target.host_header),
            ("User-Agent", _USER_AGENT),
            ("Accept", accept),
        ]
        if body is not None:
            headers.append(("Content-Type", "application/json"))
            headers.append(("Content-Length", str(len(body))))
        if session and self.session_id is not None:
            headers.append(("Mcp-Session-Id", self.session_id))
        if version is not None:
            headers.append(("MCP-Protocol-Version", version))
        if extra:
            headers.extend(extra)
        headers.extend(self._user_headers)
        return headers

    def _message_headers(self, data: bytes, msg: _Message) -> Headers:
        if msg.method == "initialize":
            return self._headers(accept=_ACCEPT_BOTH, body=data)
        if msg.version is not None and _is_modern(msg.version):
            extra: Headers = [("Mcp-Method", msg.method or "")]
            if msg.name is not None:
                extra.append(("Mcp-Name", _encode_header_value(msg.name)))
                annotations = (
                    self._tool_headers.get(msg.name) if msg.method == "tools/call" else None
                )
                if annotations and msg.arguments is not None:
                    extra.extend(_param_headers(annotations, msg.arguments))
            return self._headers(
                accept=_ACCEPT_BOTH, body=data, version=msg.version, session=False, extra=extra
            )
        return self._headers(accept=_ACCEPT_BOTH, body=data, version=self.protocol_version)

    async def send(self, value: Frame) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the HTTP channel was closed")
        if self._ended is not None:
            raise trio.BrokenResourceError(self._ended)
        if self._switching is not None:
            await self._switching.wait()
        data = value.data
        msg = _peek(data)
        if msg.method == "initialize":
            self.protocol_version = None  # a probe's version must not leak onto the handshake
            self._init_data = data
        elif msg.method == "notifications/initialized":
            self._initialized_data = data
        elif msg.version is not None and _is_modern(msg.version):
            self.protocol_version = msg.version
        if self._legacy_target is not None:
            if msg.cancel_id is not None and msg.method == "notifications/cancelled":
                self._pending.pop(msg.cancel_id, None)
            await self._legacy_post(data, msg)
            return
        if msg.kind == "notification" and msg.method == "notifications/cancelled":
            await self._cancel(data, msg)
            return
        if msg.methods:
            exchange = _Exchange(data, msg, _is_modern(msg.version))
            for id in msg.methods:
                previous = self._pending.get(id)
                if previous is not None:
                    self._abandon(previous, id)
                self._pending[id] = exchange
            assert self._tasks is not None
            self._tasks.start_soon(self._request_task, exchange)
            return
        await self._post_message(data, msg)

    def _abandon(self, exchange: _Exchange, id: RequestId) -> None:
        """The engine no longer waits for ``id``: stop the exchange once it waits for nothing."""
        if self._pending.get(id) is exchange:
            del self._pending[id]
        exchange.remaining.discard(id)
        if not exchange.remaining:
            exchange.abandoned = True
            exchange.scope.cancel()

    async def _cancel(self, data: bytes, msg: _Message) -> None:
        """An outgoing ``notifications/cancelled``: stop the exchange; tell the server if needed."""
        id = msg.cancel_id
        exchange = self._pending.get(id) if id is not None else None
        if exchange is None or id is None:
            return  # nothing in flight for it (already answered)
        if exchange.modern or not exchange.sending:
            # At 2026-07-28 closing the response stream is the cancellation
            # (no such notification exists on HTTP); a request still waiting
            # for a connection never reached the server.
            self._abandon(exchange, id)
            return
        # Up to 2025-11-25 the notification is the signal (a disconnect is
        # not): post it, then stop listening for the answer.
        await self._post_message(data, msg)
        self._abandon(exchange, id)

    async def _post_message(self, data: bytes, msg: _Message) -> None:
        """POST a notification or response and wait for its 202 (bounded by ``timeout``)."""
        headers = self._message_headers(data, msg)
        modern = bool(msg.version and _is_modern(msg.version))
        sent_session = self.session_id if not modern else None
        with trio.move_on_after(self.timeout) as scope:
            try:
                resp = await self._send("POST", self._target.path, headers, data)
            except Failure as exc:
                log.warning("could not post %s: %s", msg.method or "a response", exc)
                return
            try:
                if resp.status == 404 and sent_session is not None:
                    resp.finish()
                    if msg.method != "notifications/initialized" and await self._renew(sent_session):
                        await self._post_message(data, msg)  # on the new session
                    else:
                        await self._expire()
                    return
                body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                if not 200 <= resp.status < 300:
                    log.warning(
                        "the server refused %s: %s: %s",
                        msg.method or "a response",
                        resp.describe(),
                        excerpt(body),
                    )
                    return
            finally:
                resp.finish()
        if scope.cancelled_caught:
            log.warning(
                "posting %s got no answer within %s s", msg.method or "a response", self.timeout
            )
            return
        if msg.method == "notifications/initialized":
            self._start_listening()

    # ------------------------------------------------------ request exchanges

    async def _request_task(self, exchange: _Exchange) -> None:
        failure: Failure | None = None
        with exchange.scope:
            try:
                async with self._limiter:
                    exchange.sending = True
                    try:
                        await self._exchange(exchange)
                    except _Renewed:
                        await self._exchange(exchange)  # once, on the new session
            except _Renewed:
                failure = Failure("session_expired", "the renewed session was refused too", status=404)
            except Failure as exc:
                failure = exc
        if exchange.abandoned or self._closed:
            return
        if failure is None and exchange.remaining:
            failure = Failure("bad_response", "the server ended the exchange without a response")
        if failure is not None:
            await self._fail(exchange, failure)

    async def _fail(self, exchange: _Exchange, failure: Failure) -> None:
        for id in sorted(exchange.remaining, key=str):
            if self._pending.get(id) is exchange:
                del self._pending[id]
            await self._put(failure.frame(id))
        exchange.remaining.clear()

    async def _exchange(self, exchange: _Exchange) -> None:
        msg = exchange.msg
        headers = self._message_headers(exchange.data, msg)
        sent_session = self.session_id if not exchange.modern else None
        resp = await self._send("POST", self._target.path, headers, exchange.data)
        try:
            status = resp.status
            if "initialize" in msg.methods.values() and 200 <= status < 300:
                session_id = resp.headers.get("mcp-session-id")
                if session_id is not None:
                    if not _SESSION_ID.fullmatch(session_id):
                        raise Failure(
                            "bad_response",
                            f"the server sent an invalid Mcp-Session-Id: {session_id!r}",
                        )
                    self.session_id = session_id
            if not 200 <= status < 300:
                await self._http_error(exchange, resp, sent_session)
                return
            ctype = resp.content_type
            if ctype == "text/event-stream":
                await self._read_stream(exchange, resp)
            elif ctype == "application/json" and status not in (202, 204):
                body = await resp.read(self.max_message_size)
                resp.finish()  # the connection is free before the engine sees the answer
                if not body.strip():
                    raise Failure(
                        "bad_response", f"the server answered {resp.describe()} with an empty body"
                    )
                await self._deliver(body)
                return
            else:
                what = f"content type {ctype!r}" if ctype else "no body"
                raise Failure(
                    "bad_response",
                    f"the server answered the request with {resp.describe()} and {what}",
                )
        finally:
            resp.finish()
        if exchange.remaining:
            await self._resume(exchange)

    async def _http_error(self, exchange: _Exchange, resp: Response, sent_session: str | None) -> None:
        status = resp.status
        if status == 404 and sent_session is not None:
            resp.finish()
            if await self._renew(sent_session):
                raise _Renewed
            await self._expire()
            return
        if 300 <= status < 400:
            location = resp.headers.get("location", "")
            raise Failure(
                "redirect",
                f"the server redirected ({resp.describe()}) to {location!r}; redirects are "
                "not followed, "
                "use that URL as the endpoint if it is the intended server",
                status=status,
                location=location,
            )
        body = await resp.read_prefix(_ERROR_BODY_LIMIT)
        errors = self._jsonrpc_errors(body) if resp.content_type == "application/json" else []
        if (
            not errors
            and self.legacy_fallback
            and status in (400, 404, 405)
            and self.session_id is None
            and sent_session is None
            and "initialize" in exchange.msg.methods.values()
        ):
            resp.finish()
            if await self._fall_back(exchange, resp.describe()):
                return
        if errors:
            ids = list(exchange.remaining)
            for id, code, message, data in errors:
                if id is None and len(ids) == 1:
                    id = ids[0]
                if id is None or id not in exchange.remaining:
                    continue
                exchange.remaining.discard(id)
                if self._pending.get(id) is exchange:
                    del self._pending[id]
                await self._put(Frame(rpc.encode_error(id, code, message, data)))
            if not exchange.remaining:
                return
        text = excerpt(body)
        raise Failure(
            "http_status",
            f"{resp.describe()} from {self.url}" + (f": {text}" if text else ""),
            status=status,
            body=text,
        )

    @staticmethod
    def _jsonrpc_errors(body: bytes) -> list[tuple[RequestId | None, int, str, Any]]:
        """The JSON-RPC error responses in an HTTP error body, if that is what it holds."""
        try:
            items: list[Any] = [body] if body.lstrip()[:1] != b"[" else list(rpc.decode_batch(body))
            found = []
            for raw in items:
                env = rpc.decode_envelope(raw)
                if env.error is UNSET or env.method is not UNSET or env.id is UNSET:
                    return []
                err = rpc.decode_error(env.error)  # type: ignore[arg-type]
                found.append(
                    (env.id, err.code, err.message, None if err.data is UNSET else err.data)
                )
            return found
        except _BAD_JSON:
            return []

    async def _read_stream(self, exchange: _Exchange, resp: Response) -> None:
        """Deliver a response stream's messages until it ends (or lingers after the answer)."""
        decoder = SSEDecoder(self.max_message_size)
        exchange.dropped = None
        with trio.CancelScope() as linger:
            try:
                while (chunk := await resp.next_chunk()) is not None:
                    events = decoder.feed(chunk)
                    # Take what already arrived too: if that is the end of the
                    # stream, the connection is free before the engine sees the answer.
                    while (more := resp.buffered_chunk()) is not None:
                        events += decoder.feed(more)
                    if resp.done:
                        resp.finish()
                    for event in events:
                        if event.event == "message":
                            await self._deliver(event.data)
                        else:
                            log.debug("ignoring SSE event of type %r", event.event)
                    if decoder.last_event_id is not None:
                        exchange.last_event_id = decoder.last_event_id
                    if decoder.retry is not None:
                        exchange.retry = decoder.retry
                    if not exchange.remaining and linger.deadline == math.inf:
                        linger.deadline = trio.current_time() + _LINGER
            except SSEError as exc:
                raise Failure(
                    "too_large",
                    f"the event stream broke a limit: {exc}",
                    limit=self.max_message_size,
                ) from None
            except Failure as exc:
                if exc.reason != "connection":
                    raise
                log.debug("response stream dropped: %s", exc)
                exchange.dropped = exc.message
        if decoder.last_event_id is not None:
            exchange.last_event_id = decoder.last_event_id
        if decoder.retry is not None:
            exchange.retry = decoder.retry

    def _delay(self, retry: int | None) -> float:
        return max(_MIN_POLL, retry / 1000 if retry is not None else self.reconnect_delay)

    async def _resume(self, exchange: _Exchange) -> None:
        """Reopen a response stream that ended early: GET with ``Last-Event-ID``."""
        if exchange.modern or exchange.last_event_id is None:
            how = f" ({exchange.dropped})" if exchange.dropped else ""
            raise Failure(
                "stream_ended",
                f"the response stream ended before the response{how}"
                + (
                    ""
                    if exchange.modern
                    else "; it cannot be resumed (the server sent no event id)"
                ),
            )
        failures = 0
        last_error = ""
        while exchange.remaining:
            if failures >= self.reconnect_attempts:
                raise Failure(
                    "stream_ended",
                    f"the response stream ended before the response; {failures} attempts "
                    "to resume it "
                    f"with Last-Event-ID failed (last: {last_error})",
                )
            await trio.sleep(self._delay(exchange.retry))
            if self._ended is not None:
                return
            assert exchange.last_event_id is not None
            headers = self._headers(
                accept="text/event-stream",
                version=self.protocol_version,
                extra=[("Last-Event-ID", exchange.last_event_id.encode())],
            )
            sent_session = self.session_id is not None
            try:
                resp = await self._send("GET", self._target.path, headers)
            except Failure as exc:
                failures += 1
                last_error = exc.message
                continue
            try:
                if resp.status == 404 and sent_session:
                    await self._expire()
                    return
                if resp.status == 200 and resp.content_type == "text/event-stream":
                    failures = 0
                    await self._read_stream(exchange, resp)
                else:
                    failures += 1
                    body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                    last_error = f"{resp.describe()}: {excerpt(body)}"
            finally:
                resp.finish()

    async def _renew(self, refused: str) -> bool:
        """The server answered 404 for session ``refused``: start a new session
        (``initialize`` again, then ``notifications/initialized``).  True when
        there is a new session to use (made here or by a concurrent caller)."""
        async with self._renewing:
            if self.session_id != refused:
                return self.session_id is not None and not self.session_expired
            if (
                not self.renew_sessions
                or self._init_data is None
                or self.renewals >= self.max_renewals
                or self.session_expired
            ):
                return False
            self.renewals += 1
            version = self.protocol_version
            self.session_id = None
            try:
                with trio.fail_after(self.timeout):
                    session_id, result = await self._initialize_again(self._init_data)
                answered = result.get("protocolVersion") if isinstance(result, dict) else None
                if answered != version:
                    raise Failure("bad_response", f"the new session speaks {answered!r}, not {version!r}")
                self.session_id = session_id
                if self._initialized_data is not None:
                    headers = self._headers(accept=_ACCEPT_BOTH, body=self._initialized_data, version=version)
                    with trio.fail_after(self.timeout):
                        resp = await self._send("POST", self._target.path, headers, self._initialized_data)
                        resp.finish()
                    if not 200 <= resp.status < 300:
                        raise Failure("http_status", f"notifications/initialized: {resp.describe()}")
            except (Failure, trio.TooSlowError) as exc:
                log.warning("could not start a new session after HTTP 404: %s", exc)
                self.session_id = refused
                return False
            log.info("session %s expired on the server; continuing in new session %s", refused, session_id)
            return True

    async def _initialize_again(self, data: bytes) -> tuple[str | None, Any]:
        """POST ``initialize`` without a session; the new session id and the result."""
        resp = await self._send("POST", self._target.path, self._headers(accept=_ACCEPT_BOTH, body=data), data)
        try:
            if not 200 <= resp.status < 300:
                raise Failure("http_status", f"initialize: {resp.describe()}")
            session_id = resp.headers.get("mcp-session-id")
            if session_id is not None and not _SESSION_ID.fullmatch(session_id):
                raise Failure("bad_response", f"the server sent an invalid Mcp-Session-Id: {session_id!r}")
            bodies: list[bytes] = []
            if resp.content_type == "text/event-stream":
                decoder = SSEDecoder(self.max_message_size)
                while not bodies and (chunk := await resp.next_chunk()) is not None:
                    bodies = [
                        e.data for e in decoder.feed(chunk) if e.event == "message" and _peek(e.data).kind == "response"
                    ]
            else:
                bodies = [await resp.read(self.max_message_size)]
        finally:
            resp.finish()
        try:
            answer = msgspec.json.decode(bodies[0]) if bodies else None
        except _BAD_JSON:
            answer = None
        if not isinstance(answer, dict) or "result" not in answer:
            raise Failure("bad_response", f"initialize was not answered with a result: {answer!r}")
        return session_id, answer["result"]

    async def _expire(self) -> None:
        """The server forgot the session: fail everything and end the channel."""
        if self.session_expired:
            return
        self.session_expired = True
        message = (
            f"session {self.session_id} expired: the server answered HTTP 404 Not Found for it; "
            "start a new session (open a new connection and client)"
        )
        self._ended = message
        failure = Failure("session_expired", message, status=404, session_id=self.session_id)
        victims = list(self._pending.items())
        self._pending.clear()
        exchanges = {id(ex): ex for _, ex in victims}
        for ex in exchanges.values():
            ex.abandoned = True
            ex.remaining.clear()
        for request_id, _ in victims:
            await self._put(failure.frame(request_id))
        self._end()
        for ex in exchanges.values():
            ex.scope.cancel()
        self._listen_scope.cancel()

    def _end(self) -> None:
        """No more incoming messages: the engine reads what is buffered, then EndOfChannel."""
        self._incoming_send.close()

    # ------------------------------------------------------------ GET stream

    def _start_listening(self) -> None:
        if not self.listen or self._listening or self._closed or self._ended is not None:
            return
        if self.protocol_version is None or _is_modern(self.protocol_version):
            return
        self._listening = True
        assert self._tasks is not None
        self._tasks.start_soon(self._listen)

    async def _listen(self) -> None:
        """The GET stream for server-initiated messages, reopened after drops."""
        last_event_id: str | None = None
        retry: int | None = None
        failures = 0
        with self._listen_scope:
            while True:
                extra: Headers | None = None
                if last_event_id is not None:
                    extra = [("Last-Event-ID", last_event_id.encode())]
                headers = self._headers(
                    accept="text/event-stream", version=self.protocol_version, extra=extra
                )
                sent_session = self.session_id
                try:
                    resp = await self._send("GET", self._target.path, headers)
                except Failure as exc:
                    failures += 1
                    log.debug("GET stream: %s", exc)
                else:
                    try:
                        if resp.status == 405:
                            log.debug("the server offers no GET stream (405)")
                            return
                        if resp.status == 404 and sent_session is not None:
                            resp.finish()
                            if await self._renew(sent_session):
                                last_event_id = None  # a new session: a new stream
                                continue
                            await self._expire()
                            return
                        if resp.status == 200 and resp.content_type == "text/event-stream":
                            failures = 0
                            decoder = SSEDecoder(self.max_message_size)
                            try:
                                while (chunk := await resp.next_chunk()) is not None:
                                    for event in decoder.feed(chunk):
                                        if event.event == "message":
                                            await self._deliver(event.data)
                                    if decoder.last_event_id is not None:
                                        last_event_id = decoder.last_event_id
                                    if decoder.retry is not None:
                                        retry = decoder.retry
                            except (Failure, SSEError) as exc:
                                failures += isinstance(exc, SSEError)
                                log.debug("GET stream dropped: %s", exc)
                            if decoder.last_event_id is not None:
                                last_event_id = decoder.last_event_id
                        else:
                            failures += 1
                            body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                            log.debug("GET stream refused: %s: %s", resp.describe(), excerpt(body))
                    finally:
                        resp.finish()
                if failures >= self.reconnect_attempts:
                    log.info("giving up the GET stream after %d failed attempts", failures)
                    return
                await trio.sleep(self._delay(retry))

    # ------------------------------------------------------- legacy HTTP+SSE

    async def _fall_back(self, exchange: _Exchange, refusal: str) -> bool:
        """Switch to HTTP+SSE (2024-11-05) and resend ``initialize`` there (False: none there)."""
        self._switching = trio.Event()
        try:
            try:
                assert self._tasks is not None
                await self._tasks.start(self._legacy_stream)
            except Failure as exc:
                log.info("no legacy HTTP+SSE endpoint either: %s", exc)
                return False
            log.info("the server refused the Streamable HTTP POST (%s); using HTTP+SSE", refusal)
            exchange.remaining.clear()  # the legacy stream answers it now
            await self._legacy_post(exchange.data, exchange.msg)
            return True
        finally:
            self._switching.set()
            self._switching = None

    async def _connect_legacy(self) -> None:
        assert self._tasks is not None
        await self._tasks.start(self._legacy_stream)

    async def _legacy_stream(
        self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Open the SSE stream, wait for its ``endpoint`` event, then deliver its messages."""
        headers = self._headers(accept="text/event-stream", session=False)
        started = False
        with trio.move_on_after(self.timeout) as opening:
            resp = await self._send("GET", self._target.path, headers)
        if opening.cancelled_caught:
            raise Failure("connect", f"the SSE endpoint did not answer within {self.timeout} s")
        reason = "the server closed the SSE stream"
        try:
            if resp.status != 200 or resp.content_type != "text/event-stream":
                body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                raise Failure(
                    "http_status",
                    f"the SSE endpoint answered {resp.describe()}"
                    + (f" with {resp.content_type!r}" if resp.status == 200 else "")
                    + (f": {excerpt(body)}" if body else ""),
                    status=resp.status,
                )
            decoder = SSEDecoder(self.max_message_size)
            opening = trio.CancelScope(deadline=trio.current_time() + self.timeout)
            with opening:
                while (chunk := await resp.next_chunk()) is not None:
                    for event in decoder.feed(chunk):
                        if event.event == "endpoint" and not started:
                            url = urllib.parse.urljoin(
                                self.url, event.data.decode("utf-8", "replace").strip()
                            )
                            target = self._target.same_origin(url)
                            if target is None:
                                raise Failure(
                                    "bad_response",
                                    f"the endpoint event names another origin: {url!r}",
                                )
                            self._legacy_target = target
                            self.transport = "sse"
                            started = True
                            opening.deadline = math.inf
                            task_status.started()
                        elif event.event == "message":
                            await self._deliver(event.data)
            if not started:
                what = "within" if opening.cancelled_caught else "before the stream ended, after"
                raise Failure("bad_response", f"no endpoint event {what} {self.timeout} s")
        except SSEError as exc:
            if not started:
                raise Failure("too_large", f"the event stream broke a limit: {exc}") from None
            reason = f"the SSE stream broke a limit: {exc}"
        except Failure as exc:
            if not started:
                raise
            reason = f"the SSE stream broke: {exc.message}"
        finally:
            resp.finish()
        # The stream is the session: without it nothing more can arrive.
        self._ended = reason
        failure = Failure("stream_ended", reason)
        victims = list(self._pending)
        self._pending.clear()
        for request_id in victims:
            await self._put(failure.frame(request_id))
        self._end()

    async def _legacy_post(self, data: bytes, msg: _Message) -> None:
        """POST one message to the legacy endpoint; its answer comes on the SSE stream."""
        assert self._legacy_target is not None
        for id in msg.methods:
            self._pending[id] = _Exchange(data, msg, False)
        headers = self._headers(accept=_ACCEPT_BOTH, body=data, session=False)
        failure: Failure | None = None
        with trio.move_on_after(self.timeout) as scope:
            try:
                resp = await self._send("POST", self._legacy_target, headers, data)
            except Failure as exc:
                failure = exc
            else:
                try:
                    body = await resp.read_prefix(_ERROR_BODY_LIMIT)
                    if not 200 <= resp.status < 300:
                        text = excerpt(body)
                        failure = Failure(
                            "http_status",
                            f"{resp.describe()} from the message endpoint"
                            + (f": {text}" if text else ""),
                            status=resp.status,
                            body=text,
                        )
                finally:
                    resp.finish()
        if scope.cancelled_caught:
            failure = Failure(
                "connection", f"the message endpoint did not answer within {self.timeout} s"
            )
        if failure is None:
            return
        if not msg.methods:
            log.warning("could not post %s: %s", msg.method or "a response", failure)
        for id in msg.methods:
            if self._pending.pop(id, None) is not None:
                await self._put(failure.frame(id))


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
                        raise ConnectionError(
                            f"cannot open the SSE stream at {channel.url}: {exc}"
                        ) from None
                yield channel
            finally:
                with trio.CancelScope(shield=True):
                    await channel.aclose()
    except BaseExceptionGroup as group:
        raise _unwrap(group) from None


@asynccontextmanager
async def open_http_client(
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
) -> AsyncIterator[HTTPClientChannel]:
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
    """
    channel = HTTPClientChannel(
        url,
        headers=headers,
        timeout=timeout,
        read_timeout=read_timeout,
        ssl_context=ssl_context,
        max_connections=max_connections,
        max_message_size=max_message_size,
        reconnect_delay=reconnect_delay,
        reconnect_attempts=reconnect_attempts,
        listen=listen,
        terminate_on_close=terminate_on_close,
        legacy_fallback=legacy_fallback,
        close_timeout=close_timeout,
        renew_sessions=renew_sessions,
        max_renewals=max_renewals,
        auth=auth,
    )
    async with _serve(channel, legacy=False) as opened:
        yield opened


@asynccontextmanager
async def open_legacy_sse_client(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    read_timeout: float | None = None,
    ssl_context: ssl.SSLContext | None = None,
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
) -> AsyncIterator[HTTPClientChannel]:
    """A channel over the deprecated HTTP+SSE transport (protocol 2024-11-05).

    Opens the SSE stream at ``url`` and waits (up to ``timeout``) for its
    ``endpoint`` event, which must name a URL on the same origin; every
    message is then POSTed there.  The channel ends when the stream does.

    Raises:
        ConnectionError: the stream could not be opened or sent no endpoint.
    """
    channel = HTTPClientChannel(
        url,
        headers=headers,
        timeout=timeout,
        read_timeout=read_timeout,
        ssl_context=ssl_context,
        max_message_size=max_message_size,
        listen=False,
        terminate_on_close=False,
    )
    async with _serve(channel, legacy=True) as opened:
        yield opened
