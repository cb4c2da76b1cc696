"""Bounds on long-lived streams and on sessions per client address, over real
sockets on both front doors: GET streams per process, per client address and
per session, the idle timeout of GET streams (with a retry hint the client
resumes from), the same for HTTP+SSE (2024-11-05) streams, and sessions per
client address.  Clients are told apart by source address: the "attacker"
binds 127.0.0.3, the legitimate client 127.0.0.2 (all of 127.0.0.0/8 is
loopback)."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio.server import Server
from mcp_trio.transports.http.server import HttpRequest, StreamableHTTP, _streams
from tests._support.doors import DOORS
from tests._support.http_lean import VERSION, Reader, call, make_server, post, serving

CLIENT = "127.0.0.2"
ATTACKER = "127.0.0.3"
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def connect(port: int, source: str) -> tuple[trio.SocketStream, Reader]:
    stream = await trio.open_tcp_stream("127.0.0.1", port, local_address=source)
    return stream, Reader(stream)


async def initialize(
    port: int, source: str, initialized: bool = True
) -> tuple[trio.SocketStream, Reader, str]:
    """A new session from ``source`` (past ``initialize`` unless told not to)."""
    stream, reader = await connect(port, source)
    await stream.send_all(post(INIT))
    status, headers, body = await reader.response()
    assert status == 200, body
    session_id = headers["mcp-session-id"]
    if initialized:
        await stream.send_all(post(INITIALIZED, session_id))
        assert (await reader.response())[0] == 202
    return stream, reader, session_id


def get(session_id: str, last_event_id: str | None = None) -> bytes:
    head = [
        b"GET /mcp HTTP/1.1",
        b"host: 127.0.0.1",
        b"accept: text/event-stream",
        b"mcp-protocol-version: " + VERSION.encode(),
        b"mcp-session-id: " + session_id.encode(),
    ]
    if last_event_id is not None:
        head.append(b"last-event-id: " + last_event_id.encode())
    return b"\r\n".join(head) + b"\r\n\r\n"


async def open_get(
    stream: trio.SocketStream, reader: Reader, session_id: str, **kw: Any
) -> tuple[int, dict[str, str]]:
    await stream.send_all(get(session_id, **kw))
    status, headers, _ = await reader.response_head()
    return status, headers


async def until_end(reader: Reader) -> bytes:
    """The rest of an SSE (chunked) body."""
    raw = b""
    while data := await reader.chunk():
        raw += data
    return raw


async def get_stream_from(port: int, source: str) -> tuple[trio.SocketStream, Reader, int, dict[str, str]]:
    """A new session from ``source`` and its GET stream (its answer's status and headers)."""
    stream, reader, session_id = await initialize(port, source)
    status, headers = await open_get(stream, reader, session_id)
    return stream, reader, status, headers


@pytest.mark.parametrize("front_door", DOORS)
async def test_idle_get_streams_of_one_address_never_lock_another_out(front_door: str) -> None:
    """One address opening GET streams gets its share (64 by default), then 429
    with Retry-After: a client of another address still opens a session,
    calls a tool and opens its own GET stream, even on a front door whose
    connections (80 here) the attacker's streams would otherwise all take."""
    server, _ = make_server()
    held: list[trio.SocketStream] = []
    refused: list[tuple[int, dict[str, str]]] = []
    door = {
        "max_connections": 80,
        "max_connections_per_client": 80,
    }  # the stream bounds, not the door's, at work
    async with serving(front_door, server, h11_options=door) as (port, _):
        try:
            with trio.fail_after(20):
                for _ in range(80):
                    stream, _reader, status, headers = await get_stream_from(port, ATTACKER)
                    if status == 200:
                        held.append(stream)
                    else:
                        refused.append((status, headers))
                        await stream.aclose()
            with trio.fail_after(5):
                stream, reader, session_id = await initialize(port, CLIENT)
                await stream.send_all(post(call(1, "echo", text="still here"), session_id))
                status, _, body = await reader.response()
                assert status == 200 and b"still here" in body
                assert (await open_get(stream, reader, session_id))[0] == 200
                await stream.aclose()
        finally:
            for stream in held:
                await stream.aclose()
    assert len(held) == 64 and len(refused) == 16
    assert all(status == 429 and headers["retry-after"] == "5" for status, headers in refused)


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_full_stream_table_makes_room_from_the_biggest_holder(front_door: str) -> None:
    """At ``max_streams_total`` a new address's GET stream closes the oldest
    stream of the address holding the most (a retry hint, then the end, so its
    client reconnects); that address then gets 503 with Retry-After; a second
    GET stream of one session gets 409."""
    server, _ = make_server()
    options = {"max_streams_total": 4, "max_streams_per_client": None}
    async with serving(front_door, server, **options) as (port, endpoint):
        with trio.fail_after(10):
            attackers = [await get_stream_from(port, ATTACKER) for _ in range(4)]
            assert [status for _, _, status, _ in attackers] == [200] * 4
            for _, reader, _, _ in attackers:
                assert b"retry: 1000" in await reader.chunk()  # the priming event
            stream, reader, session_id = await initialize(port, CLIENT)
            assert (await open_get(stream, reader, session_id))[0] == 200
            oldest = attackers[0][1]
            assert await until_end(oldest) == b"retry: 1000\n\n"
            assert endpoint.stream_slots.open == 4
            late = await get_stream_from(port, ATTACKER)
            assert late[2] == 503 and late[3]["retry-after"] == "5"
            second, second_reader = await connect(port, CLIENT)
            status, _ = await open_get(second, second_reader, session_id)
            assert status == 409
            for s in (stream, second, late[0], *(a[0] for a in attackers)):
                await s.aclose()


@pytest.mark.parametrize("front_door", DOORS)
async def test_an_idle_get_stream_ends_with_a_retry_hint_and_resumes(front_door: str) -> None:
    """A GET stream that sent nothing for ``stream_idle_timeout`` ends cleanly
    after ``retry``; the client resumes it with ``Last-Event-ID`` and gets what
    was sent meanwhile."""
    server, _ = make_server()
    async with serving(front_door, server, stream_idle_timeout=0.3) as (port, endpoint):
        with trio.fail_after(10):
            stream, reader, session_id = await initialize(port, CLIENT)
            assert (await open_get(stream, reader, session_id))[0] == 200
            started = trio.current_time()
            priming = await reader.chunk()
            event_id = priming.split(b"id: ")[1].split(b"\n")[0].decode()
            assert await until_end(reader) == b"retry: 1000\n\n"
            assert trio.current_time() - started >= 0.25
            while endpoint.stream_slots.open:  # its place is given back once the answer has ended
                await trio.sleep(0.01)

            @server.tool
            async def added() -> str:  # tells every session: notifications/tools/list_changed
                return "new"

            await trio.sleep(0.05)
            # The same connection goes on: the stream's end was a clean end of its response.
            assert (await open_get(stream, reader, session_id, last_event_id=event_id))[0] == 200
            assert b"notifications/tools/list_changed" in await reader.chunk()
            await stream.aclose()


@pytest.mark.parametrize("front_door", DOORS)
async def test_an_initialize_flood_from_one_address_leaves_another_its_sessions(front_door: str) -> None:
    """Past ``max_sessions_per_client`` an address's ``initialize`` gets 429 with
    Retry-After (its own half-open sessions are younger than ``_REPLACE_AFTER``);
    another address's sessions stay and it still starts sessions."""
    server, _ = make_server()
    options = {"max_sessions": 20, "max_sessions_per_client": 5}
    async with serving(front_door, server, **options) as (port, endpoint):
        with trio.fail_after(20):
            stream, reader, session_id = await initialize(port, CLIENT, initialized=False)
            flood, flood_reader = await connect(port, ATTACKER)
            for n in range(60):  # three times the whole table
                await flood.send_all(post(INIT))
                status, headers, body = await flood_reader.response()
                if n < 5:
                    assert status == 200
                else:
                    assert status == 429 and headers["retry-after"] == "5" and b"client address" in body
            await stream.send_all(post(INITIALIZED, session_id))
            assert (await reader.response())[0] == 202  # still there
            assert len(endpoint.sessions) == 6
            other, _, _ = await initialize(port, CLIENT)
            for s in (stream, flood, other):
                await s.aclose()


@pytest.mark.parametrize("front_door", DOORS)
async def test_an_address_replaces_only_its_half_open_sessions_older_than_10_s(
    front_door: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At its share an address's ``initialize`` evicts its own oldest half-open session
    only once that one is ``_REPLACE_AFTER`` old (10 s; shortened here); never one that
    got past ``initialize``."""
    monkeypatch.setattr(_streams, "_REPLACE_AFTER", 0.5)
    server, _ = make_server()
    options = {"max_sessions": 20, "max_sessions_per_client": 2}
    async with serving(front_door, server, **options) as (port, endpoint):
        with trio.fail_after(20):
            done, _, kept = await initialize(port, ATTACKER)  # past initialize: never evicted
            flood, flood_reader = await connect(port, ATTACKER)
            await flood.send_all(post(INIT))
            status, headers, _ = await flood_reader.response()
            assert status == 200
            half_open = headers["mcp-session-id"]
            await flood.send_all(post(INIT))
            assert (await flood_reader.response())[0] == 429  # its half-open one is too young
            await trio.sleep(0.6)
            await flood.send_all(post(INIT))
            status, headers, _ = await flood_reader.response()
            assert status == 200
            assert half_open not in endpoint.sessions and kept in endpoint.sessions
            assert headers["mcp-session-id"] in endpoint.sessions
            await flood.send_all(post(INIT))
            assert (await flood_reader.response())[0] == 429
            for s in (done, flood):
                await s.aclose()


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


async def ping(stream: trio.SocketStream, reader: Reader, session_id: str) -> int:
    await stream.send_all(post(PING, session_id))
    return (await reader.response())[0]


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_full_table_ends_a_session_of_the_address_holding_the_most(front_door: str) -> None:
    """A table full of initialized sessions held from several addresses: a newcomer's
    ``initialize`` ends a least recently used session of the address holding the most, not
    the legitimate client's one session, though that one was used least recently of all."""
    server, _ = make_server()
    async with serving(front_door, server, max_sessions=6) as (port, endpoint):
        with trio.fail_after(20):
            mine = await initialize(port, CLIENT)
            held = [await initialize(port, ATTACKER) for _ in range(5)]
            for stream, reader, session_id in held:  # kept busy: each used after the client's
                assert await ping(stream, reader, session_id) == 200
            for n in range(3):
                newcomer = await initialize(port, f"127.0.0.{4 + n}")
                held.append(newcomer)
                assert len(endpoint.sessions) == 6
            alive = [await ping(*session) for session in held]
            assert alive == [404] * 3 + [200] * 5  # the attacker's three least recently used
            assert await ping(*mine) == 200
            for stream, _, _ in [mine, *held]:
                await stream.aclose()


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_full_table_ends_no_session_with_a_stream_open(front_door: str) -> None:
    """Only when every session of the full table has a stream open (a GET or a POST) does a
    new ``initialize`` get 503; once one closes its stream, that one makes room."""
    server, _ = make_server()
    async with serving(front_door, server, max_sessions=2) as (port, endpoint):
        with trio.fail_after(20):
            sessions = [await initialize(port, CLIENT) for _ in range(2)]
            for stream, reader, session_id in sessions:
                assert (await open_get(stream, reader, session_id))[0] == 200
            stream, reader = await connect(port, ATTACKER)
            await stream.send_all(post(INIT))
            status, headers, body = await reader.response()
            assert status == 503 and headers["retry-after"] and b"stream open" in body
            await sessions[0][0].aclose()  # its GET stream ends
            while endpoint.sessions[sessions[0][2]].busy():
                await trio.sleep(0.01)
            await stream.send_all(post(INIT))
            assert (await reader.response())[0] == 200
            assert sessions[0][2] not in endpoint.sessions and sessions[1][2] in endpoint.sessions
            await stream.aclose()
            await sessions[1][0].aclose()


async def legacy_stream(port: int, source: str) -> tuple[trio.SocketStream, Reader, int, dict[str, str]]:
    stream, reader = await connect(port, source)
    await stream.send_all(b"GET /sse HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n")
    status, headers, _ = await reader.response_head()
    return stream, reader, status, headers


@pytest.mark.parametrize("front_door", DOORS)
async def test_legacy_sse_streams_share_the_bounds(front_door: str) -> None:
    """HTTP+SSE streams count against the same per-address and per-process
    bounds as GET streams, and one that sends nothing for
    ``stream_idle_timeout`` ends (its session with it)."""
    server = Server("legacy-bounds", "1")
    options = {"max_streams_total": 2, "max_streams_per_client": 1, "stream_idle_timeout": 0.5}
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, front_door=front_door, legacy_sse=True, **options)
        urls = await nursery.start(serve)
        port = int(urls[0].rsplit(":", 1)[1].split("/")[0])
        with trio.fail_after(10):
            first, first_reader, status, _ = await legacy_stream(port, ATTACKER)
            assert status == 200
            started = trio.current_time()
            second = await legacy_stream(port, ATTACKER)
            assert second[2] == 429 and second[3]["retry-after"] == "5"
            stream, reader, session_id = await initialize(port, CLIENT)
            assert (await open_get(stream, reader, session_id))[0] == 200  # the second of two
            third = await legacy_stream(port, "127.0.0.4")
            assert third[2] == 503
            endpoint_event = await first_reader.chunk()
            assert endpoint_event.startswith(b"event: endpoint")
            assert await until_end(first_reader) == b""  # idle: the stream (and its session) ended
            assert trio.current_time() - started >= 0.4
            for s in (first, second[0], third[0], stream):
                await s.aclose()
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
async def test_our_client_keeps_its_get_stream_through_idle_ends(version: str) -> None:
    """The library's client reconnects after each idle end (with Last-Event-ID
    from 2025-11-25, a plain GET before): a notification sent after several
    of them still arrives."""
    from mcp_trio.client import connect_http

    server, _ = make_server()
    changed = trio.Event()

    async def on_list_changed(method: str) -> None:
        changed.set()

    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, stream_idle_timeout=0.1, retry_ms=10)
        urls = await nursery.start(serve)
        with trio.fail_after(10):
            async with connect_http(urls[0], versions=[version], on_list_changed=on_list_changed) as client:
                await trio.sleep(0.5)  # several idle ends and reconnections

                @server.tool
                async def added() -> str:
                    return "new"

                await changed.wait()
                assert (await client.call_tool("added", {})).content[0].text == "new"
        nursery.cancel_scope.cancel()


class Recorder:
    """An in-memory Responder; ``end()`` waits for ``release`` when one is given."""

    def __init__(self, release: trio.Event | None = None) -> None:
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.release = release
        self.ending = trio.Event()

    async def start(self, status: int, headers: Any) -> None:
        self.status, self.headers = status, dict(headers)

    async def send(self, data: bytes) -> None:
        self.body += data

    async def end(self) -> None:
        self.ending.set()
        if self.release is not None:
            await self.release.wait()


async def test_a_message_racing_an_idle_end_goes_out_on_the_next_get() -> None:
    """A message sent while an idle GET stream is ending (its retry hint and end
    are being written) is not lost for a client with no event id to resume
    from (2025-03-26: no priming event): the next plain GET sends it."""
    server, _ = make_server()
    endpoint = StreamableHTTP(server.serve_session, stream_idle_timeout=0.1)
    base = {
        "host": "127.0.0.1",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
    }
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": "2025-03-26"}}  # type: ignore[dict-item]
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        with trio.fail_after(10):
            answer = Recorder()
            await endpoint.handle(HttpRequest("POST", base, msgspec.json.encode(init), "/mcp"), answer)
            headers = {
                **base,
                "mcp-session-id": answer.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-03-26",
            }
            await endpoint.handle(
                HttpRequest("POST", headers, msgspec.json.encode(INITIALIZED), "/mcp"), Recorder()
            )
            release = trio.Event()
            first = Recorder(release)
            nursery.start_soon(endpoint.handle, HttpRequest("GET", headers, b"", "/mcp"), first)
            await first.ending.wait()  # idle: the retry hint is out, the end is being written

            @server.tool
            async def added() -> str:  # notifications/tools/list_changed, for the GET stream
                return "new"

            await trio.sleep(0.05)
            release.set()
            await trio.sleep(0.05)
            second = Recorder()
            await endpoint.handle(HttpRequest("GET", headers, b"", "/mcp"), second)  # ends idle in turn
        assert first.body == b"retry: 1000\n\n"
        assert b"notifications/tools/list_changed" in second.body
        nursery.cancel_scope.cancel()
