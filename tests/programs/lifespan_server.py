"""A server with a lifespan that writes to the file named by LIFESPAN_LOG when each process
enters and leaves it (``mcp-trio serve`` lifespan tests)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp_trio.server import Context, Server


def _note(what: str) -> None:
    with Path(os.environ["LIFESPAN_LOG"]).open("a") as log:
        log.write(f"{what} {os.getpid()}\n")


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[str]:
    _note("enter")
    yield f"opened in {os.getpid()}"
    _note("exit")


server = Server("lifespan-server", "1.0", lifespan=lifespan)


@server.tool
def pid(ctx: Context) -> str:
    """The id of the process serving this request, and what its lifespan gave."""
    return f"{os.getpid()}: {ctx.lifespan_value(str)}"
