"""A ``Server`` and a client connected to it in memory, and the text of a tool's result."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from mcp_trio import Session, open_memory_transport_pair, open_session
from mcp_trio.server import Server


@asynccontextmanager
async def connected(
    server: Server, version: str, capabilities: dict[str, Any] | None = None
) -> AsyncIterator[Session]:
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            versions=[version],
            notification_handlers={},
            capabilities=capabilities,
        ) as client:
            await client.connect()
            yield client
        nursery.cancel_scope.cancel()


def text_of(result: Any) -> str:
    return result.content[0].text
