"""The HTTP ceiling without a framework: a bare h11-over-trio loop, answering as ``_trivial.py``.

One task per connection, keep-alive, no timeouts or limits: the least a trio
HTTP/1.1 server can do per request.

Run with ``python benchmarks/peers/trivial_h11.py http PORT``.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import h11  # noqa: E402
import trio  # noqa: E402
from _trivial import answer, serve_http  # noqa: E402


async def next_event(stream: trio.SocketStream, conn: h11.Connection) -> object:
    while True:
        event = conn.next_event()
        if event is not h11.NEED_DATA:
            return event
        conn.receive_data(await stream.receive_some(65536))


async def connection(stream: trio.SocketStream) -> None:
    conn = h11.Connection(h11.SERVER)
    try:
        while True:
            event = await next_event(stream, conn)
            if not isinstance(event, h11.Request):
                return
            body = bytearray()
            while True:
                part = await next_event(stream, conn)
                if isinstance(part, h11.Data):
                    body += part.data
                elif isinstance(part, h11.EndOfMessage):
                    break
                else:
                    return
            status, headers, data = answer(bytes(body))
            headers = [*headers, (b"content-length", str(len(data)).encode())]
            out = conn.send(h11.Response(status_code=status, headers=headers))
            out += conn.send(h11.Data(data=data)) if data else b""
            out += conn.send(h11.EndOfMessage())
            await stream.send_all(out)
            if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
    except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
        return
    finally:
        await stream.aclose()


def main() -> None:
    serve_http("trivial_h11", connection)


if __name__ == "__main__":
    main()
