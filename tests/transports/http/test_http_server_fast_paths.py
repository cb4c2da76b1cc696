"""The Streamable HTTP server's quick paths, at their edges: whole responses in
one write, plain JSON answers that skip the event store, and the h11 front
door's connection reader (pipelining, clients that leave, clients that stop
reading), all over real sockets."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcp_trio.transports.http._sse import SSEDecoder
from mcp_trio.transports.http.server import (
    ASGIApp,
    InMemoryEventStore,
)
from tests._support.doors import DOORS, LEAN_DOORS
from tests._support.http_lean import Reader, call, make_server, open_session, post, serving


def text_of(body: bytes) -> str:
    return str(msgspec.json.decode(body)["result"]["content"][0]["text"])


@pytest.mark.parametrize("front_door", DOORS)
async def test_plain_json_answers_store_no_events_but_streams_still_resume(front_door: str) -> None:
    server, _ = make_server()
    store = InMemoryEventStore()
    async with serving(front_door, server, event_store=store) as (port, _):
        stream, reader, session_id = await open_session(port)
        async with stream:
            with trio.fail_after(10):
                for i in range(1, 6):
                    await stream.send_all(post(call(i, "echo", text=f"t{i}"), session_id))
                    status, headers, body = await reader.response()
                    assert status == 200 and headers["content-type"] == "application/json"
                    assert msgspec.json.decode(body)["id"] == i and text_of(body) == f"t{i}"
                assert len(store) == 0  # nothing to resume in a JSON body: nothing kept
                # An answer with progress before it is an SSE stream: primed, stored, resumable.
                message = call(9, "steps", n=2)
                message["params"]["_meta"] = {"progressToken": "p"}
                await stream.send_all(post(message, session_id))
                status, headers, _ = await reader.response()
                assert status == 200 and headers["content-type"] == "text/event-stream"
                raw = b""
                while data := await reader.chunk():
                    raw += data
        got = [msgspec.json.decode(e.data) for e in SSEDecoder().feed(raw)]
        assert got[-1]["id"] == 9 and got[-1]["result"]["content"][0]["text"] == "2 steps"
        first_event = raw.split(b"\n\n")[0].decode()
        assert first_event.startswith("id: ") and first_event.endswith("data: ")  # the priming event
        prime_id = first_event.split("\n")[0].removeprefix("id: ")
        replay = await store.replay_after(session_id, prime_id)
        assert replay is not None
        assert [msgspec.json.decode(data).get("method") for _, data in replay[1]] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_pipelined_requests_are_answered_in_order_on_one_connection(door: str) -> None:
    server, _ = make_server()
    async with serving(door, server) as (port, _):
        stream, reader, session_id = await open_session(port)
        async with stream:
            with trio.fail_after(10):
                # Three requests in one write; the first answers last if run concurrently.
                await stream.send_all(
                    post(call(1, "slow", seconds=0.2), session_id)
                    + post(call(2, "echo", text="two"), session_id)
                    + post(call(3, "big", size=100_000), session_id)
                )
                answers = [await reader.response() for _ in range(3)]
        assert [msgspec.json.decode(body)["id"] for _, _, body in answers] == [1, 2, 3]
        assert [text_of(body)[:5] for _, _, body in answers] == ["slept", "two", "xxxxx"]
        assert len(text_of(answers[2][2])) == 100_000


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_a_client_leaving_mid_answer_frees_its_connection_and_the_call_goes_on(door: str) -> None:
    server, state = make_server()
    # One connection at a time: a second client is served only once the first one's slot is free.
    async with serving(door, server, h11_options={"max_connections": 1}) as (port, endpoint):
        stream, reader, session_id = await open_session(port)
        await stream.send_all(post(call(1, "gated"), session_id))
        with trio.fail_after(5):
            await state["started"].wait()
        await stream.aclose()  # gone before the answer
        with trio.fail_after(5):
            other, other_reader, other_id = await open_session(port)
            async with other:
                await other.send_all(post(call(2, "echo", text="still here"), other_id))
                _, _, body = await other_reader.response()
                assert text_of(body) == "still here"
                assert not state["finished"].is_set()
                state["release"].set()  # the first call was not cancelled: it finishes
                await state["finished"].wait()
        assert endpoint.sessions[session_id].by_request == {}  # its stream is gone once answered


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_a_client_that_stops_reading_is_dropped_after_the_write_timeout(door: str) -> None:
    server, _ = make_server()
    options = {"max_connections": 1, "write_timeout": 0.3}
    async with serving(door, server, h11_options=options) as (port, _):
        stream, _, session_id = await open_session(port)
        async with stream:
            # An answer far larger than the socket buffers, never read.
            await stream.send_all(post(call(1, "big", size=30_000_000), session_id))
            with trio.fail_after(10):
                other, other_reader, other_id = await open_session(port)
                async with other:
                    await other.send_all(post(call(2, "echo", text="served"), other_id))
                    _, _, body = await other_reader.response()
        assert text_of(body) == "served"


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_an_open_post_keeps_its_session_past_the_idle_timeout(door: str) -> None:
    server, _ = make_server()
    async with serving(door, server, idle_timeout=0.3) as (port, endpoint):
        stream, reader, session_id = await open_session(port)
        async with stream:
            with trio.fail_after(10):
                await stream.send_all(post(call(1, "slow", seconds=0.8), session_id))
                status, _, body = await reader.response()
                assert status == 200 and text_of(body) == "slept"
                while session_id in endpoint.sessions:  # idle now: it expires
                    await trio.sleep(0.05)


@pytest.mark.parametrize("front_door", DOORS)
async def test_fixed_length_answers_end_with_their_body_and_keep_the_connection(front_door: str) -> None:
    server, _ = make_server()
    async with serving(front_door, server) as (port, _):
        stream, reader, session_id = await open_session(port)
        async with stream:
            with trio.fail_after(10):
                for i, size in enumerate([0, 1, 70_000, 3]):
                    await stream.send_all(post(call(i + 1, "big", size=size), session_id))
                    status, headers, body = await reader.response()
                    assert status == 200 and int(headers["content-length"]) == len(body)
                    assert text_of(body) == "x" * size
                # Refusals are whole responses too, and the connection stays usable.
                await stream.send_all(post(b"{not json", session_id))
                status, headers, body = await reader.response()
                assert status == 400 and msgspec.json.decode(body)["error"]["code"] == -32700
                await stream.send_all(post(call(9, "echo", text="after"), session_id))
                assert text_of((await reader.response())[2]) == "after"


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_head_requests_get_heads_only_and_the_connection_goes_on(door: str) -> None:
    server, _ = make_server()
    async with serving(door, server) as (port, _):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            head = b" HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
            await stream.send_all(b"HEAD /other" + head + b"HEAD /mcp" + head + b"GET /other" + head)
            reader = Reader(stream)
            with trio.fail_after(5):
                status, headers, _ = await reader.response_head()
                assert status == 404 and headers["content-length"] == "9"  # the body it would have
                status, headers, _ = await reader.response_head()
                assert status == 405 and headers["allow"] == "GET, POST, DELETE"
                assert await reader.response() == (
                    404,
                    {"content-type": "text/plain", "content-length": "9"},
                    b"Not Found",
                )


async def sse_body(reader: Reader) -> bytes:
    raw = b""
    while data := await reader.chunk():
        raw += data
    return raw


@pytest.mark.parametrize("front_door", DOORS)
async def test_an_answer_after_an_early_closed_stream_is_kept_for_the_resuming_client(
    front_door: str,
) -> None:
    """The stream ended before any message (SSE polling): the answer that comes
    later is no plain JSON answer, it is stored and replayed on GET."""
    server, state = make_server()
    async with serving(front_door, server, retry_ms=100) as (port, endpoint):
        stream, reader, session_id = await open_session(port)
        async with stream:
            with trio.fail_after(10):
                await stream.send_all(post(call(1, "quiet_poll"), session_id))
                status, headers, _ = await reader.response()
                assert status == 200 and headers["content-type"] == "text/event-stream"
                raw = await sse_body(reader)
                assert state["closed"] is True and raw.endswith(b"retry: 100\n\n")
                prime_id = raw.split(b"\n")[0].removeprefix(b"id: ")
                state["release"].set()
                while endpoint.sessions[session_id].by_request:  # answered while no one listens
                    await trio.sleep(0.01)
                get = post(b"", session_id).replace(b"POST ", b"GET ", 1)
                get = get.replace(
                    b"accept: application/json, text/event-stream", b"accept: text/event-stream"
                )
                await stream.send_all(
                    get.replace(b"\r\n\r\n", b"\r\nlast-event-id: " + prime_id + b"\r\n\r\n", 1)
                )
                status, _, _ = await reader.response()
                assert status == 200
                events = [msgspec.json.decode(e.data) for e in SSEDecoder().feed(await sse_body(reader))]
        assert [(m["id"], m["result"]["content"][0]["text"]) for m in events] == [(1, "polled")]


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_more_pipelined_bytes_than_the_read_ahead_are_all_answered(door: str) -> None:
    """The connection's reader stops 64 KiB ahead of the parser while an answer
    is worked on, and resumes once the parser needs more: nothing is lost."""
    server, _ = make_server()
    async with serving(door, server) as (port, _):
        stream, reader, session_id = await open_session(port)
        async with stream:
            burst = post(call(1, "slow", seconds=0.2), session_id)
            texts = [f"{i:03d}" + "y" * 20_000 for i in range(2, 14)]  # about 240 KB behind the slow one
            burst += b"".join(post(call(i, "echo", text=t), session_id) for i, t in enumerate(texts, 2))

            async def send_burst() -> None:
                await stream.send_all(burst)

            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(send_burst)  # it blocks until the server reads on
                    answers = [await reader.response() for _ in range(len(texts) + 1)]
        assert [msgspec.json.decode(body)["id"] for _, _, body in answers] == list(range(1, len(texts) + 2))
        assert [text_of(body) for _, _, body in answers[1:]] == texts


@pytest.mark.parametrize(
    ("body", "watched"),
    [
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"text":"a\\"b"}}', False),
        (b'{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}', True),
        # the same method name spelt with JSON escapes: still a listen
        (b'{"jsonrpc":"2.0","id":1,"method":"subscriptions\\/listen","params":{}}', True),
        (b'[{"jsonrpc":"2.0","id":1,"method":"\\u0073ubscriptions/listen"}]', True),
        (b'{"not json\\', False),
    ],
)
async def test_the_asgi_door_watches_for_departure_only_where_a_response_may_stay_open(
    body: bytes, watched: bool
) -> None:
    """A POST's response ends with its answer, so only a subscriptions/listen
    (however its method is spelt) gets the task that notices the client leaving."""

    class Lingering:
        max_body_size = 1 << 20

        async def handle(self, request: Any, responder: Any) -> None:
            await trio.sleep_forever()  # a response that stays open

    messages = [
        {"type": "http.request", "body": body, "more_body": False},
        {"type": "http.disconnect"},
    ]

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop(0)
        await trio.sleep_forever()
        raise AssertionError

    async def send(message: dict[str, Any]) -> None:
        raise AssertionError("nothing is sent")

    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": [], "query_string": b""}
    with trio.move_on_after(0.2) as waited:
        await ASGIApp(Lingering())(scope, receive, send)  # type: ignore[arg-type]
    # watched: the departure ended the response at once; unwatched: it stays
    # until its next write (here: never), and the disconnect was not read
    assert waited.cancelled_caught is not watched
    assert (messages == []) is watched
