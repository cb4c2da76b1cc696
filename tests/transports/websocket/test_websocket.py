"""MCP over WebSocket (mcp_trio.transports.websocket), with real servers on 127.0.0.1.

Both server front doors (hypercorn through :class:`WebSocketASGI`, and the lean
wsproto server) are driven by our client and by a raw wsproto peer that does
what a well-behaved client never would: binary and broken frames, oversize
messages, silence instead of pongs, vanishing without a close frame.  The
client is also checked against a raw server.  Timeouts are real but short:
these tests use real sockets, on which a virtual clock would jump past the
waits for I/O.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError

from mcp_trio import ConnectionClosed, open_session
from mcp_trio._cli import main as cli_main
from mcp_trio.client import connect_http, connect_websocket, open_client
from mcp_trio.server import Server
from mcp_trio.transports.http.server import StreamableHTTP, serve_h11
from mcp_trio.transports.websocket import (
    WebSocketASGI,
    WebSocketChannel,
    WebSocketConnectError,
    WebSocketEndpoint,
    open_websocket_client,
    serve_hypercorn_websocket,
    serve_wsproto,
)
from tests._support.http_client import _certificates
from tests._support.paths import ROOT
from tests._support.websocket import serving

EXAMPLE = ROOT / "examples" / "everything.py"

TEXT, BINARY, CONTINUATION = 0x1, 0x2, 0x0
SIMPLE_TEXT = "This is a simple text response for testing."
TOOLS = {"test_simple_text", "test_tool_with_progress", "test_sampling", "test_elicitation"}


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("everything_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("everything_example", module)
    spec.loader.exec_module(module)
    return module


everything = load_example()


@pytest.fixture(params=["hypercorn", "wsproto"])
def front_door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def wait_until(predicate: Callable[[], bool], limit: float = 5.0) -> None:
    """Poll ``predicate`` (state that has no event to wait on) for at most ``limit`` s."""
    with trio.fail_after(limit):
        while not predicate():  # noqa: ASYNC110
            await trio.sleep(0.01)


def blocking_server(**session_options: Any) -> tuple[Server, dict[str, trio.Event]]:
    server = Server("ws-test", "1", **session_options)
    state = {"started": trio.Event(), "cancelled": trio.Event()}

    @server.tool
    async def forever() -> str:
        state["started"].set()
        try:
            await trio.sleep_forever()
        finally:
            state["cancelled"].set()
        return "never"

    @server.tool
    async def echo(text: str) -> str:
        return text

    return server, state


# ------------------------------------------------------------ a raw peer


def ws_frame(opcode: int, payload: bytes, *, fin: bool = True, masked: bool = True) -> bytes:
    """One WebSocket frame, written by hand (so it may be anything)."""
    head = bytes([(0x80 if fin else 0) | opcode])
    mask_bit = 0x80 if masked else 0
    n = len(payload)
    if n < 126:
        head += bytes([mask_bit | n])
    elif n < 65536:
        head += bytes([mask_bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([mask_bit | 127]) + struct.pack("!Q", n)
    if not masked:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


class Peer:
    """One end of a WebSocket spoken by hand.  A reader task answers pings
    (unless ``answer_pings`` is off) and queues everything else."""

    def __init__(self, stream: trio.SocketStream, ws: WSConnection, *, client: bool) -> None:
        self.stream = stream
        self.ws = ws
        self.client = client
        self.subprotocol: str | None = None
        self.answer_pings = True
        self.paused = False  # stop reading (after the read in progress)
        self.pings = 0
        self._lock = trio.Lock()
        self._events_send, self._events = trio.open_memory_channel[Any](1000)
        self._text: list[str] = []

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self.stream.send_all(data)

    async def run(self) -> None:
        try:
            await self._read()
        except (trio.BrokenResourceError, trio.ClosedResourceError, LocalProtocolError):
            pass
        finally:
            self._events_send.close()

    async def _read(self) -> None:
        for event in self.ws.events():  # anything that came with the handshake
            await self._on(event)
        while True:
            if self.paused:
                await trio.sleep_forever()
            data = await self.stream.receive_some(65536)
            if not data:
                return
            self.ws.receive_data(data)
            for event in self.ws.events():
                await self._on(event)
            if not self.client and self.ws.state is ConnectionState.CLOSED:
                return  # the close handshake is over: a server closes the connection

    async def _on(self, event: Any) -> None:
        if isinstance(event, Ping):
            self.pings += 1
            if self.answer_pings:
                await self._write(self.ws.send(event.response()))
            return
        if isinstance(event, CloseConnection) and self.ws.state is ConnectionState.REMOTE_CLOSING:
            await self._write(self.ws.send(event.response()))
        if isinstance(event, TextMessage):
            self._text.append(event.data)
            if not event.message_finished:
                return
            event = TextMessage("".join(self._text))
            self._text = []
        await self._events_send.send(event)

    async def send_text(self, text: str) -> None:
        await self._write(self.ws.send(TextMessage(text)))

    async def send_json(self, message: Any) -> None:
        await self.send_text(json.dumps(message))

    async def send_frame(self, opcode: int, payload: bytes, *, fin: bool = True) -> None:
        await self._write(ws_frame(opcode, payload, fin=fin, masked=self.client))

    async def close(self, code: int = 1000, reason: str = "") -> None:
        await self._write(self.ws.send(CloseConnection(code, reason)))

    async def event(self) -> Any:
        """The next event (``None`` once the connection has ended)."""
        try:
            return await self._events.receive()
        except trio.EndOfChannel:
            return None

    async def json(self) -> Any:
        with trio.fail_after(5):
            event = await self.event()
        assert isinstance(event, TextMessage), event
        return json.loads(event.data)

    async def close_frame(self, limit: float = 5.0) -> tuple[int, str] | None:
        """The code and reason of the close frame that ends the connection
        (``None``: it ended without one); messages before it are skipped."""
        with trio.fail_after(limit):
            while True:
                event = await self.event()
                if event is None:
                    return None
                if isinstance(event, CloseConnection):
                    return int(event.code), event.reason

    async def ended(self, limit: float = 5.0) -> None:
        with trio.fail_after(limit):
            while await self.event() is not None:
                pass


class Refused(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(status, body)
        self.status = status
        self.body = body


@asynccontextmanager
async def raw_connect(
    url: str,
    *,
    subprotocols: tuple[str, ...] = ("mcp",),
    headers: tuple[tuple[str, str], ...] = (),
    host: str | None = None,
) -> AsyncIterator[Peer]:
    """A raw WebSocket client connection (raises :class:`Refused` for a refused handshake)."""
    rest = url.split("://", 1)[1]
    authority, _, path = rest.partition("/")
    address, _, port = authority.rpartition(":")
    stream = await trio.open_tcp_stream(address, int(port))
    ws = WSConnection(ConnectionType.CLIENT)
    await stream.send_all(
        ws.send(
            Request(
                host=host or authority,
                target="/" + path,
                subprotocols=list(subprotocols),
                extra_headers=[(k.encode(), v.encode()) for k, v in headers],
            )
        )
    )
    peer = Peer(stream, ws, client=True)
    status, body, accepted = 0, b"", False
    with trio.fail_after(5):
        while not accepted:
            data = await stream.receive_some(65536)
            ws.receive_data(data or None)
            for event in ws.events():
                if isinstance(event, AcceptConnection):
                    peer.subprotocol, accepted = event.subprotocol, True
                    break  # what follows is the peer reader's
                if isinstance(event, RejectConnection):
                    status = event.status_code
                elif isinstance(event, RejectData):
                    body += event.data
                    if event.body_finished:
                        await stream.aclose()
                        raise Refused(status, body)
            if not data and not accepted:
                await stream.aclose()
                raise Refused(status, body)
    async with stream, trio.open_nursery() as nursery:
        nursery.start_soon(peer.run)
        yield peer
        nursery.cancel_scope.cancel()


async def refused(url: str, **options: Any) -> Refused:
    with pytest.raises(Refused) as info:
        async with raw_connect(url, **options):
            pass
    return info.value


def message(id: Any, method: str, params: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        out["id"] = id
    if params is not None:
        out["params"] = params
    return out


async def initialize(peer: Peer, version: str = "2025-06-18") -> None:
    info = {"name": "raw", "version": "1"}
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": info}
    await peer.send_json(message(1, "initialize", params))
    reply = await peer.json()
    assert reply["result"]["protocolVersion"] == version, reply
    await peer.send_json(message(None, "notifications/initialized"))


@asynccontextmanager
async def raw_server(handler: Callable[[Peer], Awaitable[None]]) -> AsyncIterator[str]:
    """A WebSocket server spoken by hand: accepts (selecting ``mcp``) and runs ``handler``."""

    async def connection(stream: trio.SocketStream) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        request = None
        while request is None:
            data = await stream.receive_some(65536)
            if not data:
                return
            ws.receive_data(data)
            request = next((e for e in ws.events() if isinstance(e, Request)), None)
        await stream.send_all(ws.send(AcceptConnection(subprotocol="mcp")))
        peer = Peer(stream, ws, client=False)
        async with stream, trio.open_nursery() as nursery:
            nursery.start_soon(peer.run)
            await handler(peer)
            nursery.cancel_scope.cancel()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            trio.serve_listeners, connection, await trio.open_tcp_listeners(0, host="127.0.0.1")
        )
        yield f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def tcp_proxy(url: str) -> AsyncIterator[tuple[str, Callable[[], None]]]:
    """A TCP relay in front of ``url``: (its URL, a function that resets every
    connection through it at once, as a network failure would)."""
    authority = url.split("://", 1)[1].split("/", 1)[0]
    host, _, port = authority.rpartition(":")
    sockets: list[trio.socket.SocketType] = []

    async def pipe(source: trio.SocketStream, sink: trio.SocketStream) -> None:
        try:
            while data := await source.receive_some(65536):
                await sink.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def connection(client: trio.SocketStream) -> None:
        upstream = await trio.open_tcp_stream(host, int(port))
        sockets.extend([client.socket, upstream.socket])
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pipe, client, upstream)
            nursery.start_soon(pipe, upstream, client)

    def reset() -> None:
        for sock in sockets:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(
            trio.serve_listeners, connection, await trio.open_tcp_listeners(0, host="127.0.0.1")
        )
        yield f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp", reset
        nursery.cancel_scope.cancel()


# ----------------------------------------------------- the everything server


@pytest.mark.parametrize("version", ["2025-06-18", "2026-07-28"])
async def test_everything_server_over_websocket(front_door: str, version: str) -> None:
    asked = trio.Event()
    handler_cancelled = trio.Event()

    async def sampling(params: Any) -> Any:
        asked.set()
        try:
            await trio.sleep_forever()
        finally:
            handler_cancelled.set()

    async with serving(front_door, everything.server.serve_session) as (url, endpoint):
        with trio.fail_after(10):
            async with connect_websocket(url, versions=[version], sampling=sampling) as client:
                assert client.protocol_version == version
                assert client.server_info["name"] == "mcp-trio-everything"
                assert endpoint.connections == 1
                assert TOOLS <= {tool.name for tool in await client.list_all_tools()}
                result = await client.call_tool("test_simple_text")
                assert result.content[0].text == SIMPLE_TEXT
                resource = await client.read_resource("test://static-text")
                assert resource.contents[0].uri == "test://static-text"

                progress: list[tuple[float, float | None]] = []

                async def on_progress(value: float, total: float | None, text: str | None) -> None:
                    progress.append((value, total))

                await client.call_tool("test_tool_with_progress", on_progress=on_progress)
                assert progress == [(0, 100), (50, 100), (100, 100)]

                # Cancelling the caller cancels the call; up to 2025-11-25 the
                # server then cancels its own sampling request to us, so our
                # handler is cancelled by the round trip; in 2026-07-28 it runs
                # inside the call and is cancelled with it.
                with trio.CancelScope() as scope:
                    async with trio.open_nursery() as nursery:
                        call = partial(client.call_tool, "test_sampling", {"prompt": "hi"})
                        nursery.start_soon(call)
                        await asked.wait()
                        scope.cancel()
                await handler_cancelled.wait()
                assert (await client.call_tool("test_simple_text")).content[0].text == SIMPLE_TEXT
        await wait_until(lambda: endpoint.connections == 0)


class _Spawns(trio.abc.Instrument):
    def __init__(self) -> None:
        self.names: list[str] = []

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.names.append(task.name)


@pytest.mark.parametrize("relay", [False, True], ids=["default", "reader-relay"])
async def test_requests_that_never_wait_are_answered_by_the_reader(front_door: str, relay: bool) -> None:
    """With the ``reader_relay`` option, over wsproto the channel says what it
    holds, so the engine's reader answers a lone request that never waits
    itself (docs/engine.md, "Reader relay"); the ASGI channel cannot tell.
    Without it (the default), or over ASGI, the first request gets a task and
    that task stays for the next ones.  Either way a request that waits does
    not hold up the others."""
    server, state = blocking_server(reader_relay=relay)
    spawns = _Spawns()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with connect_websocket(url) as client, trio.open_nursery() as nursery:
            nursery.start_soon(partial(client.call_tool, "forever"))
            with trio.fail_after(5):
                await state["started"].wait()
            trio.lowlevel.add_instrument(spawns)
            try:
                for i in range(5):
                    assert (await client.call_tool("echo", {"text": f"t{i}"})).content[0].text == f"t{i}"
            finally:
                trio.lowlevel.remove_instrument(spawns)
            nursery.cancel_scope.cancel()
    handlers = spawns.names.count("mcp_trio._engine._handlers.HandlerRunner.handle_request")
    assert handlers == (0 if relay and front_door == "wsproto" else 1), spawns.names


async def test_websocket_and_streamable_http_share_one_server() -> None:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(everything.server.serve_websocket, "127.0.0.1", 0, http=True))
        ws_url, http_url = urls
        assert ws_url.startswith("ws://127.0.0.1:") and http_url == "http" + ws_url[2:]
        with trio.fail_after(10):
            async with connect_websocket(ws_url) as over_ws, connect_http(http_url) as over_http:
                for client in (over_ws, over_http):
                    result = await client.call_tool("test_simple_text")
                    assert result.content[0].text == SIMPLE_TEXT
        nursery.cancel_scope.cancel()


async def test_plain_http_to_a_websocket_only_endpoint() -> None:
    server, _ = blocking_server()
    async with serving("hypercorn", server.serve_session) as (url, endpoint):
        address = url.split("://")[1].split("/")[0]
        host, _, port = address.rpartition(":")
        for path, status in (("/mcp", 426), ("/elsewhere", 404)):
            async with await trio.open_tcp_stream(host, int(port)) as stream:
                request = f"GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
                await stream.send_all(request.encode())
                data = b""
                with trio.fail_after(5):
                    while chunk := await stream.receive_some(65536):
                        data += chunk
            assert data.startswith(f"HTTP/1.1 {status} ".encode()), data
            if status == 426:
                assert b"upgrade: websocket" in data.lower()


# --------------------------------------------------------------- framing


async def test_invalid_json_gets_a_parse_error_and_the_session_goes_on(front_door: str) -> None:
    server, _ = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with raw_connect(url) as peer:
            assert peer.subprotocol == "mcp"
            await peer.send_text("{not json")
            reply = await peer.json()
            assert reply["id"] is None and reply["error"]["code"] == -32700
            await initialize(peer)
            await peer.send_json(message(2, "ping"))
            assert await peer.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
            # A message in fragments, a UTF-8 character split between them: one message.
            ping = message(3, "ping", {"_meta": {"name": "café"}})
            text = json.dumps(ping, ensure_ascii=False).encode()
            cut = text.index("é".encode()) + 1
            await peer.send_frame(TEXT, text[:cut], fin=False)
            await peer.send_frame(CONTINUATION, text[cut:])
            assert (await peer.json())["id"] == 3


async def test_a_binary_message_closes_with_1003(front_door: str) -> None:
    server, _ = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with raw_connect(url) as peer:
            await initialize(peer)
            await peer.send_frame(BINARY, json.dumps(message(2, "ping")).encode())
            code, reason = await peer.close_frame() or (None, "")
            assert code == 1003 and "text" in reason
            await peer.ended()
        await wait_until(lambda: endpoint.connections == 0)


async def test_invalid_utf8_closes_the_connection(front_door: str) -> None:
    server, _ = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with raw_connect(url) as peer:
            await initialize(peer)
            await peer.send_frame(TEXT, b'{"jsonrpc": "2.0", "method": "ping", "x": "\xff"}')
            closed = await peer.close_frame()
            if front_door == "wsproto":
                assert closed is not None and closed[0] == 1007
            else:
                # hypercorn drops such a connection without a close frame.
                assert closed is None or closed[0] == 1007
            await peer.ended()
        await wait_until(lambda: endpoint.connections == 0)


async def test_a_framing_error_closes_with_1002() -> None:
    server, _ = blocking_server()
    async with serving("wsproto", server.serve_session) as (url, endpoint):
        async with raw_connect(url) as peer:
            await peer.send_frame(CONTINUATION, b"no message to continue")
            closed = await peer.close_frame()
            assert closed is not None and closed[0] == 1002
        async with raw_connect(url) as peer:  # a client frame must be masked
            await peer._write(ws_frame(TEXT, b"{}", masked=False))
            closed = await peer.close_frame()
            assert closed is not None and closed[0] == 1002
        await wait_until(lambda: endpoint.connections == 0)


def padded_ping(id: int, size: int) -> bytes:
    """A ping request of exactly ``size`` bytes of UTF-8."""
    base = json.dumps(message(id, "ping", {"_meta": {"pad": ""}})).encode()
    return base.replace(b'"pad": ""', b'"pad": "' + b"x" * (size - len(base)) + b'"')


async def test_oversize_messages_close_with_1009(front_door: str) -> None:
    server, _ = blocking_server()
    limit = 1000
    async with serving(front_door, server.serve_session, max_message_size=limit) as (url, endpoint):
        async with raw_connect(url) as peer:
            exact = padded_ping(2, limit)
            assert len(exact) == limit
            await peer.send_text(exact.decode())
            assert await peer.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}
            await peer.send_text(padded_ping(3, limit + 1).decode())
            closed = await peer.close_frame()
            assert closed is not None and closed[0] == 1009
            if front_door == "wsproto":  # (hypercorn closes by itself, without a reason)
                assert closed[1] == f"message larger than {limit} bytes"
        async with raw_connect(url) as peer:  # in fragments: closed before it ends
            await peer.send_frame(TEXT, b"[" + b" " * 599, fin=False)
            await peer.send_frame(CONTINUATION, b" " * 600, fin=False)
            closed = await peer.close_frame()
            assert closed is not None and closed[0] == 1009
        async with raw_connect(url) as peer:  # 600 characters, 1200 bytes
            await peer.send_text(json.dumps({"x": "é" * 600}, ensure_ascii=False))
            closed = await peer.close_frame()
            assert closed is not None and closed[0] == 1009
        await wait_until(lambda: endpoint.connections == 0)


# ------------------------------------------------------------- handshake


async def test_subprotocol_negotiation(front_door: str) -> None:
    server, _ = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with raw_connect(url, subprotocols=("x-other", "mcp")) as peer:
            assert peer.subprotocol == "mcp"
        async with raw_connect(url, subprotocols=()) as peer:  # none offered: accepted
            assert peer.subprotocol is None
            await initialize(peer)
        refusal = await refused(url, subprotocols=("chat",))
        assert refusal.status == 400
        error = json.loads(refusal.body)["error"]
        assert error["code"] == -32600
        assert "'mcp'" in error["message"] and "chat" in error["message"]
    strict = {"require_subprotocol": True}
    async with serving(front_door, server.serve_session, **strict) as (url, endpoint):
        assert (await refused(url, subprotocols=())).status == 400
        async with raw_connect(url) as peer:
            assert peer.subprotocol == "mcp"


async def test_host_origin_and_path_checks(front_door: str) -> None:
    server, _ = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        refusal = await refused(url, headers=(("Origin", "https://evil.example"),))
        assert refusal.status == 403
        assert "Origin not allowed" in json.loads(refusal.body)["error"]["message"]
        assert (await refused(url, host="evil.example")).status == 421
        assert (await refused(url.replace("/mcp", "/other"))).status == 404
        port = url.split(":")[2].split("/")[0]
        async with raw_connect(url, headers=(("Origin", f"http://localhost:{port}"),)) as peer:
            await initialize(peer)
        # exact checks: another local port's page, a list of hosts, a bad port
        assert (await refused(url, headers=(("Origin", "http://localhost:5173"),))).status == 403
        assert (await refused(url, headers=(("Origin", "null"),))).status == 403
        assert (await refused(url, host=f"127.0.0.1:{port}, evil.example")).status == 421
        assert (await refused(url, host="127.0.0.1:evil.example")).status == 421
        with pytest.raises(WebSocketConnectError) as info:
            async with open_websocket_client(url, origin="https://evil.example"):
                pass
        assert info.value.status == 403 and "HTTP 403" in str(info.value)
        await wait_until(lambda: endpoint.connections == 0)
    options = {"allowed_origins": ["https://app.example"]}
    async with serving(front_door, server.serve_session, **options) as (url, endpoint):
        async with open_websocket_client(url, origin="https://app.example") as channel:
            assert channel.subprotocol == "mcp"
        assert (await refused(url, headers=(("Origin", "http://localhost"),))).status == 403


# ------------------------------------------------------------- keepalive


async def test_the_server_drops_a_peer_that_does_not_answer_pings(front_door: str) -> None:
    server, _ = blocking_server()
    options = {"keepalive_interval": 0.2, "keepalive_timeout": 0.6}
    async with serving(front_door, server.serve_session, **options) as (url, endpoint):
        async with raw_connect(url) as healthy, raw_connect(url) as silent:
            silent.answer_pings = False
            await initialize(healthy)
            await initialize(silent)
            start = trio.current_time()
            closed = await silent.close_frame()
            elapsed = trio.current_time() - start
            if front_door == "wsproto":
                assert closed == (1011, "keepalive ping timeout: no pong within 0.6 s")
            else:  # hypercorn: no data for interval + timeout, the connection is dropped
                assert closed is None
            assert silent.pings >= 1 and 0.5 < elapsed < 5
            # The peer that answers stays, well past the timeout.
            await healthy.send_json(message(2, "ping"))
            assert (await healthy.json())["id"] == 2
            assert healthy.pings >= 2
            await wait_until(lambda: endpoint.connections == 1)


async def test_the_client_drops_a_server_that_does_not_answer_pings() -> None:
    async def silent(peer: Peer) -> None:
        peer.answer_pings = False
        await peer.ended(limit=10)

    async with raw_server(silent) as url:
        options = {"keepalive_interval": 0.1, "keepalive_timeout": 0.2}
        async with open_websocket_client(url, **options) as channel:
            info = {"name": "t", "version": "1"}
            async with open_session(channel, role="client", info=info) as session:
                start = trio.current_time()
                with trio.fail_after(3), pytest.raises(ConnectionClosed):
                    await session.initialize(timeout=None)  # never answered
                assert trio.current_time() - start < 1.5
        assert channel.close_code == 1011 and "keepalive" in channel.close_reason


async def test_backpressure_is_not_a_keepalive_failure_and_nothing_is_lost(front_door: str) -> None:
    """The server runs one request at a time and reads one message ahead: the
    other calls wait in the socket while several keepalive periods pass."""
    server = Server("bp", "1", max_in_flight=1)
    gate = trio.Event()

    @server.tool
    async def gated(i: int) -> int:
        await gate.wait()
        return i

    options = {"inbound_buffer": 1, "keepalive_interval": 0.1, "keepalive_timeout": 0.2}
    async with serving(front_door, server.serve_session, **options) as (url, endpoint):
        async with connect_websocket(url, websocket_options={"keepalive_interval": None}) as client:
            results: dict[int, Any] = {}

            async def call(i: int) -> None:
                results[i] = (await client.call_tool("gated", {"i": i})).structuredContent["result"]

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    for i in range(40):
                        nursery.start_soon(call, i)
                    await trio.sleep(0.8)
                    gate.set()
            assert results == {i: i for i in range(40)}
            assert endpoint.connections == 1


async def test_a_peer_that_stops_reading_is_dropped() -> None:
    """Its answers pile up until our writes block; then our own reader stalls
    too (one request at a time, a one-frame outbox), which must not pass for
    our backpressure: the keepalive drops the peer.  (The wsproto front door
    only: hypercorn writes without a timeout, in a shielded call, see
    docs/websocket.md.)"""
    server = Server("big", "1", max_in_flight=1, outbox_size=1)

    @server.tool
    async def big() -> str:
        return "x" * (512 * 1024)

    options = {"keepalive_interval": 0.2, "keepalive_timeout": 0.3, "inbound_buffer": 1}
    async with serving("wsproto", server.serve_session, **options) as (url, endpoint):
        async with raw_connect(url) as peer:
            await initialize(peer)
            peer.paused = True
            for i in range(24):  # 12 MiB of answers: more than the sockets buffer
                await peer.send_json(message(10 + i, "tools/call", {"name": "big"}))
            await wait_until(lambda: endpoint.connections == 0, limit=10)


# ------------------------------------------------------------- endings


async def test_an_abrupt_disconnect_fails_pending_calls_and_cleans_up(front_door: str) -> None:
    server, state = blocking_server()
    async with serving(front_door, server.serve_session) as (url, endpoint):
        async with tcp_proxy(url) as (proxy_url, reset):
            no_pings = {"keepalive_interval": None}
            async with connect_websocket(proxy_url, websocket_options=no_pings) as client:
                errors: list[BaseException] = []
                failed = trio.Event()

                async def call() -> None:
                    try:
                        await client.call_tool("forever", timeout=None)
                    except ConnectionClosed as exc:
                        errors.append(exc)
                        failed.set()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(call)
                    with trio.fail_after(5):
                        await state["started"].wait()
                    reset()
                    start = trio.current_time()
                    with trio.fail_after(2):
                        await failed.wait()
                assert trio.current_time() - start < 1
                assert "closed" in str(errors[0])
                with pytest.raises(ConnectionClosed):
                    await client.call_tool("echo", {"text": "again"})
            # The server saw the connection go: the handler was cancelled, the session ended.
            with trio.fail_after(5):
                await state["cancelled"].wait()
            await wait_until(lambda: endpoint.connections == 0)


async def test_the_peer_closing_first_gets_its_code_back(front_door: str) -> None:
    server, _ = blocking_server()
    channels: list[WebSocketChannel] = []

    async def serve(channel: WebSocketChannel) -> None:
        channels.append(channel)
        await server.serve_session(channel)

    async with serving(front_door, serve) as (url, endpoint):
        async with raw_connect(url) as peer:
            await initialize(peer)
            await peer.close(1000, "bye")
            assert await peer.close_frame() == (1000, "bye")
            await peer.ended()
        await wait_until(lambda: endpoint.connections == 0)
        if front_door == "wsproto":  # hypercorn reports no code to the application
            assert (channels[0].close_code, channels[0].close_reason) == (1000, "bye")


async def test_leaving_the_client_closes_cleanly_even_when_cancelled(front_door: str) -> None:
    server, state = blocking_server()
    channels: list[WebSocketChannel] = []

    async def serve(channel: WebSocketChannel) -> None:
        channels.append(channel)
        await server.serve_session(channel)

    async with serving(front_door, serve) as (url, endpoint):
        async with open_websocket_client(url) as channel:
            async with open_client(channel) as client:
                assert (await client.call_tool("echo", {"text": "hi"})).content[0].text == "hi"
        assert (channel.close_code, channel.close_reason) == (1000, "")
        with trio.CancelScope() as scope:
            async with open_websocket_client(url) as cancelled:
                async with open_client(cancelled) as client, trio.open_nursery() as nursery:
                    nursery.start_soon(partial(client.call_tool, "forever"))
                    await state["started"].wait()
                    scope.cancel()
        assert cancelled.close_code == 1000
        with trio.fail_after(5):
            await state["cancelled"].wait()
        await wait_until(lambda: endpoint.connections == 0)
        if front_door == "wsproto":
            assert [c.close_code for c in channels] == [1000, 1000]


@pytest.mark.parametrize("how", ["cancel", "shutdown"])
async def test_a_stopping_server_closes_with_1001(front_door: str, how: str) -> None:
    server, state = blocking_server()
    endpoint = WebSocketEndpoint(server.serve_session)
    async with trio.open_nursery() as outer:
        server_scope = trio.CancelScope()

        async def run(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            with server_scope:
                if front_door == "hypercorn":
                    app = WebSocketASGI(endpoint)
                    await serve_hypercorn_websocket(app, "127.0.0.1", 0, task_status=task_status)
                else:
                    await serve_wsproto(endpoint, "127.0.0.1", 0, task_status=task_status)

        url = (await outer.start(run))[0] + "/mcp"
        errors: list[BaseException] = []

        async def call(client: Any) -> None:
            try:
                await client.call_tool("forever", timeout=None)
            except ConnectionClosed as exc:
                errors.append(exc)

        async with open_websocket_client(url, keepalive_interval=None) as channel:
            async with open_client(channel) as client:
                with trio.fail_after(3):
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(call, client)
                        await state["started"].wait()
                        if how == "cancel":
                            server_scope.cancel()
                        else:
                            endpoint.shutdown()
                assert len(errors) == 1
                # the waiting call says how the connection ended
                assert "WebSocket close code 1001: server shutting down" in str(errors[0])
        assert (channel.close_code, channel.close_reason) == (1001, "server shutting down")
        assert state["cancelled"].is_set()
        await wait_until(lambda: endpoint.connections == 0)
        if how == "shutdown":  # the server is still up, but takes no one new
            with pytest.raises(WebSocketConnectError) as info:
                async with open_websocket_client(url):
                    pass
            assert info.value.status == 503
        server_scope.cancel()


# --------------------------------------------------------------- client


@pytest.mark.parametrize(
    "frame, code",
    [
        (ws_frame(BINARY, b"{}", masked=False), 1003),
        (ws_frame(TEXT, b'{"x": "\xc3"}', masked=False), 1007),
        (ws_frame(TEXT, b"[" + b" " * 200 + b"]", masked=False), 1009),
        (ws_frame(TEXT, b"{}", masked=True), 1002),  # a server frame must not be masked
    ],
    ids=["binary", "invalid-utf8", "too-big", "masked"],
)
async def test_the_client_closes_on_bad_frames_from_the_server(frame: bytes, code: int) -> None:
    seen: list[tuple[int, str] | None] = []

    async def bad(peer: Peer) -> None:
        await peer._write(frame)
        seen.append(await peer.close_frame())

    async with raw_server(bad) as url:
        options = {"max_message_size": 100, "keepalive_interval": None}
        async with open_websocket_client(url, **options) as channel:
            with trio.fail_after(5), pytest.raises(trio.EndOfChannel):
                await channel.receive()
            assert channel.close_code == code
    assert seen and seen[0] is not None and seen[0][0] == code


async def test_the_client_reads_frames_that_come_with_the_handshake_answer() -> None:
    async def eager(peer: Peer) -> None:
        log = {"level": "info", "data": "early"}
        await peer.send_json(message(None, "notifications/message", log))
        await peer.ended()

    async with raw_server(eager) as url:
        async with open_websocket_client(url, keepalive_interval=None) as channel:
            with trio.fail_after(5):
                frame = await channel.receive()
            assert json.loads(frame.data)["params"]["data"] == "early"


async def test_client_connection_errors() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    refused_error = pytest.raises(WebSocketConnectError, match="cannot connect to 127.0.0.1")
    with trio.fail_after(5), refused_error:
        async with open_websocket_client(f"ws://127.0.0.1:{port}/mcp"):
            pass
    with pytest.raises(ValueError, match="not a ws"):
        async with open_websocket_client("http://127.0.0.1/mcp"):
            pass
    with pytest.raises(ValueError, match="sets 'Sec-WebSocket-Protocol' itself"):
        headers = {"Sec-WebSocket-Protocol": "x"}
        async with open_websocket_client("ws://127.0.0.1/mcp", headers=headers):
            pass
    # A Streamable HTTP endpoint is not a WebSocket one: the handshake is refused.
    server, _ = blocking_server()
    http = StreamableHTTP(server.serve_session)
    async with trio.open_nursery() as nursery:
        await nursery.start(http.run)
        urls = await nursery.start(serve_h11, http, "127.0.0.1", 0)
        with trio.fail_after(5), pytest.raises(WebSocketConnectError) as info:
            async with open_websocket_client("ws" + urls[0][4:] + "/mcp"):
                pass
        assert info.value.status is not None and 400 <= info.value.status < 500
        nursery.cancel_scope.cancel()


async def test_handshakes_that_never_finish_time_out() -> None:
    async def mute(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:  # a server that never answers the upgrade
        listeners = await nursery.start(
            trio.serve_listeners, mute, await trio.open_tcp_listeners(0, host="127.0.0.1")
        )
        url = f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        start = trio.current_time()
        with trio.fail_after(5), pytest.raises(WebSocketConnectError, match="within 0.3 s"):
            async with open_websocket_client(url, connect_timeout=0.3):
                pass
        assert trio.current_time() - start < 1
        nursery.cancel_scope.cancel()
    server, _ = blocking_server()
    endpoint = WebSocketEndpoint(server.serve_session)
    async with trio.open_nursery() as nursery:  # a client that never sends one
        urls = await nursery.start(partial(serve_wsproto, endpoint, handshake_timeout=0.3))
        address, _, port = urls[0].split("://")[1].rpartition(":")
        async with await trio.open_tcp_stream(address, int(port)) as stream:
            with trio.fail_after(5):
                assert await stream.receive_some(100) == b""  # closed by the server
        nursery.cancel_scope.cancel()


async def test_wss_with_tls(front_door: str, tmp_path: Path) -> None:
    server_ctx, client_ctx = _certificates(tmp_path)
    server, _ = blocking_server()
    options: dict[str, Any] = {"ssl_context": server_ctx}
    if front_door == "hypercorn":
        files = {"certfile": str(tmp_path / "cert.pem"), "keyfile": str(tmp_path / "key.pem")}
        options = {"hypercorn_options": files}
    async with serving(front_door, server.serve_session, **options) as (url, endpoint):
        assert url.startswith("wss://127.0.0.1:")
        with trio.fail_after(10):
            tls = {"ssl_context": client_ctx}
            async with connect_websocket(url, websocket_options=tls) as client:
                result = await client.call_tool("echo", {"text": "over TLS"})
                assert result.content[0].text == "over TLS"
            with pytest.raises(WebSocketConnectError, match="CERTIFICATE_VERIFY_FAILED"):
                async with open_websocket_client(url):
                    pass


# ------------------------------------------------------------------ CLI


async def test_mcp_trio_serve_over_websocket() -> None:
    command = ["serve", "examples/everything.py", "--ws", "127.0.0.1:0"]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "mcp_trio._cli", *command],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert process.stderr is not None
    try:
        output = b""
        with trio.fail_after(30):
            while b"\n" not in output:
                chunk = await process.stderr.receive_some(4096)
                assert chunk, output
                output += chunk
        line = output.decode().splitlines()[0]
        assert "WebSocket at ws://127.0.0.1:" in line, line
        url = line.split(" at ")[1].split()[0]
        with trio.fail_after(10):
            async with connect_websocket(url) as client:
                assert TOOLS <= {tool.name for tool in await client.list_all_tools()}
        process.send_signal(signal.SIGINT)
        with trio.fail_after(10):
            assert await process.wait() == 0  # a graceful stop (see tests/cli/test_serve_deploy.py)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stderr.aclose()


def test_serve_refuses_both_http_and_ws(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["serve", str(EXAMPLE), "--ws", "127.0.0.1:0", "--http", "127.0.0.1:0"]) == 2
    assert "use --http or --ws, not both" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--ws wants HOST:PORT"):
        cli_main(["serve", str(EXAMPLE), "--ws", "nowhere"])
