"""A round-robin proxy for tests, in front of several HTTP servers (or workers).

``per="connection"``: each accepted connection goes to the next backend in turn, bytes relayed
both ways until both sides are done.  Clients keep their connections alive (httpx, the official
SDKs' fetch, our client), so all the requests of one client then reach one backend.

``per="request"`` (the default): HTTP/1.1 parsed with h11, each request goes to the next backend
in turn, on a new connection to it (``Connection: close``), and its response (an SSE stream too)
is relayed back as it comes, on the client's kept-alive connection.  This is what spreads the
requests of one session over the workers.

Bounded: ``max_connections`` client connections at once (further ones are closed), request
bodies of ``max_body`` bytes (413 beyond), each backend connect within ``connect_timeout``
(502 otherwise).

    async with trio.open_nursery() as nursery:
        host, port = await nursery.start(serve_round_robin, [("127.0.0.1", 8001), ("127.0.0.1", 8002)])

or, from a test without trio, ``with running_proxy(backends) as (host, port): ...``.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import h11
import trio

__all__ = ["running_proxy", "serve_round_robin"]

_HOP_BY_HOP = {b"connection", b"keep-alive", b"proxy-connection", b"upgrade"}
_CHUNK = 65536


async def serve_round_robin(
    backends: Sequence[tuple[str, int]],
    *,
    per: str = "request",
    host: str = "127.0.0.1",
    port: int = 0,
    max_connections: int = 256,
    max_body: int = 8 * 1024 * 1024,
    connect_timeout: float = 5.0,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the proxy until cancelled; ``task_status.started`` gets its ``(host, port)``."""
    if per not in ("request", "connection") or not backends:
        raise ValueError("per must be 'request' or 'connection', with at least one backend")
    turn = itertools.cycle(backends)
    slots = trio.CapacityLimiter(max_connections)

    async def connect() -> trio.SocketStream:
        address = next(turn)
        with trio.fail_after(connect_timeout):
            return await trio.open_tcp_stream(*address)

    async def client(stream: trio.SocketStream) -> None:
        if slots.borrowed_tokens >= max_connections:
            await stream.aclose()
            return
        async with slots, stream:
            try:
                if per == "connection":
                    await _relay_connection(stream, await connect())
                else:
                    await _relay_requests(stream, connect, max_body)
            except* (
                trio.BrokenResourceError,
                trio.ClosedResourceError,
                OSError,
                trio.TooSlowError,
                h11.ProtocolError,
            ):
                pass  # (one client or backend connection failed: the proxy goes on)

    listeners = await trio.open_tcp_listeners(port, host=host)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.serve_listeners, client, listeners)
        task_status.started(listeners[0].socket.getsockname()[:2])


async def _relay_connection(front: trio.SocketStream, back: trio.SocketStream) -> None:
    async def pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            while data := await source.receive_some(_CHUNK):
                await sink.send_all(data)
            await sink.send_eof()

    async with back:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pump, front, back)
            nursery.start_soon(pump, back, front)


async def _next_event(conn: h11.Connection, stream: trio.SocketStream) -> Any:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(_CHUNK))


def _forwarded(headers: Any) -> list[tuple[bytes, bytes]]:
    return [(name, value) for name, value in headers if name.lower() not in _HOP_BY_HOP]


async def _relay_requests(front: trio.SocketStream, connect: Any, max_body: int) -> None:
    conn = h11.Connection(h11.SERVER)
    while True:
        event = await _next_event(conn, front)
        if isinstance(event, h11.ConnectionClosed):
            return
        if not isinstance(event, h11.Request):
            return
        request = event
        body = bytearray()
        while not isinstance(event := await _next_event(conn, front), h11.EndOfMessage):
            if isinstance(event, h11.ConnectionClosed):
                return
            body += event.data
            if len(body) > max_body:
                await _answer(conn, front, 413, b"request body too large for the test proxy")
                return
        try:
            back = await connect()
        except (OSError, trio.TooSlowError):
            await _answer(conn, front, 502, b"backend unreachable")
        else:
            async with back:
                if not await _exchange_watching(conn, front, back, request, bytes(body)):
                    return
        if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
            return
        conn.start_next_cycle()


async def _exchange_watching(
    conn: h11.Connection, front: trio.SocketStream, back: trio.SocketStream, request: h11.Request, body: bytes
) -> bool:
    """:func:`_exchange`, ended early if the client goes away meanwhile (an SSE stream it left):
    whether the client is still there.  (What the client sends meanwhile is kept for later.)"""
    gone = False
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            nonlocal gone
            while data := await front.receive_some(_CHUNK):
                conn.receive_data(data)
            gone = True
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        await _exchange(conn, front, back, request, body)
        nursery.cancel_scope.cancel()
    return not gone


async def _exchange(
    conn: h11.Connection, front: trio.SocketStream, back: trio.SocketStream, request: h11.Request, body: bytes
) -> None:
    """One request to ``back``, its response relayed to ``front`` as it comes."""
    upstream = h11.Connection(h11.CLIENT)
    headers = [*_forwarded(request.headers), (b"connection", b"close")]
    out = upstream.send(h11.Request(method=request.method, target=request.target, headers=headers))
    out += upstream.send(h11.Data(data=body)) if body else b""
    await back.send_all(out + upstream.send(h11.EndOfMessage()))
    while True:
        event = await _next_event(upstream, back)
        if isinstance(event, h11.InformationalResponse):
            continue
        if isinstance(event, h11.Response):
            response = h11.Response(status_code=event.status_code, headers=_forwarded(event.headers))
            await front.send_all(conn.send(response))
        elif isinstance(event, h11.Data):
            await front.send_all(conn.send(h11.Data(data=event.data)))
        elif isinstance(event, h11.EndOfMessage):
            await front.send_all(conn.send(h11.EndOfMessage()))
            return
        else:  # the backend closed mid-response: so does the client's connection
            raise trio.BrokenResourceError("the backend closed mid-response")


async def _answer(conn: h11.Connection, front: trio.SocketStream, status: int, text: bytes) -> None:
    headers = [(b"content-type", b"text/plain"), (b"content-length", str(len(text)).encode())]
    headers.append((b"connection", b"close"))
    data = conn.send(h11.Response(status_code=status, headers=headers)) + conn.send(h11.Data(data=text))
    await front.send_all(data + conn.send(h11.EndOfMessage()))


@contextlib.contextmanager
def running_proxy(backends: Sequence[tuple[str, int]], **options: Any) -> Iterator[tuple[str, int]]:
    """:func:`serve_round_robin` in a thread of its own, for tests that do not run trio."""
    started: queue.Queue[tuple[Any, trio.lowlevel.TrioToken, trio.CancelScope] | BaseException] = (
        queue.Queue()
    )

    async def main() -> None:
        with trio.CancelScope() as scope:
            try:
                async with trio.open_nursery() as nursery:
                    address = await nursery.start(partial(serve_round_robin, backends, **options))
                    started.put((address, trio.lowlevel.current_trio_token(), scope))
            except BaseException as exc:
                started.put(exc)
                raise

    thread = threading.Thread(target=trio.run, args=(main,), daemon=True)
    thread.start()
    got = started.get(timeout=10)
    if isinstance(got, BaseException):
        raise got
    address, token, scope = got
    try:
        yield address
    finally:
        trio.from_thread.run_sync(scope.cancel, trio_token=token)
        thread.join(10)
