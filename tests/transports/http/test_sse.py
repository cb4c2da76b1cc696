"""The sans-IO SSE encoder and decoder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_trio.transports.http._sse import (
    SSEDecoder,
    SSEError,
    SSEEvent,
    encode_comment,
    encode_event,
)


def decode_all(data: bytes, cuts: list[int] | None = None) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    points = sorted(set(cuts or [])) + [len(data)]
    start = 0
    for point in points:
        events += decoder.feed(data[start:point])
        start = point
    return events


def test_basic_event_fields() -> None:
    raw = encode_event(b'{"a":1}', id="7", event="message", retry=500)
    assert raw == b'event: message\nid: 7\nretry: 500\ndata: {"a":1}\n\n'
    (event,) = decode_all(raw)
    assert event == SSEEvent(b'{"a":1}', "message", "7", 500)


def test_line_endings_comments_and_bom() -> None:
    raw = b"\xef\xbb\xbf: hello\r\nid: 1\rdata: a\r\ndata: b\n\n:\n\nevent: x\ndata: c\r\n\r\n"
    events = decode_all(raw)
    assert events == [SSEEvent(b"a\nb", "message", "1"), SSEEvent(b"c", "x", "1")]


def test_priming_event_sets_the_id_without_dispatching() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"id: 0-1\ndata:\n\n") == []
    assert decoder.last_event_id == "0-1" and decoder.primed
    assert decoder.feed(b"data: x\n\n") == [SSEEvent(b"x", "message", "0-1")]


def test_invalid_fields_are_ignored() -> None:
    events = decode_all(b"id: a\0b\nretry: 1x\nbogus: 1\ndata: ok\n\n")
    assert events == [SSEEvent(b"ok", "message", None, None)]


def test_comment_encoding() -> None:
    assert decode_all(encode_comment("keepalive") + encode_comment()) == []
    with pytest.raises(ValueError):
        encode_comment("a\nb")
    with pytest.raises(ValueError):
        encode_event(b"x", id="a\nb")


def test_limits() -> None:
    decoder = SSEDecoder(max_event_size=10)
    with pytest.raises(SSEError):
        decoder.feed(b"data: " + b"x" * 20)
    decoder = SSEDecoder(max_event_size=10)
    with pytest.raises(SSEError):
        decoder.feed(b"data: 123456\ndata: 123456\n")


texts = st.binary(max_size=200).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b" ") or b"x")


@given(
    st.lists(
        st.tuples(texts, st.one_of(st.none(), st.from_regex(r"[A-Za-z0-9-]{1,12}", fullmatch=True))),
        max_size=8,
    ),
    st.lists(st.integers(min_value=0, max_value=3000), max_size=20),
    st.sampled_from([b"\n", b"\r\n", b"\r"]),
)
def test_roundtrip_any_chunking(items: list[tuple[bytes, str | None]], cuts: list[int], eol: bytes) -> None:
    raw = b"".join(encode_event(data, id=id) for data, id in items).replace(b"\n", eol)
    events = decode_all(raw, cuts)
    assert [e.data for e in events] == [data for data, _ in items]
    last = None
    for event, (_, id) in zip(events, items, strict=True):
        last = id if id is not None else last
        assert event.id == last
