"""The httptools door's parser connection against h11's: the same bytes in, the same events,
states, errors and response bytes out (``_llhttp.LlhttpConnection`` stands in for
``h11.Connection`` in the lean door)."""

from __future__ import annotations

from typing import Any

import h11
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_trio.transports.http.doors._httptools import LlhttpConnection

HEAD_LIMIT = 1000
SIMPLE = b"GET /mcp HTTP/1.1\r\nHost: a\r\n\r\n"
POST = b"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
POST += b'Content-Length: 7\r\n\r\n{"a":1}'
CHUNKED_HEAD = b"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
CHUNKED = CHUNKED_HEAD + b"\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
EOF = b""  # (marks the client's end of file in a corpus entry)

CORPUS: dict[str, list[bytes]] = {
    "a request": [SIMPLE],
    "a body": [POST],
    "a chunked body": [CHUNKED],
    "three pipelined": [SIMPLE + POST + CHUNKED],
    "HTTP/1.0": [b"GET / HTTP/1.0\r\n\r\n"],
    "HTTP/1.0 with a body": [b"POST / HTTP/1.0\r\nContent-Length: 2\r\n\r\nhi"],
    "Connection: close": [b"GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, close\r\n\r\n" + SIMPLE],
    "both lengths": [CHUNKED_HEAD + b"Content-Length: 3\r\n\r\n0\r\n\r\n"],
    "no Host": [b"GET / HTTP/1.1\r\n\r\n"],
    "two Hosts": [b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
    "gzip transfer coding": [b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"],
    "not HTTP": [b"NOT HTTP AT ALL\r\n\r\n"],
    "a space in a header name": [b"GET / HTTP/1.1\r\nHost: a\r\nBad Name: x\r\n\r\n"],
    "a bad content length": [b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: x\r\n\r\n"],
    "the end mid-body": [b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc", EOF],
    "the end mid-head": [b"GET / HTTP/1.1\r\nHo", EOF],
    "the end between requests": [SIMPLE, EOF],
    "the end first": [EOF],
    "an absolute target": [b"GET http://a/mcp?q HTTP/1.1\r\nHost: a\r\n\r\n"],
    "HTTP/1.0 asking to keep alive": [b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"],
    "whitespace around a value": [b"GET / HTTP/1.1\r\nHost: a\r\nMcp-Name: x \t\r\nX-E:  \r\n\r\n"],
    "trailers": [CHUNKED_HEAD + b"\r\n1\r\na\r\n0\r\nX-T: 1\r\n\r\n"],
    "HTTP/2 in the request line": [b"GET / HTTP/2.0\r\nHost: a\r\n\r\n"],
    "an upgrade": [b"GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"],
}


def drive(conn: Any, pieces: list[bytes]) -> list[Any]:
    """Feed ``pieces`` to ``conn`` as the lean door does, answering each whole request with a
    fixed-length 200 (and, for a chunked one, a streamed answer): what happened, in order."""
    seen: list[Any] = []
    body = b""
    for piece in pieces:
        conn.receive_data(piece)
        while True:
            try:
                event = conn.next_event()
            except h11.RemoteProtocolError as exc:
                seen.append(("error", exc.error_status_hint, conn.their_state))
                return seen
            if event is h11.NEED_DATA or event is h11.PAUSED:
                seen.append(event.__name__)
                break
            if type(event) is h11.Request:
                head = (event.method, event.target, event.headers.raw_items(), event.http_version)
                seen.append(("request", *head))
                streamed = any(name.lower() == b"transfer-encoding" for name, _ in event.headers.raw_items())
            elif type(event) is h11.Data:
                body += event.data
            elif type(event) is h11.EndOfMessage:
                seen.append(("body", body))
                body = b""
                headers = [("content-type", "text/plain")] + ([] if streamed else [("content-length", "2")])
                out = [conn.send(h11.Response(status_code=200, headers=headers))]
                out += conn.send_with_data_passthrough(h11.Data(data=b"ok"))
                out.append(conn.send(h11.EndOfMessage()))
                seen.append(("answer", b"".join(out), conn.our_state, conn.their_state))
                if conn.our_state is h11.DONE and conn.their_state is h11.DONE:
                    conn.start_next_cycle()
                    seen.append("next cycle")
            else:
                seen.append(type(event).__name__)
                return seen
    return seen


def both(pieces: list[bytes]) -> tuple[list[Any], list[Any]]:
    expected = drive(h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_LIMIT), pieces)
    return expected, drive(LlhttpConnection(HEAD_LIMIT), pieces)


def bytewise(pieces: list[bytes]) -> list[bytes]:
    return [data[i : i + 1] for data in pieces for i in range(len(data))] + [p for p in pieces if p == EOF]


def without_markers(seen: list[Any]) -> list[Any]:
    """What happened, without where the parser asked for more (that depends on how much it
    takes at once: h11 a request at a time, llhttp all it is given)."""
    return [event for event in seen if event not in ("NEED_DATA", "PAUSED")]


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_same_events_states_and_answers_as_h11(name: str) -> None:
    expected, got = both(CORPUS[name])
    assert without_markers(got) == without_markers(expected)
    expected, got = both(bytewise(CORPUS[name]))  # (a byte at a time)
    assert without_markers(got) == without_markers(expected)


@pytest.mark.parametrize(
    "request_",
    [
        b"FOO /mcp HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n",
        b"GET / HTTP/1.1\nHost: a\n\n",
    ],
    ids=["a method llhttp does not know", "a folded header line", "lines ended by a bare LF"],
)
def test_where_llhttp_is_stricter_than_h11_the_request_gets_400(request_: bytes) -> None:
    """(Documented in docs/http.md: h11 takes them; RFC 9112 lets a server refuse a folded line
    and take only CRLF as a line's end.)"""
    expected, got = both([request_])
    assert expected[0][0] == "request"
    assert got == [("error", 400, h11.ERROR)]


def test_a_head_that_never_ends_is_refused_past_the_limit() -> None:
    endless = [b"GET / HTTP/1.1\r\nHost: a\r\nX-Long: "] + [b"a" * 100] * 30
    conns = (h11.Connection(h11.SERVER, max_incomplete_event_size=HEAD_LIMIT), LlhttpConnection(HEAD_LIMIT))
    for conn in conns:
        fed = 0
        with pytest.raises(h11.RemoteProtocolError) as refused:  # noqa: PT012
            for piece in endless:
                conn.receive_data(piece)
                fed += len(piece)
                assert conn.next_event() is h11.NEED_DATA
        assert refused.value.error_status_hint == 431
        assert fed <= 2 * HEAD_LIMIT + 100  # (refused within twice the limit: memory stays bounded)


@given(cuts=st.lists(st.integers(min_value=0, max_value=len(SIMPLE + POST + CHUNKED)), max_size=8))
@settings(max_examples=150, deadline=None)
def test_any_split_of_pipelined_requests_gives_h11_s_events(cuts: list[int]) -> None:
    data = SIMPLE + POST + CHUNKED
    points = sorted({0, len(data), *cuts})
    pieces = [data[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]
    expected, got = both(pieces)
    assert without_markers(got) == without_markers(expected)


ANSWERS: dict[str, tuple[bytes, int, list[tuple[str, str]], list[bytes]]] = {
    "a sized answer": (SIMPLE, 200, [("content-type", "application/json"), ("content-length", "2")], [b"{}"]),
    "a stream to HTTP/1.1": (SIMPLE, 200, [("content-type", "text/event-stream")], [b"data: 1\n\n", b"x"]),
    "a stream to HTTP/1.0": (b"GET / HTTP/1.0\r\n\r\n", 200, [("content-type", "text/event-stream")], [b"a"]),
    "a stream to an HTTP/2.0 request line": (
        b"GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        200,
        [("content-type", "text/event-stream")],
        [b"a"],
    ),
    "a HEAD answer": (b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", 200, [("content-length", "5")], []),
    "a HEAD answer of unknown length": (b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n", 200, [], []),
    "204": (SIMPLE, 204, [("mcp-session-id", "x")], []),
    "202 without a body": (POST, 202, [("content-length", "0")], []),
    "to a client that closes": (
        b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        200,
        [("content-length", "1")],
        [b"a"],
    ),
    "an answer that closes": (SIMPLE, 400, [("content-length", "1"), ("connection", "close")], [b"a"]),
}


@pytest.mark.parametrize("name", list(ANSWERS))
def test_answers_are_framed_as_h11_frames_them(name: str) -> None:
    request, status, headers, parts = ANSWERS[name]
    results = []
    for conn in (h11.Connection(h11.SERVER), LlhttpConnection(HEAD_LIMIT)):
        conn.receive_data(request)
        while conn.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
        out = [conn.send(h11.Response(status_code=status, headers=headers))]
        for part in parts:
            out += conn.send_with_data_passthrough(h11.Data(data=part))
        out.append(conn.send(h11.EndOfMessage()))
        results.append((b"".join(out), conn.our_state, conn.their_state))
    assert results[1] == results[0]


def test_an_interim_continue_then_the_answer() -> None:
    request = b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"
    results = []
    for conn in (h11.Connection(h11.SERVER), LlhttpConnection(HEAD_LIMIT)):
        conn.receive_data(request)
        assert type(conn.next_event()) is h11.Request
        interim = conn.send(h11.InformationalResponse(status_code=100, headers=[], reason=b"Continue"))
        conn.receive_data(b"hi")
        assert conn.next_event() == h11.Data(data=b"hi")
        assert type(conn.next_event()) is h11.EndOfMessage
        results.append((interim, conn.send(h11.Response(status_code=200, headers=[("content-length", "0")]))))
    assert results[1] == results[0]


def test_what_h11_refuses_to_send_is_refused() -> None:
    for conn in (h11.Connection(h11.SERVER), LlhttpConnection(HEAD_LIMIT)):
        conn.receive_data(SIMPLE)
        assert type(conn.next_event()) is h11.Request
        conn.send(h11.Response(status_code=200, headers=[("content-length", "2")]))
        with pytest.raises(h11.LocalProtocolError):
            conn.send(h11.Data(data=b"too long"))
        assert conn.our_state is h11.ERROR
        with pytest.raises(h11.LocalProtocolError):
            conn.start_next_cycle()
