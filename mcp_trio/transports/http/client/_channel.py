"""The state of a Streamable HTTP client channel and what every part of it uses.

:class:`_ChannelBase` holds the channel's settings and state (``__init__``),
receives (every incoming message goes through :meth:`_ChannelBase._deliver`,
which learns the negotiated version and the tools' ``x-mcp-header``
annotations on the way) and makes the HTTP requests: every one goes through
:meth:`_ChannelBase._send` (``auth`` headers, 401/403 answered at most
``_AUTH_RETRIES`` times) with the headers :meth:`_ChannelBase._headers` builds
(the user's headers never replace the transport's own).  The request
exchanges, the session's renewal and GET stream, and the legacy HTTP+SSE
client are built on it in their own modules.
"""

from __future__ import annotations

import logging
import re
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec
import trio
from msgspec import UNSET

from .... import _jsonrpc as rpc
from ...._version import __version__
from ..._base import ChannelTraits, Frame, RequestId
from ...stdio import DEFAULT_MAX_MESSAGE_SIZE
from .._headers import encode_value as _encode_header_value
from .._headers import header_annotations as _header_annotations
from .._headers import param_headers as _param_headers
from ._http11 import Failure, Headers, Pool, Response, Target, excerpt
from ._peek import _BAD_JSON, _initialize_decoder, _is_modern, _Message
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


class _ChannelBase(trio.abc.Channel[Frame], ChannelTraits):
    """The channel's settings and state, receiving, and the HTTP requests it makes."""

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
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if max_message_size < 1:
            raise ValueError("max_message_size must be positive")
        if reconnect_attempts < 1:
            raise ValueError("reconnect_attempts must be at least 1")
        self._target = Target(url)
        self._url = url  # (``url`` as ChannelTraits has it: str or None)
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
            proxy=choose_proxy(self._target.scheme, self._target.host, self._target.port, proxy, trust_env),
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

    async def _send(self, method: str, target: str, headers: Headers, body: bytes | None = None) -> Response:
        """Every request to the server goes through here.

        With ``auth``, its headers are added, and a 401/403 that it answers
        (by authorizing, refreshing or stepping up) sends the request again,
        at most ``_AUTH_RETRIES`` times; the last refusal is returned as is.
        """
        auth = self._auth
        if auth is None:
            return await self._pool.request(method, target, headers, body)
        url = urllib.parse.urljoin(self._url, target)
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
                    f"{resp.describe()} from {self._url}" + (f": {text}" if text else ""),
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
                annotations = self._tool_headers.get(msg.name) if msg.method == "tools/call" else None
                if annotations and msg.arguments is not None:
                    extra.extend(_param_headers(annotations, msg.arguments))
            return self._headers(
                accept=_ACCEPT_BOTH, body=data, version=msg.version, session=False, extra=extra
            )
        return self._headers(accept=_ACCEPT_BOTH, body=data, version=self.protocol_version)

    def _delay(self, retry: int | None) -> float:
        return max(_MIN_POLL, retry / 1000 if retry is not None else self.reconnect_delay)

    def _end(self) -> None:
        """No more incoming messages: the engine reads what is buffered, then EndOfChannel."""
        self._incoming_send.close()
