"""Three workers serving ``examples/everything.py``, sharing one Redis, behind a per-request
round-robin proxy (``tools/rrproxy.py``): the setup the official SDK clients run against in
``test_sdk_clients_shared.py``.

Each worker is a fresh copy of the example module (its own :class:`~mcp_trio.server.Server`,
as in a process of its own) serving Streamable HTTP on a port of its own, with a Redis
connection of its own, all under one key prefix; the proxy sends each HTTP request to the next
worker, so the requests of one session are spread over all three.  A middleware on every worker
records which worker answered which request and how it ended (``"ok"``, ``"error"`` or
``"cancelled"``), and a tap in front of each worker records the HTTP requests it got (the proxy
opens one connection per request): what the clients cannot see.

The workers sign the 2026-07-28 multi-round-trip ``requestState`` with one key (as
``Server(state_key=...)`` would; the example's server draws a random key of its own), since a
retry may land on any of them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import trio

from mcp_trio.middleware import CallNext, RequestInfo, Result
from mcp_trio.server import Server
from mcp_trio.store import open_store
from tests._support.paths import ROOT
from tools.rrproxy import serve_round_robin

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


@dataclass(frozen=True)
class Received:
    """One HTTP request a worker got: its method, ``Mcp-Session-Id`` and ``Last-Event-ID``, and
    what its body holds: a JSON-RPC request's or notification's method (for ``tools/call``,
    followed by a space and the tool's name), ``"response"`` for the client's answer to a
    request of the server, ``None`` for anything else."""

    worker: str
    method: str
    session_id: str | None
    last_event_id: str | None
    message: str | None = None


@dataclass
class Record:
    """What the workers' :class:`Recorder` saw (the requests answered, and how many are running)
    and what their taps saw (the HTTP requests)."""

    served: list[Served] = field(default_factory=list)
    running: int = 0
    received: list[Received] = field(default_factory=list)


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


MAX_HEAD = 65536
MAX_BODY = 1 << 20  # a longer body is relayed unread


def _message(body: bytes) -> str | None:
    """What a POST body holds (see :class:`Received`)."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if "method" in value:
        params = value.get("params")
        if value["method"] == "tools/call" and isinstance(params, dict):
            return f"tools/call {params.get('name')}"
        return str(value["method"])
    return "response" if "result" in value or "error" in value else None


async def _relay(source: trio.SocketStream, sink: trio.SocketStream) -> None:
    with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
        while data := await source.receive_some(MAX_HEAD):
            await sink.send_all(data)
        await sink.send_eof()


async def serve_tap(
    port: int, worker: str, record: Record, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
) -> None:
    """A TCP relay to the worker on ``port`` noting the request each connection opens with
    in ``record.received`` (the test proxy opens one connection per request); ``task_status``
    gets its own port."""

    async def handle(front: trio.SocketStream) -> None:
        async with front, await trio.open_tcp_stream("127.0.0.1", port) as back:
            head = b""
            while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                data = await front.receive_some(MAX_HEAD)
                if not data:
                    return
                head += data
            lines = head.split(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
            fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
            headers = {k.strip().lower(): v.strip() for k, v in fields.items()}
            length = int(headers.get("content-length") or 0)
            while len(head.split(b"\r\n\r\n", 1)[1]) < min(length, MAX_BODY):
                data = await front.receive_some(MAX_HEAD)
                if not data:
                    return
                head += data
            received = Received(
                worker,
                lines[0].split(" ")[0],
                headers.get("mcp-session-id"),
                headers.get("last-event-id"),
                _message(head.split(b"\r\n\r\n", 1)[1][:length]),
            )
            record.received.append(received)
            await back.send_all(head)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_relay, front, back)
                nursery.start_soon(_relay, back, front)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        task_status.started(listeners[0].socket.getsockname()[1])


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
    server.use_state_key(state_key)  # (every worker of the endpoint signs with one key)
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
                backends.append(("127.0.0.1", await nursery.start(serve_tap, port, f"w{i}", record)))
            host, port = await nursery.start(serve_round_robin, backends)
            yield f"http://{host}:{port}/mcp", record
            nursery.cancel_scope.cancel()


@dataclass
class Observed:
    """What each client printed (its one JSON line, decoded), and what the workers recorded."""

    outputs: dict[str, dict[str, Any]]
    served: list[Served]
    received: list[Received]


def run_clients(
    redis_url: str, prefix: str, commands: Mapping[str, Callable[[str], list[str]]], timeout: float
) -> Observed:
    """Serve the everything example behind the proxy (see :func:`everything_behind_proxy`) and run
    the client commands (``commands[name](url)``, one after the other, so that each one's
    requests take turns over the workers as it sends them); each must exit 0 after printing one
    JSON line within ``timeout`` seconds.  Once they are done, waits (briefly) for
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

    async def main() -> Record:
        async with everything_behind_proxy(redis_url, prefix) as (url, record):
            for name, command in commands.items():
                await run(url, name, command(url))
            with trio.move_on_after(SETTLE):
                while record.running:
                    await trio.sleep(0.02)
            return record

    record = trio.run(main)
    return Observed(outputs, record.served, record.received)
