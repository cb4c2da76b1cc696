"""Bearer tokens over WebSocket: a protected WebSocket server, its HTTP form of the URL, and the
``Authorization`` header."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import trio

from examples.authorization_server import AuthorizationServer
from tests._support.auth import resource_server, whoami_server


def http_form(ws_url: str) -> str:
    return "http" + ws_url[2:]


@asynccontextmanager
async def protected(
    authorization_server: AuthorizationServer, front_door: str, **options: Any
) -> AsyncIterator[list[str]]:
    """A protected WebSocket server; its URLs (``ws://``, then ``http://`` with ``http=True``)."""
    auth = resource_server(authorization_server.issuer)
    serve = partial(
        whoami_server("protected-ws").serve_websocket,
        "127.0.0.1",
        0,
        front_door=front_door,
        auth=auth,
        **options,
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve)
        yield urls
        nursery.cancel_scope.cancel()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
