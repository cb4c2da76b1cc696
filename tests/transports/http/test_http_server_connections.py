"""How both front doors treat a connection at its edges, over real sockets:
a request whose framing is ambiguous (request smuggling), an error answer to
a client still sending its body (lingering close), and a client that closed
its side for writing after its request (half-close)."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import msgspec
import pytest
import trio

from mcp_trio.server import Server
from tests._support.doors import DOORS, LEAN_DOORS, is_lean
from tests._support.http_lean import VERSION, call, make_server, open_session, post, serving

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}


async def read_to_eof(stream: trio.SocketStream) -> tuple[bytes, bool]:
    """Everything the server sends, and whether it closed the connection
    (False: it was still open after 3 s)."""
    received = b""
    with trio.move_on_after(3):
        while data := await stream.receive_some(65536):
            received += data
        return received, True
    return received, False


def final_responses(raw: bytes) -> list[tuple[int, bytes]]:
    """The (status, body) of each final response in ``raw`` (interim 1xx
    answers skipped, as every HTTP/1.1 client does); bodies with a
    Content-Length only."""
    found = []
    while raw:
        head, _, raw = raw.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        status = int(lines[0].split()[1])
        if status < 200:
            continue
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(b":") for line in lines[1:])}
        length = int(headers[b"content-length"])
        found.append((status, raw[:length]))
        raw = raw[length:]
    return found


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_request_with_both_lengths_is_refused_and_its_connection_closed(front_door: str) -> None:
    """Content-Length and Transfer-Encoding together (RFC 9112 section 6.1):
    the server refuses it and closes, so what follows its body (here a second
    request, as a front proxy reading Content-Length would forward it) is
    never served."""
    server, _ = make_server()
    body = msgspec.json.encode(INIT)
    smuggled = post(INIT).replace(b'"id":0', b'"id":7')
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = post(b"").replace(
        b"content-length: 0", b"content-length: %d\r\ntransfer-encoding: chunked" % len(chunked)
    )
    async with serving(front_door, server) as (port, _):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(head + chunked + smuggled)
            raw, closed = await read_to_eof(stream)
    assert b'"id":7' not in raw and raw.count(b"HTTP/1.1 ") <= 1
    assert closed, "the connection was kept open"
    if is_lean(front_door):
        ((status, answer),) = final_responses(raw)
        assert status == 400 and b"Content-Length and Transfer-Encoding" in answer
    else:  # hypercorn closes as soon as it parses bytes after such a request: the 400 may be cut short
        assert raw == b"" or raw.startswith(b"HTTP/1.1 400 ")


def post_too_much(port: int, chunked: bool) -> list[int | str]:
    """What ``http.client`` gets for bodies over the server's limit (1,000
    bytes), each sent whole before the answer is read; five times."""
    body = b"x" * 4_000_000
    got: list[int | str] = []
    for _ in range(5):
        client = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}

        def pieces() -> Iterator[bytes]:
            for start in range(0, len(body), 65536):
                yield body[start : start + 65536]

        try:
            if chunked:
                client.request("POST", "/mcp", body=pieces(), headers=headers, encode_chunked=True)
            else:
                client.request("POST", "/mcp", body=body, headers=headers)
            got.append(client.getresponse().status)
        except OSError as exc:
            got.append(repr(exc))
        finally:
            client.close()
    return got


@pytest.mark.parametrize("chunked", [False, True], ids=["declared", "chunked"])
@pytest.mark.parametrize("front_door", DOORS)
async def test_a_client_sending_a_body_over_the_limit_reads_its_413(front_door: str, chunked: bool) -> None:
    """The 413 goes out before the body is read (declared too large) or while
    it is (chunked); the server then reads and drops the rest before it
    closes, so the client reads the 413 instead of a connection reset."""
    server, _ = make_server()
    async with serving(front_door, server, max_body_size=1000) as (port, _):
        with trio.fail_after(30):
            got = await trio.to_thread.run_sync(post_too_much, port, chunked)
    assert got == [413] * 5


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_the_lingering_close_after_an_error_answer_is_bounded(door: str) -> None:
    """A client that never sends the body it announced, nor closes, holds its
    connection for at most the lingering time after its 413."""
    server, _ = make_server()
    async with serving(door, server, h11_options={"max_connections": 1}, max_body_size=1000) as (port, _):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            await stream.send_all(post(b"").replace(b"content-length: 0", b"content-length: 100000000"))
            raw, closed = await read_to_eof(stream)  # the server shut its side: EOF at once
            assert closed and final_responses(raw)[0][0] == 413
            with trio.fail_after(5):  # the one connection slot frees within the lingering time
                other = await trio.open_tcp_stream("127.0.0.1", port)
                async with other:
                    await other.send_all(post(INIT))
                    await other.send_eof()
                    raw, _ = await read_to_eof(other)
    assert final_responses(raw)[0][0] == 200


async def half_closed_exchange(port: int, request: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(request)
        await stream.send_eof()  # shutdown(SHUT_WR): the request is all there is
        raw, closed = await read_to_eof(stream)
    assert closed
    return raw


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_half_closed_client_gets_its_answer(front_door: str) -> None:
    """A client that closes its side for writing after a whole request still
    reads: it is answered (the EOF arriving at once, or while the answer is
    worked on), and the connection then closes."""
    server, _ = make_server()
    async with serving(front_door, server) as (port, _):
        with trio.fail_after(10):
            for _ in range(3):
                ((status, body),) = final_responses(await half_closed_exchange(port, post(INIT)))
                assert status == 200 and msgspec.json.decode(body)["result"]["protocolVersion"] == VERSION
            stream, _, session_id = await open_session(port)
            await stream.aclose()
            # The EOF comes well before the answer (a slow tool).
            raw = await half_closed_exchange(port, post(call(1, "slow", seconds=0.3), session_id))
    ((status, body),) = final_responses(raw)
    assert status == 200 and msgspec.json.decode(body)["result"]["content"][0]["text"] == "slept"


STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def stateless_call(name: str) -> bytes:
    """A raw 2026-07-28 ``tools/call`` of tool ``name`` (no arguments)."""
    body = call(1, name)
    body["params"]["_meta"] = STATELESS_META
    modern = b"mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: " + name.encode()
    return post(body).replace(b"mcp-protocol-version: " + VERSION.encode(), modern, 1)


def lingering_tool(server: Server) -> dict[str, trio.Event]:
    """Adds tool ``lingering`` (2 s) to ``server``: the events it sets."""
    events = {"started": trio.Event(), "cancelled": trio.Event(), "finished": trio.Event()}

    @server.tool
    async def lingering() -> str:
        events["started"].set()
        try:
            await trio.sleep(2)
        except trio.Cancelled:
            events["cancelled"].set()
            raise
        events["finished"].set()
        return "done"

    return events


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
@pytest.mark.parametrize("front_door", DOORS)
async def test_a_client_that_leaves_cancels_its_request_only_from_2026_07_28(
    front_door: str, version: str
) -> None:
    """In 2026-07-28 closing the response stream is how a client cancels its
    request: its handler is cancelled at once.  Before, a disconnect is no
    cancellation: the request runs to its end."""
    server, _ = make_server()
    events = lingering_tool(server)
    async with serving(front_door, server) as (port, _):
        with trio.fail_after(10):
            if version == VERSION:
                opened, _, session_id = await open_session(port)
                await opened.aclose()
                request = post(call(1, "lingering"), session_id)
            else:
                request = stateless_call("lingering")
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(request)
            await events["started"].wait()
            await stream.aclose()  # the client leaves, its response unread
        if version == VERSION:
            with trio.fail_after(5):
                await events["finished"].wait()
            assert not events["cancelled"].is_set()
        else:
            with trio.fail_after(1.5):  # well before the tool would end
                await events["cancelled"].wait()
            assert not events["finished"].is_set()


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_half_closed_2026_07_28_client(front_door: str) -> None:
    """A 2026-07-28 client that half-closes after its request: the h11 door
    tells that from leaving (the client still reads) and answers it; hypercorn
    reports it to the application as ``http.disconnect``, the same as leaving,
    so on that door it is a cancellation (documented in docs/http.md)."""
    server, _ = make_server()
    events = lingering_tool(server)
    async with serving(front_door, server) as (port, _):
        with trio.fail_after(10):
            raw = await half_closed_exchange(port, stateless_call("lingering"))
    if is_lean(front_door):
        ((status, body),) = final_responses(raw)
        assert status == 200 and msgspec.json.decode(body)["result"]["content"][0]["text"] == "done"
    else:
        assert raw == b"" and events["cancelled"].is_set() and not events["finished"].is_set()
