"""What every HTTP endpoint and front door here shares.

The interfaces between them (:class:`HttpRequest`, :class:`Responder`,
:class:`Handler`), the ``Host`` / ``Origin`` allow-lists (:class:`HostGuard`),
the routing table of a front door, and :class:`_Endpoint`, what both
endpoints (Streamable HTTP and legacy HTTP+SSE) hold: their limits, their
guard, and the nursery their sessions run in.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import trio

from ._replies import _BatchMember, _error_reply, _Message, _peek_body, _Reply

ServeSession = Callable[..., Awaitable[Any]]


@runtime_checkable
class SessionServer(Protocol):
    """What serves MCP sessions (a ``mcp_trio.server.Server``): an endpoint may take the object
    itself instead of its ``serve_session``, and then also learns what it declares of its tools
    (:class:`ToolHeaderSource`)."""

    async def serve_session(self, channel: Any, *, task_status: Any = ...) -> None: ...


@runtime_checkable
class ToolHeaderSource(Protocol):
    """A server that tells which arguments of each tool travel in ``Mcp-Param-*`` headers
    (2026-07-28): ``Server.tool_header_annotations``."""

    def tool_header_annotations(self, name: str) -> list[tuple[tuple[str, ...], str]] | None: ...


log = logging.getLogger("mcp_trio.http")

DEFAULT_ALLOWED_HOSTS = ("127.0.0.1", "localhost", "[::1]")
_HEADER_SESSION = "mcp-session-id"
#: What a front door reads and drops of a request still coming after its error
#: answer (a body over the limit), so that the client reads the answer instead
#: of the reset a close with unread input makes: at most this long, this much.
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 8 * 1024 * 1024
#: Default bounds on long-lived streams (see :class:`StreamSlots`): open at
#: once in the process, and held by one client address.
DEFAULT_MAX_STREAMS_TOTAL = 512
DEFAULT_MAX_STREAMS_PER_CLIENT = 64
#: Seconds a client refused for lack of room (429, 503) is told to wait.
RETRY_AFTER = 5


# ------------------------------------------------------------- interfaces


@dataclass
class HttpRequest:
    """One HTTP request, as a front door hands it over.

    Attributes:
        method: ``GET``, ``POST`` ...
        headers: Lower-case names; repeated headers joined with ``", "``.
        body: The whole body (front doors enforce ``max_body_size`` while reading).
        path: The request target's path (without the query).
        query: The query string (after ``?``), undecoded.
        auth: What an authorization layer in front of the endpoint verified
            (``mcp_trio.auth.server`` puts the access token here); handlers
            of the requests this POST carries read it as ``ctx.auth``.
        principal: Whom that authorization speaks for (set by the same
            layer; ``None`` without one).  A session belongs to the principal
            of the request that opened it: a request of another principal
            naming it is answered as if it did not exist.
        client: The client's network address (IP, no port) as the front
            door saw it: the socket's peer, or ASGI's ``scope["client"]``;
            ``None`` when unknown.  Per-client limits apply to it.
    """

    method: str
    headers: dict[str, str]
    body: bytes = b""
    path: str = ""
    query: str = ""
    auth: Any = None
    principal: Hashable | None = None
    client: str | None = None


class Handler(Protocol):
    """What a front door serves at a path: :class:`StreamableHTTP` or another
    endpoint (the legacy HTTP+SSE one)."""

    max_body_size: int

    async def handle(self, request: HttpRequest, responder: Responder) -> None: ...


class HostGuard:
    """``Host`` and ``Origin`` allow-lists (DNS rebinding protection).

    ``Host`` must be one ``host[:port]`` (RFC 9110 §7.2, RFC 3986 §3.2.2): a
    comma, whitespace, userinfo, a path or a bad port is refused (421).
    ``allowed_hosts``: names accepted on any port, or ``name:port`` entries
    accepted on that port only (``None``: any ``Host``).  ``allowed_origins``
    applies when an ``Origin`` header is present: an exact
    ``scheme://host[:port]`` match (the scheme's default port may be left
    out).  Its default is same-origin: ``http(s)://`` + an allowed host *on
    the port of the request's* ``Host`` (so a page of another local service,
    ``http://localhost:<other port>``, is refused).  ``None`` with
    ``allowed_hosts=None`` accepts any.  ``null`` and malformed origins are
    refused (403).
    """

    def __init__(
        self,
        allowed_hosts: Iterable[str] | None = DEFAULT_ALLOWED_HOSTS,
        allowed_origins: Iterable[str] | None = None,
    ) -> None:
        self.allowed_hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}
        #: ``None`` with ``allowed_hosts`` set: the same-origin default.
        origins = None if allowed_origins is None else list(allowed_origins)
        self.allowed_origins = None if origins is None else {o.lower() for o in origins}
        self._origins = None if origins is None else {_origin(o) for o in origins} - {None}
        #: The last ``Host`` found allowed (a client repeats its own: not parsed again).
        self._host_ok: str | None = None

    def check(self, request: HttpRequest) -> _Reply | None:
        """The rejection for ``request`` (421 / 403), or None."""
        headers = request.headers
        raw = headers.get("host", "")
        if raw == self._host_ok and "origin" not in headers:
            return None
        host = _authority(raw)
        names = self.allowed_hosts
        if names is not None and (host is None or not {host[0], f"{host[0]}:{host[1]}"} & names):
            _REFUSALS.note("Host", raw, 421, None if host is None else f"--allowed-host {host[0]}")
            return _error_reply(421, f"Host not allowed: {raw!r}")
        origin = headers.get("origin")
        if origin is None:
            self._host_ok = raw
            return None
        if self.allowed_origins is None and self.allowed_hosts is None:
            return None
        parsed = _origin(origin)
        if self._origins is not None:
            allowed = parsed in self._origins
        else:  # same origin: an allowed name on the port the request was sent to
            allowed = (
                parsed is not None
                and host is not None
                and parsed[1] in self.allowed_hosts  # type: ignore[operator]
                and parsed[2] == (host[1] or _DEFAULT_PORTS[parsed[0]])
            )
        if allowed:
            return None
        _REFUSALS.note(
            "Origin", origin, 403, None if parsed is None else f"--allowed-origin {origin.lower()}"
        )
        return _error_reply(403, f"Origin not allowed: {origin!r}")


class _RefusalLog:
    """Logs each ``Host`` / ``Origin`` refusal at WARNING, once per distinct
    value, naming the flag of ``mcp-trio serve`` (or the keyword) that allows
    it.  Bounded: past ``limit`` distinct values, no more are remembered; the
    refusals after that are counted and summed up in a line at each power of
    two, so a client sending endless made-up hosts fills neither the log nor
    memory."""

    #: Longest part of a refused value written to the log.
    _SHOWN = 200

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self.seen: set[tuple[str, str]] = set()
        self.unlogged = 0

    def note(self, header: str, value: str, status: int, flag: str | None) -> None:
        key = (header, value)
        if key in self.seen:
            return
        if len(self.seen) >= self.limit:
            self.unlogged += 1
            if self.unlogged & (self.unlogged - 1) == 0:  # 1, 2, 4, 8 ...
                log.warning(
                    "refused %d more requests for their Host or Origin (not logged one by one: "
                    "%d distinct values were already)",
                    self.unlogged,
                    self.limit,
                )
            return
        self.seen.add(key)
        shown = repr(value[: self._SHOWN]) + ("..." if len(value) > self._SHOWN else "")
        hint = (
            f"allow it with {flag} (mcp-trio serve) or allowed_{header.lower()}s=[...]"
            if flag is not None
            else f"not a valid {'host[:port]' if header == 'Host' else 'scheme://host[:port]'}"
        )
        log.warning("refused %s %s (%d): %s", header, shown, status, hint)


#: The refusals of every guard of the process (see :class:`_RefusalLog`).
_REFUSALS = _RefusalLog()


_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
# host [":" port]: an IP literal or a name (no userinfo, path, comma or space).
_AUTHORITY = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._~%-]+)(?::([0-9]{1,5}))?")
_ORIGIN = re.compile(r"([a-z][a-z0-9+.-]*)://(.+)")


def _authority(value: str) -> tuple[str, int | None] | None:
    """``value`` as (lower-case host, port or None), or None if it is not one
    valid ``host[:port]``."""
    match = _AUTHORITY.fullmatch(value.lower())
    if match is None:
        return None
    port = None if match[2] is None else int(match[2])
    return None if port is not None and port > 65535 else (match[1], port)


def _origin(value: str) -> tuple[str, str, int] | None:
    """An ``Origin`` (RFC 6454 serialization) as (scheme, host, port), the
    scheme's default port filled in; None for ``null`` or a malformed one."""
    match = _ORIGIN.fullmatch(value.lower())
    if match is None or match[1] not in _DEFAULT_PORTS:
        return None
    authority = _authority(match[2])
    if authority is None:
        return None
    return match[1], authority[0], authority[1] or _DEFAULT_PORTS[match[1]]


class Responder(Protocol):
    """Where the answer goes.  ``send`` raises ``trio.BrokenResourceError``
    once the client is gone."""

    async def start(self, status: int, headers: Sequence[tuple[str, str]]) -> None: ...

    async def send(self, data: bytes) -> None: ...

    async def end(self) -> None: ...


# ------------------------------------------------------------ front doors


async def _send_reply(responder: Responder, reply: _Reply) -> None:
    headers = list(reply.headers)
    headers.append(("content-length", str(len(reply.body))))
    try:
        await responder.start(reply.status, headers)
        if reply.body:
            await responder.send(reply.body)
        await responder.end()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


def _declared_length(headers: Sequence[tuple[str, str]]) -> int | None:
    """The ``content-length`` a response declares, if any."""
    for name, value in headers:
        if name.lower() == "content-length":
            return int(value)
    return None


def _routes(endpoint: Handler, path: str, routes: Mapping[str, Handler] | None) -> dict[str, Handler]:
    table = {(p.rstrip("/") or "/"): h for p, h in (routes or {}).items()}
    table[path.rstrip("/") or "/"] = endpoint
    return table


# -------------------------------------------------------------- endpoints


def _busy(status: int, message: str) -> _Reply:
    """A refusal for lack of room, with ``Retry-After``: 429 when the client's
    own address holds its share (RFC 6585: too many requests from this
    client), 503 when the server as a whole is full (RFC 9110 section 15.6.4)."""
    reply = _error_reply(status, message)
    reply.headers.append(("retry-after", str(RETRY_AFTER)))
    return reply


class _Slot:
    """One open stream's place in :class:`StreamSlots`."""

    __slots__ = ("client", "close")

    def __init__(self, client: str | None, close: Callable[[], None]) -> None:
        self.client = client
        self.close = close  # ends the stream at once (cleanly: a resumable one can be resumed)


class StreamSlots:
    """Bounds on long-lived streams, shared by the endpoints of one server:
    Streamable HTTP ``GET`` streams and HTTP+SSE (2024-11-05) streams.

    At most ``total`` are open at once, and at most ``per_client`` of them for
    one client address (``HttpRequest.client``; ``None``: no per-address
    bound; a request of unknown address is bound by the total only).  A client
    address past its share gets 429.  When the total is reached, the oldest
    stream of the address holding the most is closed to make room (its client
    may reconnect), provided that address holds more than the asking one
    would; otherwise 503.  Both refusals carry ``Retry-After``.  So one
    address, or a few, cannot keep another from opening its stream.
    """

    def __init__(
        self, total: int = DEFAULT_MAX_STREAMS_TOTAL, per_client: int | None = DEFAULT_MAX_STREAMS_PER_CLIENT
    ) -> None:
        if total < 1 or (per_client is not None and per_client < 1):
            raise ValueError("stream limits must be at least 1")
        self.total = total
        self.per_client = per_client
        self.open = 0
        self._by_client: dict[str | None, dict[_Slot, None]] = {}  # oldest first

    def take(self, client: str | None, close: Callable[[], None]) -> _Slot | _Reply:
        """A place for a new stream (``close()`` ends it if it is evicted), or the refusal."""
        held = self._by_client.get(client)
        count = len(held) if held else 0
        if client is not None and self.per_client is not None and count >= self.per_client:
            return _busy(429, f"Too many open streams from this client address (at most {self.per_client})")
        if self.open >= self.total and not self._evict(count + 1):
            return _busy(503, f"Too many open streams (at most {self.total})")
        slot = _Slot(client, close)
        self._by_client.setdefault(client, {})[slot] = None
        self.open += 1
        return slot

    def _evict(self, floor: int) -> bool:
        """Close the oldest stream of the address holding the most, if it holds more than ``floor``."""
        top = max(self._by_client.values(), key=len, default=None)
        if top is None or len(top) <= floor:
            return False
        victim = next(iter(top))
        self.release(victim)
        victim.close()
        return True

    def release(self, slot: _Slot | None) -> None:
        """Give ``slot`` back (again: nothing)."""
        held = None if slot is None else self._by_client.get(slot.client)
        if slot is None or held is None or slot not in held:
            return
        del held[slot]
        if not held:
            del self._by_client[slot.client]
        self.open -= 1


class _Endpoint:
    """What both endpoints hold: their limits and :class:`HostGuard`, the
    nursery their sessions run in (so nothing outlives :meth:`run`), and the
    checks every POSTed JSON body passes (:meth:`_json_body`)."""

    #: Whether :meth:`run` hands the endpoint to ``task_status.started``.
    _started_with_self = False

    def __init__(
        self,
        serve_session: ServeSession,
        max_sessions: int,
        max_body_size: int,
        allowed_hosts: Iterable[str] | None,
        allowed_origins: Iterable[str] | None,
    ) -> None:
        self.serve_session = serve_session
        self.max_sessions = max_sessions
        self.max_body_size = max_body_size
        self.guard = HostGuard(allowed_hosts, allowed_origins)
        self._nursery: trio.Nursery | None = None

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Own the nursery sessions run in; cancel it to end every session."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started(self if self._started_with_self else None)
            await trio.sleep_forever()

    def _json_body(self, request: HttpRequest) -> _Message | list[_BatchMember] | _Reply:
        """A POST body's message(s), or the reply refusing it: 415 for a
        ``Content-Type`` other than JSON, 413 over ``max_body_size``, 400 for a
        body that is not JSON text."""
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return _error_reply(415, "Unsupported Media Type: Content-Type must be application/json")
        if len(request.body) > self.max_body_size:
            return _error_reply(413, f"Request body larger than {self.max_body_size} bytes")
        return _peek_body(request.body)


class Wakeup:
    """Where a task waits until another wakes it: trio's parking lot cut down to
    what one consumer of a stream needs (a waiter list, no statistics, no
    breaking): a wait and its wake cost about 4 µs less.  Like
    ``ParkingLot.unpark_all``, :meth:`wake` wakes every task waiting then (and
    nothing if none waits: a caller checks its condition before it waits)."""

    __slots__ = ("_waiters",)

    def __init__(self) -> None:
        self._waiters: list[trio.lowlevel.Task] = []

    async def wait(self) -> None:
        """Wait for the next :meth:`wake` (a cancellation point)."""
        task = trio.lowlevel.current_task()
        waiters = self._waiters
        waiters.append(task)

        def abort(_: object) -> trio.lowlevel.Abort:
            waiters.remove(task)  # (not woken: still in the list it joined)
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)

    def wake(self) -> None:
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for task in waiters:
                trio.lowlevel.reschedule(task)
