"""A raw JSON-RPC peer for tests: what a test sends goes out as it is, what comes back is read as
it came."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import trio

from ..transports._base import Frame, MessageChannel
from ..transports.http._request import SessionServer
from ..transports.memory import open_memory_transport_pair

__all__ = ["RawPeer", "serve_raw"]

_CLIENT_INFO = {"name": "mcp-trio raw peer", "version": "0"}


class RawPeer:
    """The other end of a channel, speaking raw JSON-RPC: a message sent is a JSON value (or
    bytes, sent untouched: broken ones too), a message received is the JSON value that came
    (:meth:`receive_frame` for the bytes). Nothing is checked or answered for you, so a test
    sees exactly what the peer it talks to does.

    :meth:`request` numbers its requests and waits for the answer with that id; whatever else
    comes meanwhile (notifications, the peer's own requests) is kept in :attr:`received`, in
    order, for the test to look at.
    """

    def __init__(self, channel: MessageChannel, *, timeout: float = 10.0) -> None:
        self.channel = channel
        #: Seconds :meth:`receive` and :meth:`request` wait before :class:`trio.TooSlowError`.
        self.timeout = timeout
        #: What came while :meth:`request` waited for its answer, in order.
        self.received: list[Any] = []
        self._ids = itertools.count(1)

    async def send(self, message: Any) -> None:
        """Send ``message``: bytes as they are, anything else as its JSON text."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        await self.channel.send(Frame(data))

    async def receive_frame(self) -> Frame:
        """The next frame, as the transport delivered it."""
        with trio.fail_after(self.timeout):
            return await self.channel.receive()

    async def receive(self) -> Any:
        """The next message, decoded from JSON."""
        return json.loads((await self.receive_frame()).data)

    async def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a request with the next id; its answer (the whole response, ``result`` or
        ``error``)."""
        id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)
        with trio.fail_after(self.timeout):
            while True:
                got = await self.receive()
                if isinstance(got, dict) and got.get("id") == id and "method" not in got:
                    return got
                self.received.append(got)

    async def initialize(
        self, version: str = "2025-11-25", capabilities: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The handshake of the revisions that have one: ``initialize`` (its answer returned),
        then ``notifications/initialized``."""
        params = {"protocolVersion": version, "capabilities": dict(capabilities or {})}
        answer = await self.request("initialize", {**params, "clientInfo": _CLIENT_INFO})
        await self.notify("notifications/initialized")
        return answer


@asynccontextmanager
async def serve_raw(server: SessionServer, *, timeout: float = 10.0) -> AsyncIterator[RawPeer]:
    """``server`` (a ``mcp_trio.server.Server``, or anything with ``serve_session``) serving
    one session over an in-memory pair, and a :class:`RawPeer` at the other end: a test of how
    a server answers what a client really sends, broken messages included.

    Example::

        async with serve_raw(server) as peer:
            await peer.initialize()
            answer = await peer.request("tools/call", {"name": "add", "arguments": {"a": 1}})
            await peer.send(b'{"jsonrpc": "2.0", "id": 9, "method": ')  # not JSON: -32700
            assert (await peer.receive())["error"]["code"] == -32700
    """
    ours, theirs = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, theirs)
        try:
            yield RawPeer(ours, timeout=timeout)
        finally:
            await ours.aclose()
            nursery.cancel_scope.deadline = trio.current_time() + timeout
