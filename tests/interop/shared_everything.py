"""Three workers serving ``examples/everything.py``, sharing one Redis, behind a per-request
round-robin proxy (``tests/rrproxy.py``): the setup the official SDK clients run against in
``test_sdk_clients_shared.py``.

Each worker is a fresh copy of the example module (its own :class:`~mcp_trio.server.Server`,
as in a process of its own) serving Streamable HTTP on a port of its own, with a Redis
connection of its own, all under one key prefix; the proxy sends each HTTP request to the next
worker, so the requests of one session are spread over all three.  A middleware on every worker
records which worker answered which request and how it ended (``"ok"``, ``"error"`` or
``"cancelled"``): what the clients cannot see.

The workers sign the 2026-07-28 multi-round-trip ``requestState`` with one key (as
``Server(state_key=...)`` would; the example's server draws a random key of its own), since a
retry may land on any of them.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import trio

from mcp_trio.middleware import CallNext, RequestInfo, Result
from mcp_trio.server import Server
from mcp_trio.server._mrtr import StateCodec
from mcp_trio.store import open_store
from tests.rrproxy import serve_round_robin

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples" / "everything.py"
WORKERS = 3
SETTLE = 5.0  # seconds for the workers to end what the clients abandoned

_copies = itertools.count()


@dataclass(frozen=True)
class Served:
    """One request a worker answered (or was answering when it ended)."""

    worker: str
    method: str
    name: str | None
    session_id: str | None
    outcome: str  # "ok", "error" or "cancelled"


@dataclass
class Record:
    """What the workers' :class:`Recorder` saw: the requests answered, and how many are running."""

    served: list[Served] = field(default_factory=list)
    running: int = 0


class Recorder:
    """Middleware: counts the requests running on a worker, and keeps a :class:`Served` for
    each one once it ends."""

    def __init__(self, worker: str, record: Record) -> None:
        self.worker = worker
        self.record = record

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        outcome = "error"
        self.record.running += 1
        try:
            result = await call_next(request)
            outcome = "ok"
            return result
        except trio.Cancelled:
            outcome = "cancelled"
            raise
        finally:
            self.record.running -= 1
            served = Served(self.worker, request.method, request.name, request.session_id, outcome)
            self.record.served.append(served)


def everything_server(state_key: bytes) -> Server:
    """A fresh copy of the example's server (the module loaded anew under a name of its own),
    signing multi-round-trip state with ``state_key``."""
    name = f"everything_worker_{next(_copies)}"
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (msgspec resolves the module's annotations through it)
    spec.loader.exec_module(module)
    server = module.server
    assert isinstance(server, Server)
    server._state = StateCodec(state_key)  # what Server(state_key=...) sets
    return server


@asynccontextmanager
async def everything_behind_proxy(
    redis_url: str, prefix: str, n: int = WORKERS
) -> AsyncIterator[tuple[str, Record]]:
    """``n`` workers of the everything example sharing Redis at ``redis_url`` (keys under
    ``prefix``), behind the round-robin proxy: the proxy's MCP URL, and the workers' record."""
    record = Record()
    state_key = secrets.token_bytes(32)
    async with AsyncExitStack() as stack:
        stores = [await stack.enter_async_context(open_store(redis_url, prefix=prefix)) for _ in range(n)]
        async with trio.open_nursery() as nursery:
            backends: list[tuple[str, int]] = []
            for i, store in enumerate(stores):
                server = everything_server(state_key)
                server.add_middleware(Recorder(f"w{i}", record))
                serve = partial(server.serve_http, "127.0.0.1", 0, store=store, worker_id=f"w{i}")
                urls: Sequence[str] = await nursery.start(serve)
                port = urlsplit(urls[0]).port
                assert port is not None
                backends.append(("127.0.0.1", port))
            host, port = await nursery.start(serve_round_robin, backends)
            yield f"http://{host}:{port}/mcp", record
            nursery.cancel_scope.cancel()


@dataclass
class Observed:
    """What each client printed (its one JSON line, decoded), and what the workers recorded."""

    outputs: dict[str, dict[str, Any]]
    served: list[Served]


def run_clients(
    redis_url: str, prefix: str, commands: Mapping[str, Callable[[str], list[str]]], timeout: float
) -> Observed:
    """Serve the everything example behind the proxy (see :func:`everything_behind_proxy`) and run
    the client commands (``commands[name](url)``, at the same time); each must exit 0 after
    printing one JSON line within ``timeout`` seconds.  Once they are done, waits (briefly) for
    the workers to finish what the clients abandoned."""
    outputs: dict[str, dict[str, Any]] = {}

    async def run(url: str, name: str, argv: list[str]) -> None:
        with trio.fail_after(timeout):
            done = await trio.run_process(
                argv, cwd=ROOT, capture_stdout=True, capture_stderr=True, check=False
            )
        stderr = done.stderr.decode("utf-8", "replace")[-6000:]
        assert done.returncode == 0, f"{name} exited {done.returncode}:\n{stderr}"
        lines = done.stdout.decode().splitlines()
        assert len(lines) == 1, (name, lines, stderr)
        outputs[name] = json.loads(lines[0])

    async def main() -> list[Served]:
        async with everything_behind_proxy(redis_url, prefix) as (url, record):
            async with trio.open_nursery() as nursery:
                for name, command in commands.items():
                    nursery.start_soon(run, url, name, command(url))
            with trio.move_on_after(SETTLE):
                while record.running:
                    await trio.sleep(0.02)
            return list(record.served)

    return Observed(outputs, trio.run(main))
