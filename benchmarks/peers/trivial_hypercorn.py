"""The HTTP ceiling on hypercorn: a trivial ASGI app (``_trivial.py``) on its trio worker.

Run with ``python benchmarks/peers/trivial_hypercorn.py http PORT``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trio  # noqa: E402
from _args import parse  # noqa: E402
from _trivial import answer  # noqa: E402
from hypercorn.config import Config  # noqa: E402
from hypercorn.trio import serve  # noqa: E402


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    status, headers, data = answer(bytes(body))
    headers = [*headers, (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def main() -> None:
    args = parse()
    if args.transport != "http":
        sys.exit("trivial_hypercorn speaks HTTP only")
    config = Config()
    config.bind = [f"{args.host}:{args.port}"]
    config.accesslog = None
    trio.run(serve, app, config)


if __name__ == "__main__":
    main()
