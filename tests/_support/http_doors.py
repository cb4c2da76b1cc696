"""Raw sockets against each HTTP door: a request, the answer as the client saw it, and whether
the server closed the connection."""

from __future__ import annotations

import tracemalloc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio
import trio.testing

from mcp_trio.transports.http.server import (
    ASGIApp,
    HttpRequest,
    Responder,
    serve_h11,
    serve_hypercorn,
)
from tests._support.doors import is_lean

REQUEST = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


BIG = 4 * 1024 * 1024


class Answer:
    """Answers ``ok`` (0.8 s late at ``/mcp?slow``, once ``release`` is set at ``/mcp?hold``),
    or ``BIG`` bytes at ``/mcp?big``, and records how a big answer ended."""

    max_body_size = 1024

    def __init__(self) -> None:
        self.big_ended = trio.Event()
        self.big_outcome = ""
        self.extra_bytes = -1  # memory the big answer's write took beyond its body (traced)
        self.release = trio.Event()

    async def handle(self, request: HttpRequest, responder: Responder) -> None:
        if request.query == "slow":
            await trio.sleep(0.8)
        elif request.query == "hold":
            await self.release.wait()
        if request.query != "big":
            await responder.start(200, [("content-type", "text/plain"), ("content-length", "2")])
            await responder.send(b"ok")
            await responder.end()
            return
        body = b"x" * BIG
        try:
            await responder.start(200, [("content-type", "text/plain"), ("content-length", str(BIG))])
            if tracemalloc.is_tracing():
                tracemalloc.reset_peak()
                before = tracemalloc.get_traced_memory()[0]
            await responder.send(body)
            self.big_outcome = "sent"
        except trio.BrokenResourceError:
            self.big_outcome = "dropped"
        finally:
            self.big_outcome = self.big_outcome or "cancelled"  # by the door, its connection closed
            if tracemalloc.is_tracing():
                self.extra_bytes = tracemalloc.get_traced_memory()[1] - before
            self.big_ended.set()


@asynccontextmanager
async def serving(door: str, handler: Answer, **limits: Any) -> AsyncIterator[int]:
    """Serve ``handler`` at /mcp on ``door`` with ``limits``; yields the port."""
    async with trio.open_nursery() as nursery:
        if is_lean(door):
            serve = partial(serve_h11, handler, "127.0.0.1", 0, parser=door, **limits)
        else:
            app = ASGIApp(handler, request_timeout=limits.pop("request_timeout", 30.0))
            serve = partial(serve_hypercorn, app, "127.0.0.1", 0, **limits)
        urls = await nursery.start(serve)
        yield int(urls[0].rsplit(":", 1)[1])
        nursery.cancel_scope.cancel()


async def connect(port: int, source: str = "127.0.0.1", rcvbuf: int = 0) -> trio.socket.SocketType:
    sock = trio.socket.socket()
    if rcvbuf:
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_RCVBUF, rcvbuf)
    await sock.bind((source, 0))
    await sock.connect(("127.0.0.1", port))
    return sock


async def closed_by_server(sock: trio.socket.SocketType) -> bool:
    """Whether the server closed ``sock`` (EOF or reset), reading what comes before."""
    try:
        while await sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True
