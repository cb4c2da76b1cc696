"""What both front doors bound per connection: how many connections at once
(in all and per client address) and how long a write may wait.

:class:`ConnectionGate` is the accept loop of :func:`serve_h11` and
:func:`serve_hypercorn`.  It accepts a connection only while fewer than
``max_connections`` are open: further clients wait in the kernel's listen
backlog (and their connections cost no file descriptor here) until one ends,
except that a connection that is not working for its client (no whole
request head yet, kept alive between requests, or a body trickling in) is
evicted to make room.  A connection from an address that
already has ``max_per_client`` open is closed at once, so that one address
(one attacker) cannot take the whole table from the others; the last
sixteenth of the table is kept for addresses holding few connections.  Under a
flood, connections start, and whole requests are answered, by client address
round-robin, so that a few addresses cannot push another's client to the back.

:class:`TimedStream` gives a socket stream a write deadline: a ``send_all``
that waits longer than ``write_timeout`` (a client that does not read)
closes the connection and fails, which frees what the write held.  It
bounds writes made under a shielded cancel scope too (hypercorn's).
"""

from __future__ import annotations

import collections
import contextlib
import errno
import logging
import math
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

import trio

__all__ = [
    "DEFAULT_MAX_CONNECTIONS",
    "ConnectionGate",
    "Counting",
    "ReadClock",
    "Receiver",
    "TimedStream",
    "default_per_client",
    "listener_url",
    "open_listeners",
    "peer_address",
    "read_now",
    "send_in_chunks",
    "server_ssl_context",
    "write_now",
]

from . import DEFAULT_MAX_CONNECTIONS  # (the default of ConnectionGate)

log = logging.getLogger("mcp_trio.http")

#: accept() errors that mean "out of descriptors or memory for now" (as in
#: trio.serve_listeners): wait a little and accept again.
_ACCEPT_CAPACITY_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS})
_ACCEPT_PAUSE = 0.1
#: accept() errors about one connection only (it was reset while queued): accept the next.
_ACCEPT_IGNORED_ERRNOS = frozenset({errno.ECONNABORTED, errno.EPERM, errno.EPROTO, errno.EINTR})
#: Connections accepted at most between two checkpoints of the accept loop; those closed at
#: once (past their address's share) cost a few microseconds each, and count ``_REFUSED``.
_BURST = 64
_REFUSED = 0.25
#: Connections whose handler starts, or that are evicted, between two checkpoints of the
#: accept loop; and handlers started a round by the task that starts those accepted past
#: them (by address, round-robin).  (An evicted connection's task runs next round to end.)
_STARTS = 8
#: How long a new connection may take to send its first request head before
#: it can be evicted to make room (past any round trip, so a client whose
#: request is on its way is not cut off; a flood of connections waits this
#: long for each other).
_EVICT_AFTER = 0.25
#: Of the connections that may be evicted, how many of the longest waiting are
#: weighed (the one whose address holds the most goes), and how many slow
#: bodies are walked at most.
_SAMPLE = 16
_WALK = 64
#: A body on its way for ``_BODY_GRACE`` seconds at under ``_MIN_BODY_RATE``
#: bytes a second may be evicted to make room (a client on the slowest mobile
#: link sends some 50 KiB a second; a slowloris body, bytes a second).
_BODY_GRACE = 1.0
_MIN_BODY_RATE = 16 * 1024
#: An evicted connection's door has this long to end it once its socket is shut down.
_EVICT_GRACE = 1.0
#: The last ``1/_RESERVE_PART`` of the table is kept for addresses holding few connections
#: (see :class:`ConnectionGate`).
_RESERVE_PART = 16
#: Whole requests answered at once (holding a turn) before the next ones wait for a turn,
#: given out round-robin by client address (see :class:`_Turns`); a request holds its turn
#: for ``_TURN_SPAN`` seconds at most.
_TURNS = 16
_TURN_SPAN = 0.1
#: Turns an address is given at once, whatever the others hold.
_OWN_TURNS = 2


def listener_url(listener: trio.SocketListener, scheme: str = "http") -> str:
    """The URL of the server bound by ``listener`` (``http://127.0.0.1:43121``)."""
    address = listener.socket.getsockname()
    shown = f"[{address[0]}]" if ":" in address[0] else address[0]
    return f"{scheme}://{shown}:{address[1]}"


async def open_listeners(host: str, port: int, *, reuse_port: bool = False) -> list[trio.SocketListener]:
    """Listening sockets on every address of ``host`` at ``port`` (as
    :func:`trio.open_tcp_listeners`).  With ``reuse_port``, each socket has
    ``SO_REUSEPORT`` (Linux, the BSDs): processes of one user may then listen
    on the same port, and the kernel spreads the new connections among them
    (``mcp-trio serve --workers``)."""
    if not reuse_port:
        return await trio.open_tcp_listeners(port, host=host)
    if not hasattr(socket, "SO_REUSEPORT"):
        raise OSError("SO_REUSEPORT is not available on this system")
    found = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[trio.socket.SocketType] = []
    try:
        for family, kind, proto, _, address in found:
            sock = trio.socket.socket(family, kind, proto)
            sockets.append(sock)  # (closed with the others on a failure)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            await sock.bind(address)
            sock.listen(0xFFFF)  # (the kernel caps it at net.core.somaxconn)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return [trio.SocketListener(sock) for sock in sockets]


# The most one system call writes: a large answer goes out in pieces, each of them a step of
# its own, so that writing it (the kernel's copy of megabytes, on loopback its TCP receive
# path too) never holds the other connections up for milliseconds at a time.
WRITE_CHUNK = 256 * 1024


def write_now(fd: int, parts: Sequence[bytes | memoryview]) -> int:
    """Write what the socket ``fd`` takes at once, without waiting, up to
    ``WRITE_CHUNK`` bytes: the bytes written (0 for a closed socket's -1).  ``parts`` go
    out in one system call, none of them copied.  Most answers fit: they need no timeout
    and no trip through the scheduler; the caller sends the rest under its write timeout
    (with :func:`send_in_chunks`).

    Raises:
        trio.BrokenResourceError: the client reset the connection (or a broken pipe).
    """
    if fd < 0:
        return 0
    size = 0
    for index, part in enumerate(parts):
        size += len(part)
        if size > WRITE_CHUNK:
            parts = [*parts[:index], memoryview(part)[: len(part) - (size - WRITE_CHUNK)]]
            break
    try:
        return os.writev(fd, parts) if len(parts) > 1 else os.write(fd, parts[0])
    except (BlockingIOError, InterruptedError):
        return 0
    except OSError:
        raise trio.BrokenResourceError("the client disconnected") from None


def peer_address(stream: trio.SocketStream) -> str | None:
    """The client's IP address (``None`` once the socket is gone)."""
    try:
        return str(stream.socket.getpeername()[0])
    except OSError:
        return None


class _Timed(Protocol):
    read_deadline: float
    read_scope: trio.CancelScope


class ReadClock:
    """Times the reads of a server's connections, one task for them all.

    A connection that waits for its client's bytes sets its ``read_deadline``
    (a plain number) rather than its read scope's deadline: moving a trio
    deadline costs a few microseconds each time, and a kept-alive connection
    would move it twice per request (on while it waits, off once the request
    is whole).  This clock looks at every connection of the server each tick
    and cancels the ``read_scope`` of those whose deadline has passed.  A tick
    is a tenth of the shortest timeout ``shortest`` (at most half a second), so
    a read times out at most that much late.
    """

    def __init__(self, shortest: float) -> None:
        self.tick = min(max(shortest / 10, 0.001), 0.5)
        self.connections: set[_Timed] = set()

    async def run(self) -> None:
        while True:
            await trio.sleep(self.tick)
            self._expire(trio.current_time())

    def _expire(self, now: float) -> None:
        # (a method of its own: no loop variable keeps a closed connection alive while run sleeps)
        for connection in self.connections:  # (no await in here: nothing changes the set)
            if connection.read_deadline <= now:
                connection.read_deadline = math.inf
                connection.read_scope.cancel()


class Receiver:
    """Reads a connection's stream as ``receive_some`` does, without the read that fails.

    After a read that emptied the socket (it returned less than it asked
    for), the next one waits for data first instead of trying: a client that
    waits for our answer has sent nothing more, and trying would cost a
    failed system call (and trio's exception for it) per request.  Over TLS
    (no socket to watch directly) it is the stream's own ``receive_some``.
    """

    __slots__ = ("stream", "socket", "drained")

    def __init__(self, stream: trio.SocketStream | trio.SSLStream[trio.SocketStream]) -> None:
        self.stream = stream
        self.socket = stream.socket if isinstance(stream, trio.SocketStream) else None
        self.drained = False  # the last read returned less than it asked for

    async def receive(self, size: int, checkpoint: bool = True) -> bytes | None:
        """Up to ``size`` bytes; ``b""`` at the client's end of file, None when it reset
        the connection or the stream is closed.  A read that finds data at once yields
        to the scheduler after it (a cancel-shielded checkpoint) unless ``checkpoint``
        is False, as for a new connection's first read."""
        sock = self.socket
        try:
            if sock is None:
                received = await self.stream.receive_some(size)
                return received if isinstance(received, bytes) else bytes(received)  # (TLS)
            waited = self.drained
            if waited:
                await trio.lowlevel.wait_readable(sock)
            while True:
                fd = sock.fileno()  # (-1 once closed: never a number reused by another socket)
                if fd < 0:
                    return None
                try:
                    data = os.read(fd, size)
                    break
                except BlockingIOError:
                    waited = True
                    await trio.lowlevel.wait_readable(sock)
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            return None
        self.drained = 0 < len(data) < size
        if checkpoint and not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()
        return data


def read_now(fd: int, size: int) -> bytes | None:
    """What the socket ``fd`` holds, up to ``size`` bytes, without waiting: None when
    nothing is there yet (or the client closed or reset: the caller's reader finds out)."""
    try:
        return os.read(fd, size) or None
    except OSError:
        return None


async def send_in_chunks(stream: trio.abc.SendStream, data: bytes | memoryview) -> None:
    """``stream.send_all(data)``, ``WRITE_CHUNK`` bytes at a time (see ``WRITE_CHUNK``)."""
    view = memoryview(data)
    for start in range(0, view.nbytes, WRITE_CHUNK):
        await stream.send_all(view[start : start + WRITE_CHUNK])


def default_per_client(max_connections: int) -> int:
    """The default ``max_connections_per_client``: a quarter of the table (at least 1)."""
    return max(1, max_connections // 4)


class Counting(Protocol):
    """What counts a connection's bytes received (a body's rate is judged by it)."""

    @property
    def received(self) -> int: ...


class _Ticket:
    """One accepted connection: its address, the scope its handler runs in, and
    since when it is in its present standing (waiting for a request head, or
    reading a body: see :class:`ConnectionGate`)."""

    __slots__ = ("key", "stream", "address", "scope", "held", "since", "counter", "mark", "waiter", "turned")

    def __init__(self, stream: trio.SocketStream, address: str) -> None:
        self.key = id(stream)
        self.stream: trio.SocketStream | None = stream  # (None once it ended: no cycle holds it)
        self.address = address
        self.scope = trio.CancelScope()
        self.held = True  # counts against the limits (until it ends or is evicted)
        self.since = trio.current_time()
        self.counter: Counting | None = None  # (reading a body: its bytes, from ``mark`` on)
        self.mark = 0
        self.waiter: trio.Event | None = None  # (set when its request's turn comes: see _Turns)
        self.turned = 0.0  # when its request's turn began


class _Turns:
    """Which whole requests are being answered (each holds a *turn*), and which wait for one,
    by client address.

    A request is given a turn at once if its address holds fewer than ``_OWN_TURNS``, or if
    none waits and fewer than ``size`` are held (or all are held by its own address: there is
    no one else to be fair to); a further request of a connection holding or waiting for a
    turn (HTTP/2's streams at once) shares it.  Otherwise a request waits in its address's
    queue, and a turn that frees goes to the next address round-robin (first come first served
    within an address).
    So a client of an address holding few turns is answered at once, and one of a busier
    address after at most one request of each other address waiting, not after all of them:
    a flood of requests from a few addresses queues here, one parked task each, instead of in
    the scheduler's run queue where every client's every step would wait behind all of them.
    A turn is held until the request is answered, or for ``_TURN_SPAN`` seconds at most (a
    stream, or a long call, waits more than it works).
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.holding: dict[int, _Ticket] = {}  # by ticket key, the longest holding first
        self.held: dict[str, int] = {}  # turns held, by address
        self.queues: dict[str, collections.deque[_Ticket]] = {}  # by address, next to serve first
        self._keeper = trio.lowlevel.ParkingLot()  # (keep waits here while no request waits)

    def take(self, ticket: _Ticket) -> bool:
        """Give ``ticket``'s request a turn now if it may have one (True), see above.  A
        connection that already holds a turn, or waits for one, shares it (True)."""
        if ticket.waiter is not None or ticket.key in self.holding:
            return True
        held = self.held
        mine = held.get(ticket.address, 0)
        if mine >= _OWN_TURNS and (
            self.queues
            or len(self.holding) >= self.size
            and (len(held) > 1 or not mine)
            and not self._expire(trio.current_time())
        ):
            return False
        self._hold(ticket, trio.current_time())
        return True

    def _hold(self, ticket: _Ticket, now: float) -> None:
        ticket.turned = now
        self.holding[ticket.key] = ticket
        self.held[ticket.address] = self.held.get(ticket.address, 0) + 1

    def _drop(self, ticket: _Ticket) -> None:
        del self.holding[ticket.key]
        left = self.held[ticket.address] - 1
        if left:
            self.held[ticket.address] = left
        else:
            del self.held[ticket.address]

    async def wait(self, ticket: _Ticket) -> None:
        """Wait in ``ticket``'s address's queue until its request is given a turn."""
        event = ticket.waiter = trio.Event()
        queue = self.queues.get(ticket.address)
        if queue is None:
            if not self.queues:
                self._keeper.unpark_all()  # (a turn held too long is taken back from now on)
            queue = self.queues[ticket.address] = collections.deque()
        queue.append(ticket)
        try:
            await event.wait()
        finally:
            if ticket.waiter is event:  # (cancelled before its turn came)
                self.forget(ticket)

    def forget(self, ticket: _Ticket) -> None:
        """``ticket``'s request is answered, or its connection ended: its turn (or its place
        in a queue) goes."""
        if ticket.waiter is not None:
            queue = self.queues[ticket.address]
            queue.remove(ticket)
            if not queue:
                del self.queues[ticket.address]
            ticket.waiter = None
        elif ticket.key in self.holding:
            self._drop(ticket)
            if self.queues:
                self.give(trio.current_time())

    def _expire(self, now: float) -> bool:
        """Take back the turns held for ``_TURN_SPAN`` (whether any was)."""
        holding = self.holding
        taken = False
        while holding:
            ticket = next(iter(holding.values()))
            if ticket.turned + _TURN_SPAN > now:
                break
            self._drop(ticket)
            taken = True
        return taken

    def give(self, now: float) -> None:
        """Give the free turns (and those held too long) to the waiting requests, one address
        after another."""
        self._expire(now)
        queues = self.queues
        while queues and len(self.holding) < self.size:
            address = next(iter(queues))
            queue = queues.pop(address)
            ticket = queue.popleft()
            if queue:
                queues[address] = queue  # (to the end: the other addresses first)
            self._hold(ticket, now)
            waiter, ticket.waiter = ticket.waiter, None
            if waiter is not None:
                waiter.set()

    async def keep(self) -> None:
        """Take back turns held too long while requests wait (runs as long as the gate)."""
        while True:
            if self.queues and self.holding:
                with trio.move_on_at(next(iter(self.holding.values())).turned + _TURN_SPAN):
                    await self._keeper.park()
                self.give(trio.current_time())
            elif self.queues:
                self.give(trio.current_time())
            else:
                await self._keeper.park()


#: An accepted connection to start: its ticket, stream, handler and the nursery to run it in.
_Start = tuple[_Ticket, trio.SocketStream, Callable[[trio.SocketStream], Awaitable[None]], trio.Nursery]


class ConnectionGate:
    """Accepts connections while fewer than ``max_connections`` are open, at
    most ``max_per_client`` from one address (by its IP address).

    Each connection stands in one of three ways, which its door tells the gate:

    * *waiting* for a request head: new (accepted, no head whole yet), or kept
      alive between requests (:meth:`idle`);
    * *reading* a request's body (:meth:`reading`);
    * *busy*: a whole request is being answered (:meth:`busy`), which may take
      long (a stream of events).

    When the table is full, a new connection evicts (closes at once) a waiting
    connection that has waited at least ``_EVICT_AFTER`` seconds, else one that
    has been reading a body for at least ``_BODY_GRACE`` seconds at under
    ``_MIN_BODY_RATE`` bytes a second; of the ``_SAMPLE`` such connections that
    waited or read longest, the one whose address holds the most connections
    goes (the oldest of them on a tie).  So connections that send nothing,
    trickle a head or a body, or idle in keep-alive, from any number of
    addresses, cannot keep clients that send requests waiting; only when every
    open connection is busy (or reading at a fair rate) does the next client
    wait in the listen backlog.  A kept-alive connection evicted between
    requests is closed as a server closes one idle too long: HTTP clients open
    a new one.

    Fairness between addresses under churn (connections that each bring a whole
    request, by the thousand, from a few addresses):

    * The last ``reserve`` slots of the table (a sixteenth) are kept for addresses
      holding few connections: once the rest is taken, a new connection whose
      address holds at least half the average of the addresses present (and is not
      the only one present) is closed at once, unread, as one past its address's
      share is.  So the gate keeps taking connections from the backlog, where a
      newcomer would otherwise wait behind every connection of the crowd.
    * Connections are accepted up to ``_BURST`` a round (a closed one counts a
      quarter), but their handlers start ``_STARTS`` a round; the others wait in a
      queue per address (a descriptor each, no task) and start round-robin, so a
      newcomer starts after at most one connection of each address ahead of it.
      Evictions count against the same ``_STARTS`` a round (each evicted
      connection's task runs to end): past them, the reserve's rule applies.
    * A door that calls :meth:`take_turn` / :meth:`turn` (both doors do) answers at
      most ``_TURNS`` whole requests at once (see :class:`_Turns`): the others wait
      by address, round-robin, instead of each adding its steps to every client's.

    Nothing accepted is dropped: a whole request waits for its start and its turn,
    and is answered (its client may have asked for work before it left).
    """

    def __init__(self, max_connections: int, max_per_client: int | None = None) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        per_client = default_per_client(max_connections) if max_per_client is None else max_per_client
        if per_client < 1:
            raise ValueError("max_connections_per_client must be at least 1")
        self.max_connections = max_connections
        self.max_per_client = per_client
        #: The last slots of the table, for addresses holding few connections.
        self.reserve = min(max_connections - 1, max_connections // _RESERVE_PART)
        self.open = 0  # connections counted now
        self.evicted = 0  # connections evicted to make room, in all
        self.refused = 0  # connections closed at once: their address held its share
        self._turns = _Turns(_TURNS)
        self._round = 0  # handlers started, and connections evicted, since the accept loop's last checkpoint
        #: Accepted connections whose handler is yet to start, by address (next to start first).
        self._pending: dict[str, collections.deque[_Start]] = {}
        self._pending_lot = trio.lowlevel.ParkingLot()  # (the starter waits here for some)
        self._clients: dict[str, int] = {}
        self._tickets: dict[int, _Ticket] = {}  # every open connection's, by id of its stream
        self._waiting: dict[int, _Ticket] = {}  # by id of the stream, longest waiting first
        self._reading: dict[int, _Ticket] = {}  # the same, longest reading first
        self._space = trio.lowlevel.ParkingLot()

    async def serve(
        self,
        listeners: Sequence[trio.SocketListener],
        handler: Callable[[trio.SocketStream], Awaitable[None]],
        handler_nursery: trio.Nursery | None = None,
    ) -> None:
        """Accept on every listener until cancelled; each connection runs
        ``handler(stream)`` in ``handler_nursery`` (default: this call's own),
        which must close the stream."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._turns.keep)
            nursery.start_soon(self._start_pending)
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, handler, handler_nursery or nursery)

    def take_turn(self, stream: trio.SocketStream) -> bool:
        """A whole request on ``stream`` is to be answered: True if it may be now, else it
        must wait for its turn (:meth:`turn`).  Its turn ends once the connection is idle
        (:meth:`idle`) or ends.  A request on a connection that already holds a turn, or
        waits for one (HTTP/2's streams at once), goes with it: True."""
        ticket = self._tickets.get(id(stream))
        return ticket is None or self._turns.take(ticket)

    async def turn(self, stream: trio.SocketStream) -> None:
        """Wait until the whole request on ``stream`` may be answered (see :class:`_Turns`)."""
        ticket = self._tickets.get(id(stream))
        if ticket is not None:
            await self._turns.wait(ticket)

    def busy(self, stream: trio.SocketStream) -> None:
        """A whole request is being answered on ``stream``: it is not evicted."""
        key = id(stream)
        if self._waiting.pop(key, None) is None:
            self._reading.pop(key, None)

    def reading(self, stream: trio.SocketStream, counter: Counting) -> None:
        """A request head came whole on ``stream`` and its body is on its way
        (``counter`` counts the bytes received): evicted if it comes too slowly."""
        key = id(stream)
        ticket = self._tickets.get(key)
        if ticket is None or not ticket.held:
            return
        self._waiting.pop(key, None)
        self._reading.pop(key, None)
        ticket.since = trio.current_time()
        ticket.counter = counter
        ticket.mark = counter.received
        self._reading[key] = ticket
        self._space.unpark_all()  # (it may be evictable after a grace: see _room)

    def idle(self, stream: trio.SocketStream) -> None:
        """``stream`` waits for its next request (kept alive): evictable once it waited a while."""
        key = id(stream)
        ticket = self._tickets.get(key)
        if ticket is None or not ticket.held:
            return
        self._turns.forget(ticket)  # (answered)
        self._reading.pop(key, None)
        self._waiting.pop(key, None)  # (to the end: the latest to wait)
        ticket.since = trio.current_time()
        self._waiting[key] = ticket
        self._space.unpark_all()

    def _victim(self, now: float) -> tuple[_Ticket | None, float]:
        """The connection to evict to make room (None if none may be), and
        otherwise how long until one may be."""
        chosen: _Ticket | None = None
        clients = self._clients
        seen = 0
        wait = math.inf
        for ticket in self._waiting.values():
            if ticket.since + _EVICT_AFTER > now:
                wait = ticket.since + _EVICT_AFTER - now
                break
            if chosen is None or clients[ticket.address] > clients[chosen.address]:
                chosen = ticket
            seen += 1
            if seen >= _SAMPLE:
                break
        if chosen is not None:
            return chosen, 0.0
        if self._reading:
            wait = min(wait, _BODY_GRACE / 4)  # (a body's rate is judged again then)
            seen = 0
            for ticket in self._reading.values():
                elapsed = now - ticket.since
                if elapsed < _BODY_GRACE:
                    break
                counter = ticket.counter
                rate = (counter.received - ticket.mark) / elapsed if counter is not None else 0.0
                if rate < _MIN_BODY_RATE and (
                    chosen is None or clients[ticket.address] > clients[chosen.address]
                ):
                    chosen = ticket
                seen += 1
                if seen >= _WALK:
                    break
        return chosen, wait

    async def _room(self) -> tuple[_Ticket | None, bool]:
        """Wait until a connection fits: a free slot (None, False), a connection that may
        be evicted (its ticket, evicted once a new connection is taken), or a slot of the
        reserve (None, True: for an address holding few connections only)."""
        while True:
            if self.open < self.max_connections - self.reserve:
                return None, False
            spent = self._round >= _STARTS  # (evictions and starts this round: see _accept_loop)
            victim, wait = (None, 0.0) if spent else self._victim(trio.current_time())
            if victim is not None:
                return victim, False
            if self.open < self.max_connections:
                return None, True
            if spent:
                self._round = 0
                await trio.lowlevel.checkpoint()  # (the evicted end first)
                continue
            with trio.move_on_after(wait):
                await self._space.park()

    def _crowding(self, count: int) -> bool:
        """Whether an address holding ``count`` connections holds more than its share of a
        table whose reserve is reached: other addresses hold connections, and it holds at
        least half the average of the addresses present."""
        addresses = len(self._clients)
        return addresses > (1 if count else 0) and 2 * count * addresses >= self.open

    async def _accept_loop(
        self,
        listener: trio.SocketListener,
        handler: Callable[[trio.SocketStream], Awaitable[None]],
        nursery: trio.Nursery,
    ) -> None:
        # accept() on a duplicate of the listening socket, in a burst of up to _BURST
        # between checkpoints: trio's accept yields after each connection, so on a busy
        # loop a backlog of hundreds (a connection flood) would take hundreds of rounds,
        # a legitimate client waiting behind all of them.
        raw = socket.socket(fileno=os.dup(listener.socket.fileno()))
        try:
            raw.setblocking(False)
            burst = 0.0
            while True:
                if burst >= _BURST:
                    burst, self._round = 0.0, 0
                    await trio.lowlevel.checkpoint()
                # Room first (a free slot, a connection to evict, or a slot of the reserve):
                # else the client waits in the backlog, not accepted.  (No checkpoint between
                # here and the accept: the room seen is still there.)
                victim, reserved = await self._room()
                try:
                    sock, peer = raw.accept()
                except BlockingIOError:
                    burst, self._round = 0.0, 0
                    await trio.lowlevel.wait_readable(listener.socket)
                    continue
                except OSError as exc:
                    if exc.errno in _ACCEPT_IGNORED_ERRNOS:
                        continue
                    if exc.errno not in _ACCEPT_CAPACITY_ERRNOS:
                        raise
                    log.error("accept() failed (%s); accepting again in %s s", exc, _ACCEPT_PAUSE)
                    await trio.sleep(_ACCEPT_PAUSE)
                    continue
                address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
                count = self._clients.get(address, 0)
                # (a connection of its own that makes room leaves its share)
                mine = victim is not None and victim.address == address
                if not address or count - mine >= self.max_per_client or (reserved and self._crowding(count)):
                    sock.close()  # over this address's share: closed at once
                    burst += _REFUSED
                    if address:
                        self.refused += 1
                        log.debug("connection from %s refused: %d open from it", address, count)
                    continue
                burst += 1
                if victim is not None:
                    self._round += 1
                    self._evict(victim)
                    count = self._clients.get(address, 0)  # (the victim may have been its own)
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(sock))
                ticket = _Ticket(stream, address)
                self._clients[address] = count + 1
                self.open += 1
                start = (ticket, stream, handler, nursery)
                if self._pending or self._round >= _STARTS:
                    self._defer(start)
                else:
                    self._round += 1
                    self._start(start)
        finally:
            raw.close()

    def _start(self, start: _Start) -> None:
        """Start an accepted connection's handler."""
        ticket, stream, handler, nursery = start
        ticket.since = trio.current_time()
        self._tickets[ticket.key] = self._waiting[ticket.key] = ticket
        nursery.start_soon(self._run, handler, stream, ticket)
        if self.open >= self.max_connections - self.reserve:
            self._space.unpark_all()  # (evictable from now on: see _room)

    def _defer(self, start: _Start) -> None:
        """Queue an accepted connection until the starter starts it (see _start_pending)."""
        address = start[0].address
        queue = self._pending.get(address)
        if queue is None:
            if not self._pending:
                self._pending_lot.unpark_all()
            queue = self._pending[address] = collections.deque()
        queue.append(start)

    async def _start_pending(self) -> None:
        """Start the handlers of the connections accepted past ``_STARTS`` a round, up to
        ``_STARTS`` a round, one address after another: a flood of connections from a few
        addresses waits here (its file descriptors held, no task yet), and a newcomer of
        another address starts after at most one connection of each of them."""
        pending = self._pending
        try:
            while True:
                if not pending:
                    await self._pending_lot.park()
                    continue
                for _ in range(_STARTS):
                    if not pending:
                        break
                    address = next(iter(pending))
                    queue = pending.pop(address)
                    start = queue.popleft()
                    if queue:
                        pending[address] = queue  # (to the end: the other addresses first)
                    self._start(start)
                await trio.lowlevel.checkpoint()
        finally:
            for queue in pending.values():  # (the server stops: never started, closed)
                for ticket, stream, _, _ in queue:
                    stream.socket.close()
                    self._release(ticket, cancel=False)
            pending.clear()

    def _evict(self, ticket: _Ticket) -> None:
        """Close ``ticket``'s connection to make room (at once: no longer a candidate)."""
        reading = self._reading.pop(ticket.key, None) is not None
        self._waiting.pop(ticket.key, None)
        self.evicted += 1
        log.debug(
            "full: a connection from %s %s evicted",
            ticket.address,
            "reading a body too slowly" if reading else "waiting for a request",
        )
        # Its door sees the end of the connection and ends it as when the client leaves
        # (a cancellation through a web server's frames costs more: hypercorn's leave
        # reference cycles); cancelled after a grace if it does not.
        if ticket.stream is not None:
            with contextlib.suppress(OSError):
                ticket.stream.socket.shutdown(socket.SHUT_RDWR)
        ticket.scope.deadline = trio.current_time() + _EVICT_GRACE
        self._release(ticket, cancel=False)

    def _release(self, ticket: _Ticket, cancel: bool = True) -> None:
        """``ticket``'s connection no longer counts (it ended, or is evicted)."""
        if cancel:
            ticket.scope.cancel()
        if not ticket.held:
            return
        ticket.held = False
        left = self._clients[ticket.address] - 1
        if left:
            self._clients[ticket.address] = left
        else:
            del self._clients[ticket.address]
        self.open -= 1
        self._space.unpark_all()

    async def _run(
        self,
        handler: Callable[[trio.SocketStream], Awaitable[None]],
        stream: trio.SocketStream,
        ticket: _Ticket,
    ) -> None:
        key = id(stream)
        try:
            with ticket.scope:
                await handler(stream)
        finally:
            stream.socket.close()  # whatever the handler did (a no-op if it closed it)
            del self._tickets[key]
            self._waiting.pop(key, None)
            self._reading.pop(key, None)
            self._turns.forget(ticket)
            ticket.stream = ticket.counter = None
            self._release(ticket)


class TimedStream(trio.abc.HalfCloseableStream):
    """``stream`` with a deadline on each ``send_all``: past ``write_timeout``
    the connection is closed and :class:`trio.BrokenResourceError` raised.
    ``closed`` tells whether the connection was closed here, ``eof`` whether
    the client closed its side; ``changed`` is unparked when either becomes
    true (and may be by the stream's user)."""

    def __init__(self, stream: trio.SocketStream, write_timeout: float) -> None:
        self.transport_stream = stream
        self.socket = stream.socket
        self.write_timeout = write_timeout
        self.closed = False
        self.eof = False
        self.changed = trio.lowlevel.ParkingLot()
        self._early = b""  # bytes read ahead by read_head, given out first
        self.received = 0  # bytes received (after read_head's)

    def _close(self) -> None:
        self.closed = True
        self.changed.unpark_all()

    def write_some(self, view: memoryview) -> int:
        """Write what the socket takes of ``view`` at once: how many bytes (0 when closed here)."""
        return write_now(-1 if self.closed else self.socket.fileno(), (view,)) if view.nbytes else 0

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        # What the socket takes at once is written without a timer or a trip through the
        # scheduler (most answers fit in its buffer); the rest waits, within the write
        # timeout.  (The caller serializes its sends: hypercorn holds its send lock.)
        view = memoryview(data)
        sent = self.write_some(view)  # (0 when closed here, so that send_all fails as trio's does)
        if sent == view.nbytes:
            return
        # A scope of our own: its deadline applies even under a caller's shield.
        with trio.move_on_after(self.write_timeout) as scope:
            await send_in_chunks(self.transport_stream, view[sent:])
        if scope.cancelled_caught:
            self.socket.close()
            self._close()
            raise trio.BrokenResourceError(f"the client read nothing for {self.write_timeout} s")

    async def wait_send_all_might_not_block(self) -> None:
        await self.transport_stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        # Quick, and shielded: hypercorn closes the socket after it, and a
        # cancellation here (its app's, on the same task) would leave it open.
        with trio.CancelScope(shield=True):
            await self.transport_stream.send_eof()

    async def read_head(self, timeout: float, limit: int) -> bool:
        """Read ahead until a request head ends (an empty line) or ``limit`` bytes came,
        within ``timeout``: True if so (what was read is the start of what
        ``receive_some`` returns), False if the client closed its side (or reset the
        connection) or was too slow.

        So that connections that send nothing, or a head a byte at a time, cost one
        parked task each and no web server's state until the head is whole.  A head
        that came with the connection (the usual case) is read at once: no timer, no
        trip through the scheduler."""
        head = bytearray(read_now(self.socket.fileno(), limit) or b"")
        if b"\r\n\r\n" in head:  # (whole already)
            self._early = bytes(head)
            return True
        with trio.move_on_after(timeout):
            while b"\r\n\r\n" not in head and len(head) < limit:
                try:
                    data = await self.transport_stream.receive_some(limit)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return False  # (a reset, or evicted)
                if not data:
                    break
                head += data
            else:
                self._early = bytes(head)
                return True
        return False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._early:
            cut = len(self._early) if max_bytes is None else max_bytes
            data, self._early = self._early[:cut], self._early[cut:]
            return data
        data = await self.transport_stream.receive_some(max_bytes)
        self.received += len(data)
        if not data:
            self.eof = True
            self.changed.unpark_all()
        return data

    async def aclose(self) -> None:
        self._close()
        await self.transport_stream.aclose()


def server_ssl_context(certfile: str, keyfile: str | None = None) -> ssl.SSLContext:
    """A server-side TLS context for the lean door (``serve_h11``'s ``ssl_context``):
    the certificate chain in ``certfile`` and its private key (``keyfile``, default:
    in ``certfile``), both PEM; ALPN offers ``http/1.1``.

    Raises:
        OSError, ssl.SSLError: a file cannot be read, or holds no matching key.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certfile, keyfile)
    context.set_alpn_protocols(["http/1.1"])
    return context
