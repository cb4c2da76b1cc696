"""The HTTP ceiling with a parser in C: a bare loop over trio sockets and ``httptools`` (the
llhttp binding uvicorn uses), answering as ``_trivial.py``.

One task per connection, keep-alive, no timeouts or limits, like ``trivial_h11.py``; only the
parsing and the answer's head differ.  It tells what an HTTP/1.1 front door on trio could reach
with a C parser instead of h11.

Run with ``python benchmarks/peers/trivial_httptools.py http PORT``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import httptools  # noqa: E402
import trio  # noqa: E402
from _trivial import answer, serve_http  # noqa: E402

_REASONS = {200: b"OK", 202: b"Accepted", 400: b"Bad Request"}


class _Requests:
    """The parser's callbacks: whole request bodies, in order."""

    def __init__(self) -> None:
        self.body = bytearray()
        self.done: list[bytes] = []

    def on_body(self, data: bytes) -> None:
        self.body += data

    def on_message_complete(self) -> None:
        self.done.append(bytes(self.body))
        self.body.clear()


def _response(status: int, headers: list[tuple[bytes, bytes]], data: bytes) -> bytes:
    head = [b"HTTP/1.1 %d %s\r\n" % (status, _REASONS.get(status, b""))]
    head.extend(b"%s: %s\r\n" % pair for pair in headers)
    head.append(b"content-length: %d\r\n\r\n" % len(data))
    return b"".join(head) + data


async def connection(stream: trio.SocketStream) -> None:
    requests = _Requests()
    parser = httptools.HttpRequestParser(requests)
    try:
        while True:
            data = await stream.receive_some(65536)
            if not data:
                return
            parser.feed_data(data)
            if requests.done:
                out = b"".join(_response(*answer(body)) for body in requests.done)
                requests.done.clear()
                await stream.send_all(out)
    except (trio.BrokenResourceError, trio.ClosedResourceError, httptools.HttpParserError):
        return
    finally:
        await stream.aclose()


def main() -> None:
    serve_http("trivial_httptools", connection)


if __name__ == "__main__":
    main()
