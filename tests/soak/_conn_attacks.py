"""Attacks of the soak test on connections and framing: idle GET streams, slowloris heads, an
abandoned connection flood, connections from many addresses that each sent a request and then
idle in keep-alive or trickle a body, clients that never read a 4 MiB answer, ambiguous framing
and bodies over the size limit.  Each runs until cancelled, bounded in count and rate (the test machine has
2 cores), and counts what it did and what the server answered; every socket step is under a
timeout or ends at cancellation, and every socket is closed at the end."""

from __future__ import annotations

import re
from collections.abc import Callable

import trio

from mcp_trio.transports.http._request import _LINGER_SECONDS

from ._tally import ESTABLISHED, Attack, Stats, server_state
from ._wire import (
    LATEST,
    SERVER,
    Client,
    Failed,
    Pacer,
    call,
    close,
    connect,
    encode,
    headers,
    initialize,
    new_session,
    open_session,
)

ERRORS = (Failed, OSError, trio.BrokenResourceError, trio.ClosedResourceError)

STREAMS = 600  # idle GET streams wanted at once (each its own session and connection)
STREAM_RATE = 150.0  # new streams per second at most
STREAM_ATTEMPTS = 1500  # streams tried (each a new session), in all

SLOWLORIS = 300  # connections trickling a head, one byte per TRICKLE seconds
SLOWLORIS_RATE = 100.0
TRICKLE = 1.0
FLOOD = 400  # connections opened and never written to
FLOOD_RATE = 200.0
REOPENS = 1600  # connections tried by each of these two attacks, in all

#: Proven connections from many addresses, each within its per-client share: idle in keep-alive
#: after one whole request (renewed every RENEW seconds), or trickling a body after a whole head.
KEPT = 120
KEPT_RATE = 150.0
SLOW_BODIES = 60
SLOW_BODY_RATE = 100.0
SPREAD = 8  # addresses each of the two attacks uses
RENEW = 8.0  # (past the shortened --keepalive-timeout: the timeout bounds them when no eviction does)
BODY = 100_000  # the body's announced length

READERS = 8  # clients that ask for a 4 MiB answer and never read it
READER_OPENS = 32
BIG_KB = 4096

CL_TE_RATE, CL_TE_MAX = 4.0, 60
OVERSIZE_RATE, OVERSIZE_MAX = 2.0, 30
OVERSIZE = 4 * 1024 * 1024 + 64 * 1024  # over the default max_body_size of 4 MiB


async def _idle_stream(port: int, s: Stats, setups: trio.CapacityLimiter) -> None:
    while s.counts["attempts"] < STREAM_ATTEMPTS:
        client: Client | None = None
        try:
            async with setups:
                s.add("attempts")
                client = await Client.open(s.source, port)
                session = await open_session(client)
                s.add("sessions opened")
                reply = await client.start(
                    "GET",
                    {
                        "accept": "text/event-stream",
                        "mcp-session-id": session,
                        "mcp-protocol-version": LATEST,
                    },
                )
            if reply.status != 200:
                s.add(f"GET refused {reply.status}")
                await trio.sleep(2.0)
                continue
            s.add("streams opened")
            s.hold()
            opened = trio.current_time()
            try:
                await client.drain()  # holds the stream until the server ends it, or cancellation
            finally:
                s.release()
            s.ended(trio.current_time() - opened)
        except ERRORS as exc:
            s.add(f"refused: {_why(exc)}")
            await trio.sleep(2.0)
        finally:
            if client is not None:
                client.close()
        await trio.sleep(0.5)


async def idle_streams(port: int, s: Stats) -> None:
    setups = trio.CapacityLimiter(16)
    pacer = Pacer(STREAM_RATE)
    async with trio.open_nursery() as nursery:
        for _ in range(STREAMS):
            await pacer.wait()
            nursery.start_soon(_idle_stream, port, s, setups)


def _why(exc: BaseException) -> str:
    return str(exc)[:50] if isinstance(exc, Failed) else type(exc).__name__


def _status(data: bytes) -> str | None:
    found = re.search(rb"^HTTP/1\.[01] ([2-5]\d\d)", data, re.M)
    return found.group(1).decode() if found else None


async def _hold(stream: trio.SocketStream, trickle: bytes | None) -> str:
    """Hold ``stream`` (sending ``trickle`` a byte at a time, or nothing) until the server ends it:
    how it did (its answer's status, a bare close or a reset)."""
    try:
        for byte in trickle or iter(int, 1):  # silent: wait for the server, forever
            if trickle:
                await stream.send_all(bytes([byte]))
            with trio.move_on_after(TRICKLE if trickle else float("inf")):
                return _status(await stream.receive_some(4096)) or "closed"
    except ERRORS:
        return "reset"
    return "the whole trickle was sent"


async def _held_connection(
    port: int, s: Stats, trickle: bytes | None, source: str = "", first: bytes = b""
) -> None:
    """Open, send ``first``, hold (trickling ``trickle`` a byte at a time, or silent), see the
    server end it."""
    while s.counts["attempts"] < REOPENS:
        stream = None
        try:
            s.add("attempts")
            stream = await connect(source or s.source, port, timeout=3.0)
            if first:
                await stream.send_all(first)
            s.add("opened")
            s.hold()
            opened = trio.current_time()
            try:
                how = await _hold(stream, trickle)
            finally:
                s.release()
            s.ended(trio.current_time() - opened, f"ended by the server ({how})")
        except ERRORS as exc:
            s.add(f"failed: {_why(exc)}")
            await trio.sleep(0.5)
        finally:
            close(stream)
        await trio.sleep(0.2)


async def slowloris(port: int, s: Stats) -> None:
    head = f"POST /mcp HTTP/1.1\r\nHost: {SERVER}:{port}\r\nX-Slow: ".encode()
    pacer = Pacer(SLOWLORIS_RATE)
    async with trio.open_nursery() as nursery:
        for _ in range(SLOWLORIS):
            await pacer.wait()
            nursery.start_soon(_held_connection, port, s, head + b"a" * 10_000)


async def conn_flood(port: int, s: Stats) -> None:
    pacer = Pacer(FLOOD_RATE)
    async with trio.open_nursery() as nursery:
        for _ in range(FLOOD):
            await pacer.wait()
            nursery.start_soon(_held_connection, port, s, None)


def spread(s: Stats) -> list[str]:
    """``SPREAD`` addresses for an attack whose own is 127.0.0.N: 127.N.0.1, 127.N.0.2 ..."""
    number = s.source.rsplit(".", 1)[1]
    return [f"127.{number}.0.{k}" for k in range(1, SPREAD + 1)]


async def _kept_connection(port: int, s: Stats, source: str) -> None:
    """One whole request, then idle in keep-alive (renewed now and then) until the server ends it."""
    while s.counts["attempts"] < REOPENS:
        client: Client | None = None
        try:
            s.add("attempts")
            client = await Client.open(source, port, timeout=3.0)
            reply = await client.request("POST", headers(), encode(call(1, "echo", text="x")), timeout=5.0)
            s.add(f"answered {reply.status}")
            s.hold()
            opened = trio.current_time()
            try:
                while True:
                    with trio.move_on_after(RENEW):
                        data = await client.stream.receive_some(4096)
                        how = "closed" if not data else "sent unasked"
                        break
                    reply = await client.request("POST", headers(), encode(call(1, "echo", text="x")), 5.0)
                    s.add("renewed")
            finally:
                s.release()
            s.ended(trio.current_time() - opened, f"ended by the server ({how})")
        except ERRORS as exc:
            s.add(f"failed: {_why(exc)}")
            await trio.sleep(0.5)
        finally:
            if client is not None:
                client.close()
        await trio.sleep(2.0)  # (then a new connection: the churn of many clients, not a flood)


async def kept_alive(port: int, s: Stats) -> None:
    pacer = Pacer(KEPT_RATE)
    sources = spread(s)
    async with trio.open_nursery() as nursery:
        for n in range(KEPT):
            await pacer.wait()
            nursery.start_soon(_kept_connection, port, s, sources[n % SPREAD])


async def slow_bodies(port: int, s: Stats) -> None:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: {SERVER}:{port}\r\ncontent-type: application/json\r\n"
        f"accept: application/json, text/event-stream\r\ncontent-length: {BODY}\r\n\r\n"
    ).encode()
    pacer = Pacer(SLOW_BODY_RATE)
    sources = spread(s)
    async with trio.open_nursery() as nursery:
        for n in range(SLOW_BODIES):
            await pacer.wait()
            nursery.start_soon(_held_connection, port, s, b" " * BODY, sources[n % SPREAD], head)


async def _slow_reader(
    port: int, s: Stats, session: str, ident: int, held: dict[int, tuple[float, trio.Event]]
) -> None:
    while s.counts["requests sent"] < READER_OPENS:
        stream = None
        try:
            stream = await connect(s.source, port, timeout=3.0, rcvbuf=4096)
            client = Client(stream, port)
            with trio.fail_after(3.0):
                await client.send("POST", headers(session, LATEST), encode(call(ident, "blob", kb=BIG_KB)))
            s.add("requests sent")
            local_port = stream.socket.getsockname()[1]
            let_go = held[local_port] = (trio.current_time(), trio.Event())
            s.hold()
            try:
                await let_go[1].wait()  # set by the watcher when the server lets go
            finally:
                s.release()
                held.pop(local_port, None)
        except ERRORS as exc:
            s.add(f"failed: {_why(exc)}")
            await trio.sleep(0.5)
        finally:
            close(stream)
        ident += 1000
        await trio.sleep(0.5)


async def _watch_server_side(port: int, s: Stats, held: dict[int, tuple[float, trio.Event]]) -> None:
    """The server letting go of a reader shows only on its side: its socket leaves ESTABLISHED."""
    while True:
        await trio.sleep(0.5)
        for local_port, (opened, let_go) in list(held.items()):
            if server_state(port, s.source, local_port) != ESTABLISHED and trio.current_time() - opened > 0.5:
                del held[local_port]
                s.ended(trio.current_time() - opened, "let go by the server")
                let_go.set()


async def slow_readers(port: int, s: Stats) -> None:
    session = await new_session(s.source, port)
    held: dict[int, tuple[float, trio.Event]] = {}
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_watch_server_side, port, s, held)
        for n in range(READERS):
            nursery.start_soon(_slow_reader, port, s, session, n + 1, held)
            await trio.sleep(0.2)


async def _read_until_closed(stream: trio.SocketStream, seconds: float) -> tuple[bytes, bool]:
    received = b""
    with trio.move_on_after(seconds):
        while data := await stream.receive_some(65536):
            received += data
        return received, True
    return received, False


def _post_head(port: int, framing: str) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: {SERVER}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: application/json, text/event-stream\r\n{framing}\r\n\r\n"
    ).encode()


async def cl_te(port: int, s: Stats) -> None:
    body = initialize(LATEST, "smuggler")
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    smuggled = _post_head(port, f"Content-Length: {len(body)}") + body
    ambiguous = f"Content-Length: {len(chunked)}\r\nTransfer-Encoding: chunked"
    head = _post_head(port, ambiguous)
    pacer = Pacer(CL_TE_RATE)
    while s.counts["sent"] < CL_TE_MAX:
        await pacer.wait()
        stream = None
        try:
            stream = await connect(s.source, port, timeout=3.0)
            await stream.send_all(head + chunked + smuggled)
            s.add("sent")
            received, closed = await _read_until_closed(stream, 3.0)
            statuses = re.findall(rb"^HTTP/1\.[01] ([2-5]\d\d)", received, re.M)
            answer = b"+".join(statuses).decode() or "nothing"
            s.add(f"answered {answer}, {'closed' if closed else 'left open 3 s'}")
        except ERRORS as exc:
            s.add(f"failed: {_why(exc)}")
        finally:
            close(stream)


async def oversize(port: int, s: Stats) -> None:
    head = _post_head(port, f"Content-Length: {OVERSIZE}")
    piece = b" " * 65536
    pacer = Pacer(OVERSIZE_RATE)
    while s.counts["sent"] < OVERSIZE_MAX:
        await pacer.wait()
        stream = None
        step = "sending"
        started = 0.0
        try:
            stream = await connect(s.source, port, timeout=3.0)
            s.add("sent")
            started = trio.current_time()
            with trio.fail_after(5.0):
                await stream.send_all(head)
                for _ in range(OVERSIZE // len(piece)):
                    await stream.send_all(piece)
            step = "reading"
            received, closed = await _read_until_closed(stream, 3.0)
            answer = _status(received) or "nothing"
            s.add(f"answered {answer}" if answer != "nothing" or closed else "no answer in 3 s")
        except trio.TooSlowError:
            s.add(f"stalled while {step}")
        except ERRORS as exc:
            if step == "sending" and trio.current_time() - started > _LINGER_SECONDS:
                # the lingering close is bounded: a sender slower than its window is cut off
                s.add("cut off after the lingering window (a slow sender)")
            else:
                s.add(f"{type(exc).__name__} while {step}")
        finally:
            close(stream)


def _streams_unbounded(s: Stats) -> str | None:
    refused = [k for k in s.counts if k.startswith(("GET refused", "refused: initialize answered"))]
    if refused or s.ended_after:
        return None
    return (
        f"{s.held_max} idle GET streams held at once, none refused nor ended by the server "
        "(--max-streams / --max-sessions-per-client / --stream-idle-timeout)"
    )


def _held_unbounded(what: str, knobs: str) -> Callable[[Stats], str | None]:
    def unbounded(s: Stats) -> str | None:
        if s.ended_after:
            return None
        return f"{s.held_max} {what} held at once, none ended by the server ({knobs})"

    return unbounded


def _cl_te_unbounded(s: Stats) -> str | None:
    # "answered nothing, left open": not served at all (a saturated server), not a framing matter
    wrong = [
        key
        for key in s.counts
        if key.startswith("answered 2") or "+" in key or key.startswith("answered 4") and "open" in key
    ]
    if not wrong:
        return None
    found = ", ".join(sorted(wrong))
    return f"ambiguous framing: {found} (400 and close: RFC 9112 section 6.1)"


def _oversize_unbounded(s: Stats) -> str | None:
    # stalls and "no answer in 3 s": not served at all (a saturated server), not the 413 path
    wrong = [key for key in s.counts if key.startswith("answered") and key != "answered 413"]
    wrong += [key for key in s.counts if "Error while" in key]  # a reset: no lingering close
    if not wrong:
        return None
    found = ", ".join(sorted(wrong))
    return f"bodies over the limit: {found} (413, read by the client: lingering close)"


ATTACKS = [
    Attack(
        "idle_streams",
        f"up to {STREAMS} idle GET streams at once, each its own session ({STREAM_RATE:.0f}/s)",
        idle_streams,
        lambda s: s.counts["attempts"] >= 50,
        _streams_unbounded,
    ),
    Attack(
        "slowloris",
        f"{SLOWLORIS} connections trickling a head, a byte every {TRICKLE:.0f} s",
        slowloris,
        lambda s: s.counts["attempts"] >= 50,
        _held_unbounded("trickled heads", "--header-timeout"),
    ),
    Attack(
        "conn_flood",
        f"{FLOOD} connections opened and never written to",
        conn_flood,
        lambda s: s.counts["attempts"] >= 50,
        _held_unbounded("silent connections", "--header-timeout / --max-connections-per-client"),
    ),
    Attack(
        "kept_alive",
        f"{KEPT} connections from {SPREAD} addresses, each idle in keep-alive after a whole request",
        kept_alive,
        lambda s: s.counts["attempts"] >= 50,
        _held_unbounded("idle kept-alive connections", "--max-connections: evicted under pressure"),
    ),
    Attack(
        "slow_bodies",
        f"{SLOW_BODIES} connections from {SPREAD} addresses, each trickling a body after a whole head",
        slow_bodies,
        lambda s: s.counts["attempts"] >= 50,
        _held_unbounded("trickled bodies", "--request-timeout / --max-connections: evicted under pressure"),
    ),
    Attack(
        "slow_readers",
        f"{READERS} clients asking for a {BIG_KB // 1024} MiB answer and never reading it",
        slow_readers,
        lambda s: s.counts["requests sent"] >= 4,
        _held_unbounded("clients that never read", "--write-timeout"),
    ),
    Attack(
        "cl_te",
        "requests with both Content-Length and Transfer-Encoding, then a second request "
        f"({CL_TE_RATE:.0f}/s)",
        cl_te,
        lambda s: s.counts["sent"] >= 5,
        _cl_te_unbounded,
    ),
    Attack(
        "oversize",
        f"bodies of {OVERSIZE // 1024} KiB, over the size limit ({OVERSIZE_RATE:.0f}/s)",
        oversize,
        lambda s: s.counts["sent"] >= 3,
        _oversize_unbounded,
    ),
]
