"""The WebSocket server on either door (hypercorn or wsproto), served for one test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from mcp_trio.transports.websocket import (
    WebSocketASGI,
    WebSocketEndpoint,
    serve_hypercorn_websocket,
    serve_wsproto,
)


@asynccontextmanager
async def serving(
    front_door: str,
    serve_session: Callable[..., Awaitable[Any]],
    *,
    http_app: Any = None,
    hypercorn_options: dict[str, Any] | None = None,
    ssl_context: Any = None,
    **options: Any,
) -> AsyncIterator[tuple[str, WebSocketEndpoint]]:
    """An endpoint served on 127.0.0.1 (a free port) by ``front_door``: (URL, endpoint)."""
    endpoint = WebSocketEndpoint(serve_session, **options)
    async with trio.open_nursery() as nursery:
        if front_door == "hypercorn":
            app = WebSocketASGI(endpoint, http_app)
            config = hypercorn_options or {}
            serve = partial(serve_hypercorn_websocket, app, "127.0.0.1", 0, **config)
        else:
            serve = partial(serve_wsproto, endpoint, "127.0.0.1", 0, ssl_context=ssl_context)
        urls = await nursery.start(serve)
        yield urls[0] + "/mcp", endpoint
        nursery.cancel_scope.cancel()
