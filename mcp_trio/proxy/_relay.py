"""The stdio relay of a proxy: a proxy served over stdio in front of a server it started as
its child passes the plain calls of its client between the two pipes in OS threads, without
the sessions (docs/guide/composition.md, "The stdio relay").

Rules:

* **When.** The proxy is served over stdio (``serve_stdio``, ``mcp-trio serve``: told before
  its lifespan opens the upstream session) with stdin and stdout two pipes, and its upstream is
  a command line: the relay holds both pairs of pipes (:mod:`._pipes`).  It relays
  once the proxy's session has forwarded one request the usual way (so both handshakes are
  done), in a revision that has a handshake (up to 2025-11-25), with no middleware on the proxy
  and no ``validate``.  It stops at a loss of the upstream, and starts again at the next
  request the session forwards; it takes no new call once a graceful shutdown has begun.
* **What.** A request whose method the upstream's capabilities offer among ``tools/list``,
  ``tools/call``, ``resources/list``, ``resources/templates/list``, ``resources/read``,
  ``prompts/list``, ``prompts/get`` and ``completion/complete``, with an integer or string
  id, params that are an object or absent, no ``progressToken`` and no ``task``.  Its id is
  rewritten (``relay-<n>``, a space the upstream session never uses) and the frame written
  upstream as it came otherwise; the answer comes back with the client's id, its result or
  error untouched.  Everything else (the handshake, batches, malformed messages, pings, asks,
  notifications, progress) goes to the sessions, as without the relay.
* **As the session path does.** A ``notifications/cancelled`` for a relayed call is passed
  upstream (with the relay's id) and its answer dropped; a call not answered within the
  proxy's ``timeout`` is answered with -32603 and cancelled upstream; a loss of the upstream
  answers every relayed call in flight with -32603 naming it; an answer that is not a valid
  JSON-RPC response is replaced by -32603; a request whose id a relayed call in flight holds
  is answered -32600, whatever its method, and a call whose id a request of the session holds
  (up to ``_HANDED_MOST`` noted, until the session answers it) goes to the session, which
  answers -32600: one answer per request, on either path.  At most ``max_in_flight`` of the
  stdio session (64 by default) are relayed at once; the session takes the others, as its
  own.  Every relayed call is counted in the ``mcp_upstream_*`` metrics.  An ask of the
  upstream made while only relayed calls are in flight goes to the stdio client (when it
  declared the capability), and its notifications too.
* **Never stuck on a pipe.**  The thread reading the client writes to the child only when the
  pipe takes the frame at once; else the call goes to the session, which queues it (a busy
  child cannot stop the proxy reading its client).  Answers are written to stdout by the
  thread reading the child, waiting for room (a client that does not read stops its answers,
  as it would the session's).  What trio writes goes through :meth:`OutPipe.send`.
* Relayed calls are counted in the proxy server's request statistics (``Server.statistics``,
  ``mcp_requests_*``) as the stdio session's requests, within a second (:meth:`_fold`; those
  in flight in the server's count only: the session's own admits its requests).  A graceful
  shutdown waits for them apart (and cuts them at its end with the session's, each answered).
"""

from __future__ import annotations

import logging
import math
import os
import stat
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from msgspec import UNSET, Raw, UnsetType

from .. import _jsonrpc as rpc
from .._engine._context import RequestContext
from .._engine._session import Session
from ..transports._base import Frame, MessageChannel
from ..transports.stdio import (
    DEFAULT_MAX_MESSAGE_SIZE,
    StreamChannel,
    open_stdio_server_channel,
    stdio_server_pipes,
)
from ..types import _versions
from ._metrics import ForwardingTally
from ._pipes import InPipe, OutPipe, PipeChannel

if TYPE_CHECKING:
    from ..server import GracefulShutdown, Server
    from ._upstream import Upstreams

__all__ = ["StdioRelay"]

log = logging.getLogger("mcp_trio.proxy")

PREFIX = "relay-"
_PREFIX_BYTES = PREFIX.encode()
#: The methods relayed, by the capability of the upstream that offers them.
RELAYED = {
    "tools": ("tools/list", "tools/call"),
    "resources": ("resources/list", "resources/templates/list", "resources/read"),
    "prompts": ("prompts/list", "prompts/get"),
    "completions": ("completion/complete",),
}
#: Seconds relayed calls still in flight get to be answered once the client's input ended.
#: Ids of requests the session has not answered yet, noted at most (past them, a relayed call
#: is not kept from an id the session holds).
_HANDED_MOST = 4096
EOF_GRACE = 2.0
_CANCELLED = "notifications/cancelled"


class _Message(msgspec.Struct, omit_defaults=True):
    """A message of the client as the relay reads it: its id and method, the rest kept raw."""

    jsonrpc: str | UnsetType = UNSET
    id: int | str | None | UnsetType = UNSET
    method: str | UnsetType = UNSET
    params: Raw | UnsetType = UNSET


class _Answer(msgspec.Struct, omit_defaults=True):
    """A message of the upstream as the relay reads it: any JSON in each member, so that an
    answer to a relayed call is recognized by its id even when the rest is not valid."""

    jsonrpc: Raw | UnsetType = UNSET
    id: Any = UNSET
    method: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


class _Meta(msgspec.Struct):
    progressToken: Raw | UnsetType = UNSET


class _Params(msgspec.Struct):
    """What the relay reads of a request's params (an object)."""

    meta: _Meta | UnsetType = msgspec.field(default=UNSET, name="_meta")
    task: Raw | UnsetType = UNSET


class _Cancel(msgspec.Struct, omit_defaults=True):
    requestId: int | str
    reason: str | UnsetType = UNSET


class _Error(msgspec.Struct):
    code: int
    message: str
    data: Raw | UnsetType = UNSET


_decode = msgspec.json.Decoder(_Message).decode
_decode_answer = msgspec.json.Decoder(_Answer).decode
_decode_params = msgspec.json.Decoder(_Params).decode
_decode_cancel = msgspec.json.Decoder(_Cancel).decode
_decode_error = msgspec.json.Decoder(_Error).decode
_decode_any = msgspec.json.decode
_encode = msgspec.json.Encoder().encode
# (RecursionError: nesting deeper than the decoder goes; the session answers what it can)
_MALFORMED = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


class _Upstream:
    """The pipes of one upstream child (one connection of the upstream session)."""

    __slots__ = ("out", "closed")

    def __init__(self, out: OutPipe) -> None:
        self.out = out
        #: Set once the upstream session closed its channel (it knows the connection is gone).
        self.closed = threading.Event()


class _Call:
    """A relayed call in flight."""

    __slots__ = ("own", "client_id", "method", "began", "deadline", "upstream")

    def __init__(
        self, own: str, client_id: int | str, method: str, began: float, timeout: float | None, up: _Upstream
    ) -> None:
        self.own = own  # (its id upstream)
        self.client_id = client_id
        self.method = method
        self.began = began
        self.deadline = math.inf if timeout is None else began + timeout
        self.upstream = up

    def cancel_line(self, reason: str) -> bytes:
        """The ``notifications/cancelled`` telling the upstream this call is cancelled."""
        params = {"requestId": self.own, "reason": reason}
        return _encode({"jsonrpc": "2.0", "method": _CANCELLED, "params": params}) + b"\n"


class _StdioSession:
    """What the relay keeps of the stdio session: the ids of the requests the session holds
    (handed to it, not answered yet: no relayed call takes them), and its request statistics,
    to which the relayed calls are added as its own (:meth:`fold`)."""

    __slots__ = ("session", "_lock", "_handed", "_tally", "_outcomes", "begun", "_counted")

    def __init__(self, tally: ForwardingTally) -> None:
        self.session: Session | None = None  # (once relaying)
        self._lock = threading.Lock()  # (over the ids handed)
        self._handed: dict[int | str, int] = {}  # (how many requests with each id it holds)
        self._tally = tally
        self._outcomes: deque[str] = deque()  # (of the calls answered, for its statistics)
        #: Calls the relay took, to answer itself (the client's thread's alone).
        self.begun = 0
        self._counted = 0  # (of them, those in its statistics; trio's)

    def holds(self, client_id: int | str) -> bool:
        """Whether a request of the session's has the id ``client_id``."""
        return client_id in self._handed

    def hand(self, client_id: int | str) -> None:
        """A request goes to the session: its id is in use there until the session answers
        it (up to ``_HANDED_MOST`` ids noted)."""
        with self._lock:
            handed = self._handed
            if len(handed) < _HANDED_MOST or client_id in handed:
                handed[client_id] = handed.get(client_id, 0) + 1

    def answered(self, data: bytes) -> None:
        """The session writes ``data`` to the client (trio): an answer frees its id."""
        if not self._handed:
            return
        try:
            answer = _decode_answer(data)
        except _MALFORMED:
            return
        client_id = answer.id
        if (
            answer.method is not UNSET
            or (answer.result is UNSET and answer.error is UNSET)
            or not isinstance(client_id, int | str)
            or isinstance(client_id, bool)
        ):
            return
        with self._lock:
            left = self._handed.get(client_id, 0) - 1
            if left > 0:
                self._handed[client_id] = left
            else:
                self._handed.pop(client_id, None)

    def ended(self, call: _Call, outcome: str) -> None:
        """``call`` is answered (or cancelled) with ``outcome`` (any thread): counted at the
        next :meth:`fold`."""
        self._tally.later(call.method, outcome, time.monotonic() - call.began)
        self._outcomes.append(outcome)

    def fold(self) -> None:
        """Count what the threads did (trio): in the upstream metrics, and in the session's
        request statistics (``Server.statistics()``, ``mcp_requests_*``) as its own requests,
        begun, then answered with a result (``ok``), an error or cancelled."""
        self._tally.fold()
        session = self.session
        if session is None:
            return
        outcomes = self._outcomes
        ended = Counter(outcomes.popleft() for _ in range(len(outcomes)))
        begun = self.begun - self._counted  # (read after: every call ended has begun)
        self._counted += begun
        cancelled = ended.pop("cancelled", 0)
        error = sum(ended.values()) - ended["ok"]
        session.tally.count_relayed(begun, ended["ok"] + error + cancelled, error, cancelled)


class StdioRelay:
    """A proxy's stdio relay (see the module's docstring); ``where`` names the proxied server."""

    def __init__(
        self, server: Server, upstreams: Upstreams, where: str, timeout: float | None, tally: ForwardingTally
    ) -> None:
        self._server = server
        self._upstreams = upstreams
        self._where = where
        self._timeout = timeout
        self._side = _StdioSession(tally)
        self._lock = threading.Lock()  # (over the calls, their ids and what is attached)
        self._calls: dict[str, _Call] = {}  # (by the relay's id)
        self._by_client: dict[int | str, str] = {}  # (the relay's id of each client id)
        self._count = 0
        self._wanted = False  # (served over stdio: the child's pipes are to be taken)
        self._upstream: _Upstream | None = None
        self._down: OutPipe | None = None
        self._channel: PipeChannel | None = None  # (the stdio session's; one for the relay's life)
        self._methods: frozenset[str] = frozenset()  # (relayed now; none: not relaying)
        self._bound = 0  # (relayed calls in flight at most: the stdio session's max_in_flight)
        self._stopping: trio.Event | None = None  # (a graceful shutdown's)
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._ending = 0  # (calls taken out of the table whose answer trio is writing)
        self._writing = 0  # (those whose answer a thread is writing; under the lock)
        #: Calls relayed so far (``mcp_upstream_relayed_total``).
        self.relayed = 0

    @property
    def relaying(self) -> bool:
        """Whether calls are relayed now."""
        return bool(self._methods)

    @property
    def in_flight(self) -> int:
        """Relayed calls not answered yet (a graceful shutdown waits for them)."""
        return len(self._calls) + self._ending + self._writing

    # ------------------------------------------------------------------ the pipes

    def upstream_channel(self, channel: MessageChannel) -> MessageChannel:
        """``connect(wrap_channel=...)`` of the upstream session: a child's pipes are taken
        over when the proxy is served over stdio (any other channel is returned as it is)."""
        if not self._wanted or not isinstance(channel, StreamChannel):
            return channel
        fds = channel.pipes()
        if fds is None:
            return channel
        out = OutPipe(os.dup(fds[1]))
        up = _Upstream(out)
        reading = InPipe(
            os.dup(fds[0]),
            channel.max_message_size,
            self._from_upstream,
            partial(self._output_ended, up),
            "mcp-trio proxy relay: upstream",
        )

        async def close() -> None:
            calls = self._detach(up)
            try:
                await _close(out)
                await channel.aclose()
            finally:
                up.closed.set()  # (the last step: the session is closed as this returns)
                # (answered by tasks that run once it is: the client's next call waits for the
                # connection opened again, instead of going to the session closing)
                for call in calls:
                    self._finish(call, self._lost_text(call, "the upstream session was closed"), "lost")

        with self._lock:
            self._upstream = up
        reading.start()
        return PipeChannel(reading, out, close)

    def downstream(
        self, shutdown: GracefulShutdown | None, options: dict[str, Any]
    ) -> AbstractAsyncContextManager[MessageChannel]:
        """The channel ``serve_stdio`` serves the proxy over (called before the proxy's lifespan
        is entered): stdin and stdout held by the relay when its upstream is a child it holds,
        else the usual one."""
        self._wanted = True
        return self._downstream(shutdown, options)

    @asynccontextmanager
    async def _downstream(
        self, shutdown: GracefulShutdown | None, options: dict[str, Any]
    ) -> AsyncIterator[MessageChannel]:
        if self._upstream is None or self._channel is not None or not _two_pipes():
            async with open_stdio_server_channel(**options) as plain:
                yield plain
            return
        size = options.get("max_message_size")
        with stdio_server_pipes(protect_stdout=options.get("protect_stdout", True)) as (in_fd, out_fd):
            out = OutPipe(out_fd)
            reading = InPipe(
                in_fd,
                size if isinstance(size, int) else DEFAULT_MAX_MESSAGE_SIZE,
                self._from_client,
                lambda: None,
                "mcp-trio proxy relay: client",
            )
            # (stdout outlives it; what the session writes is looked at for its answers)
            channel = PipeChannel(reading, out, trio.lowlevel.checkpoint, self._side.answered)
            self._down, self._channel = out, channel
            if shutdown is not None:
                self._stopping = shutdown.stopping
                shutdown._hold(self)
            self._token = trio.lowlevel.current_trio_token()
            reading.start()
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._watching)
                    try:
                        yield channel
                        with trio.move_on_after(EOF_GRACE):  # (calls in flight are answered)
                            while self.in_flight:  # noqa: ASYNC110 (threads answer them: nothing to wait on)
                                await trio.sleep(0.01)
                    finally:
                        nursery.cancel_scope.cancel()
            finally:
                self._stop()
                with trio.CancelScope(shield=True):
                    await channel.aclose()
                    with trio.move_on_after(EOF_GRACE):  # (an answer being written to no reader)
                        await _close(out)

    def _stop(self) -> None:
        """The stdio session is over: stop relaying; the calls left are cancelled upstream."""
        self._nursery = None
        with self._lock:
            self._methods = frozenset()
            self._down = None
            left = [call for call in map(self._take, list(self._calls)) if call is not None]
        for call in left:
            call.upstream.out.write_now(call.cancel_line("the proxy's client went away"))
            self._side.ended(call, "cancelled")
        self._side.fold()
        self._side.session = None

    # ------------------------------------------------------------------ when to relay

    def consider(self, ctx: RequestContext) -> None:
        """A request the proxy forwarded the usual way: relay from now on, if its session is
        the stdio one and everything else holds (see the module's docstring)."""
        if self._methods or ctx.session.channel is not self._channel or self._server.middleware:
            return
        primary = self._upstreams.primary
        client = primary.current() if primary is not None else None
        if client is None or client.protocol_version != ctx.version or _versions.is_stateless(ctx.version):
            return
        offered = client.server_capabilities
        methods = frozenset(m for kind, names in RELAYED.items() if kind in offered for m in names)
        with self._lock:
            if self._upstream is None or self._down is None:
                return
            self._methods = methods
            self._bound = ctx.session.max_in_flight
        self._side.session = ctx.session

    def asking(self, version: str, capability: str) -> Session | None:
        """The stdio session, if an ask of the upstream may be put to it now: relayed calls
        are in flight, in ``version``, and its client declared ``capability``."""
        session = self._side.session
        if session is None or not self._calls or session.closed.is_set():
            return None
        if session.protocol_version != version or capability not in session.peer_capabilities:
            return None
        return session

    # ------------------------------------------------------------------ the client's frames (a thread)

    def _from_client(self, frame: Frame) -> bool:
        """Relay ``frame`` upstream if it is a call to relay (True: taken).  A request the
        session takes is noted (:meth:`_StdioSession.hand`); one whose id a relayed call in
        flight holds is answered -32600 here, wherever it would have gone."""
        try:
            message = _decode(frame.data)
        except _MALFORMED:
            return False
        method, client_id = message.method, message.id
        if message.jsonrpc != "2.0" or not isinstance(method, str):
            return False
        if not isinstance(client_id, int | str):
            return method == _CANCELLED and self._cancel(message)
        stopping = self._stopping
        relay = method in self._methods and _plain(message) and (stopping is None or not stopping.is_set())
        own = ""
        with self._lock:
            up = self._upstream
            if client_id in self._by_client:
                up = None  # (a duplicate: answered below)
            elif (
                not relay
                or self._side.holds(client_id)  # (the session refuses it: its id is in use there)
                or up is None
                or not self._methods
                or len(self._calls) >= self._bound  # (the session queues it, or refuses it)
            ):
                self._side.hand(client_id)
                return False
            else:
                self._count += 1
                self._side.begun += 1
                own = f"{PREFIX}{self._count}"
                self._calls[own] = _Call(own, client_id, method, time.monotonic(), self._timeout, up)
                self._by_client[client_id] = own
        if up is None:
            text = f"Invalid request: id {client_id!r} is already in use by a request in progress"
            self._write_soon(self._down, rpc.encode_error(client_id, rpc.INVALID_REQUEST, text) + b"\n")
            return True
        message.id = own
        if up.out.write_now(_encode(message) + b"\n"):
            self.relayed += 1  # (this thread's alone)
            return True
        with self._lock:  # (the pipe is full, or the child gone: the session takes the call)
            if self._take(own) is None:
                return True  # (answered by whoever took it)
            self._side.begun -= 1
            self._side.hand(client_id)
            return False

    def _cancel(self, message: _Message) -> bool:
        """A client's ``notifications/cancelled``: passed upstream if it cancels a relayed call."""
        if message.params is UNSET or message.id is not UNSET:
            return False
        try:
            cancel = _decode_cancel(message.params)
        except _MALFORMED:
            return False
        with self._lock:
            own = self._by_client.get(cancel.requestId)
            call = self._take(own) if own is not None else None
        if call is None or own is None:
            return False
        cancel.requestId = own
        self._side.ended(call, "cancelled")
        line = _encode({"jsonrpc": "2.0", "method": _CANCELLED, "params": cancel}) + b"\n"
        self._write_soon(call.upstream.out, line)
        return True

    def _take(self, own: str) -> _Call | None:
        """The call ``own`` out of the tables (under the lock)."""
        call = self._calls.pop(own, None)
        if call is not None and self._by_client.get(call.client_id) == own:
            del self._by_client[call.client_id]
        return call

    def _write_soon(self, pipe: OutPipe | None, line: bytes) -> None:
        """Write ``line`` to ``pipe`` now if it takes it at once, else from trio (a thread)."""
        if pipe is None or pipe.write_now(line) is not None:
            return
        token = self._token
        if token is not None:
            try:
                token.run_sync_soon(self._start, _send_quietly, pipe, line)
            except trio.RunFinishedError:
                pass

    def _start(self, task: Callable[..., Awaitable[None]], *args: Any) -> bool:
        """Start ``task(*args)`` in the relay's nursery, if it is still open (in trio)."""
        nursery = self._nursery
        if nursery is None:
            return False
        try:
            nursery.start_soon(task, *args)
        except RuntimeError:  # (the nursery is closing)
            return False
        return True

    # ------------------------------------------------------------------ the upstream's frames (a thread)

    def _from_upstream(self, frame: Frame) -> bool:
        """Pass ``frame`` to the client if it answers a relayed call (True: taken)."""
        data = frame.data
        if _PREFIX_BYTES not in data:  # (a shortcut: no relayed id in it)
            return False
        try:
            message = _decode_answer(data)
        except _MALFORMED:
            return False
        own = message.id
        if message.method is not UNSET or not isinstance(own, str) or not own.startswith(PREFIX):
            return False
        with self._lock:
            call = self._take(own)
            self._writing += call is not None  # (in flight until written)
        if call is None:
            return True  # (an answer to a call cancelled, timed out or lost: no one waits for it)
        message.id = call.client_id
        problem = _fault(message)
        if problem is None:
            outcome = "ok" if message.error is UNSET else "error"
            line = _encode(message) + b"\n"
        else:
            outcome = "invalid"
            text = (
                f"the proxied server {self._where} answered {call.method} "
                f"with a message that is not valid: {problem}"
            )
            line = rpc.encode_error(call.client_id, rpc.INTERNAL_ERROR, text) + b"\n"
        self._write_answer(line)
        self._side.ended(call, outcome)
        return True

    def _write_answer(self, line: bytes) -> None:
        """Write an answer to stdout (a thread), waiting for room: a client that does not read
        stops its answers.  It was counted in :attr:`in_flight` (``_writing``) until now."""
        try:
            down = self._down
            if down is not None:
                down.write(line)
        finally:
            with self._lock:
                self._writing -= 1

    def _output_ended(self, up: _Upstream) -> None:
        """The upstream's output ended (its thread): once the upstream session knows (so that
        the next request waits for the connection opened again), the relayed calls are answered."""
        up.closed.wait(EOF_GRACE)
        for call in self._detach(up, writing=True):
            text = self._lost_text(call, "its output ended")
            self._write_answer(rpc.encode_error(call.client_id, rpc.INTERNAL_ERROR, text) + b"\n")
            self._side.ended(call, "lost")

    def _detach(self, up: _Upstream, *, writing: bool = False) -> list[_Call]:
        """Stop relaying to ``up``; its calls in flight, out of the tables (``writing``: each
        counted in :attr:`in_flight` until :meth:`_write_answer` wrote its answer)."""
        with self._lock:
            if self._upstream is up:
                self._upstream = None
                self._methods = frozenset()
            owns = [own for own, call in self._calls.items() if call.upstream is up]
            calls = [call for call in map(self._take, owns) if call is not None]
            self._writing += len(calls) if writing else 0
            return calls

    def _lost_text(self, call: _Call, why: str) -> str:
        return (
            f"the connection to the proxied server {self._where} was lost while "
            f"{call.method} was in flight ({why})"
        )

    # ------------------------------------------------------------------ deadlines and shutdown (trio)

    async def _watching(self) -> None:
        """Answer the relayed calls past ``timeout`` (looked at ten times a timeout, at most
        once a second) with -32603, cancelling them upstream; count what the threads counted."""
        timeout = self._timeout
        tick = 1.0 if timeout is None else min(1.0, timeout / 10)
        while True:
            await trio.sleep(tick)
            self._side.fold()
            if timeout is None:
                continue
            now = time.monotonic()
            with self._lock:
                late = [self._take(own) for own, call in list(self._calls.items()) if call.deadline <= now]
            for call in late:
                if call is not None:
                    text = f"the proxied server {self._where} did not answer {call.method} within {timeout} s"
                    self._finish(call, text, "timeout")

    def _finish(self, call: _Call, text: str, outcome: str) -> None:
        """Answer ``call`` (out of the table) with -32603 saying ``text`` and cancel it upstream,
        in a task of trio's (counted in :attr:`in_flight` until written)."""
        self._side.ended(call, outcome)
        self._ending += 1
        if not self._start(self._answer, call, text):
            self._ending -= 1

    async def _answer(self, call: _Call, text: str) -> None:
        # (the cancellation first if the child's pipe takes it at once: the client's next call
        # then finds the pipe free; else after the answer, which never waits for the child)
        cancel = call.cancel_line(text)
        cancelled = call.upstream.out.write_now(cancel)
        try:
            down = self._down
            if down is not None:
                await _send_quietly(down, rpc.encode_error(call.client_id, rpc.INTERNAL_ERROR, text) + b"\n")
        finally:
            self._ending -= 1
        if cancelled is None:
            await _send_quietly(call.upstream.out, cancel)

    def cut(self, reason: str) -> None:
        """A graceful shutdown's end: answer every relayed call in flight with -32603 saying ``reason``."""
        with self._lock:
            calls = [self._take(own) for own in list(self._calls)]
        for call in calls:
            if call is not None:
                self._finish(call, reason, "cancelled")


def _plain(message: _Message) -> bool:
    """Whether a request's params are an object (or absent) without a progress token or a task."""
    if message.params is UNSET:
        return True
    try:
        params = _decode_params(message.params)
    except _MALFORMED:
        return False
    meta = params.meta
    return params.task is UNSET and (meta is UNSET or meta.progressToken is UNSET)


def _two_pipes() -> bool:
    """Whether stdin and stdout are two pipes (as a client starting the proxy makes them): the
    relay holds them, each in the mode it needs.  A terminal, a socket, a file: the session."""
    try:
        read, write = os.fstat(0), os.fstat(1)
    except OSError:
        return False
    fifos = stat.S_ISFIFO(read.st_mode) and stat.S_ISFIFO(write.st_mode)
    return fifos and (read.st_dev, read.st_ino) != (write.st_dev, write.st_ino)


def _fault(message: _Answer) -> str | None:
    """What makes ``message`` not a valid JSON-RPC response (None: nothing)."""
    raw = message.jsonrpc
    try:  # (the bytes as they mostly come, else what they decode to)
        version = None if raw is UNSET else "2.0" if bytes(raw) == b'"2.0"' else _decode_any(raw)
    except _MALFORMED:
        version = None
    if version != "2.0":
        return 'its "jsonrpc" member is not "2.0"'
    if message.result is UNSET and message.error is UNSET:
        return "it has neither a result nor an error"
    if message.result is not UNSET and message.error is not UNSET:
        return "it has both a result and an error"
    if message.error is not UNSET:
        try:
            _decode_error(message.error)
        except _MALFORMED:
            return "its error is not an object with an integer code and a string message"
    return None


async def _send_quietly(pipe: OutPipe, line: bytes) -> None:
    """``pipe.send(line)``; a broken pipe is nobody's to hear of."""
    try:
        await pipe.send(line)
    except trio.BrokenResourceError:
        pass


async def _close(out: OutPipe) -> None:
    """Close ``out`` from trio: at once, or in a thread if a relay thread is writing."""
    if not out.close_now():
        await trio.to_thread.run_sync(out.close, abandon_on_cancel=True)
