"""MCP servers written with the official Python SDK (``mcp``) over HTTP, for the interop tests.

One process serves four apps, each on its own port on 127.0.0.1:

* ``sse``: Streamable HTTP answering with SSE streams, resumable (an event
  store, ``retry`` 100 ms);
* ``json``: Streamable HTTP answering with JSON bodies;
* ``stateless``: Streamable HTTP without sessions (JSON bodies);
* ``legacy``: the 2024-11-05 HTTP+SSE transport (``/sse`` and ``/messages/``).

Once all of them accept connections it prints one JSON line to stdout:
``{"sse": port, "json": port, "stateless": port, "legacy": port}``.

Tools: echo(text), slow(seconds), progress(steps), ask() (elicitation and
sampling), poll() (closes its own response stream mid-call, so the client
must resume it), whoami() (the request headers it came with), region(region,
text) (``x-mcp-header: Region`` on ``region``).

Every HTTP request is logged to stderr as one line ``sdk_http: {"app": ...,
"method": ..., "path": ..., "status": ..., "headers": {...}, "rpc": ...}``
(MCP headers only; ``rpc`` is the JSON-RPC method of the body, if any), and a
cancelled ``slow`` logs ``sdk_http: slow cancelled``, so a test can see what
the server received.  Runs on anyio (asyncio); it must never be imported by
the trio tests.
"""

from __future__ import annotations

import json
import socket
import sys
import warnings
from typing import Annotated, Any

import anyio
import uvicorn
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve, Sample
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import CreateMessageResult, SamplingMessage, TextContent
from pydantic import BaseModel, Field

warnings.simplefilter("ignore")

_LOGGED_HEADERS = (
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "mcp-param-region",
    "last-event-id",
    "accept",
    "content-type",
    "host",
)


def log(message: str) -> None:
    print(f"sdk_http: {message}", file=sys.stderr, flush=True)


class MemoryEventStore(EventStore):
    """Every event in a list; replay walks the list from the given id."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, Any]] = []

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(len(self.events) + 1)
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        index = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, sid, message in self.events[index + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


class Confirm(BaseModel):
    ok: bool


def ask_user() -> Elicit[Confirm]:
    return Elicit("Proceed?", Confirm)


def ask_model() -> Sample:
    question = SamplingMessage(role="user", content=TextContent(type="text", text="2+2?"))
    return Sample([question], max_tokens=5)


def make_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("sdk-http-server", version="2.3.0-interop", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep for the given number of seconds."""
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            log("slow cancelled")
            raise
        return "slept"

    @server.tool()
    async def progress(steps: int, ctx: Context) -> str:
        """Log, then report progress 1..steps of steps, then return "done"."""
        await ctx.info(f"working on {steps} steps")
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            await anyio.sleep(0.01)
        return "done"

    @server.tool()
    def ask(
        answer: Annotated[Confirm, Resolve(ask_user)],
        sampled: Annotated[CreateMessageResult, Resolve(ask_model)],
    ) -> str:
        """Ask the user (elicitation) and the model (sampling)."""
        text = sampled.content.text if isinstance(sampled.content, TextContent) else "?"
        return f"ok={answer.ok} model={text}"

    @server.tool()
    async def poll(ctx: Context) -> str:
        """Close this call's response stream, keep working, then answer (the client resumes)."""
        await ctx.report_progress(1, 2, "before the break")
        await ctx.close_sse_stream()
        await anyio.sleep(0.3)
        await ctx.report_progress(2, 2, "after the break")
        return "polled"

    @server.tool()
    def whoami(ctx: Context) -> dict[str, Any]:
        """The MCP headers this request came with."""
        headers = ctx.headers or {}
        return {k: headers.get(k) for k in _LOGGED_HEADERS if headers.get(k) is not None}

    @server.tool()
    def region(
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
        text: str = "",
    ) -> str:
        """Echo the region (mirrored into the Mcp-Param-Region header)."""
        return f"{region}:{text}"

    return server


def logged(name: str, app: Any) -> Any:
    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        wanted = {k: headers[k] for k in _LOGGED_HEADERS if k in headers}
        body = bytearray()

        async def receive_logged() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                body.extend(message.get("body", b""))
            return message

        started = False

        async def send_logged(message: Any) -> None:
            nonlocal started
            # (the legacy SSE route "starts" a second response when its stream ends: log once)
            if message["type"] == "http.response.start" and not started:
                started = True
                try:
                    rpc = json.loads(body) if body else None
                except ValueError:
                    rpc = None
                entry = {
                    "app": name,
                    "method": scope["method"],
                    "path": scope["path"],
                    "status": message["status"],
                    "headers": wanted,
                    "rpc": rpc.get("method") if isinstance(rpc, dict) else None,
                }
                log(json.dumps(entry, sort_keys=True))
            await send(message)

        await app(scope, receive_logged, send_logged)

    return wrapper


def bound_socket() -> socket.socket:
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY only on sockets that
    # say so, and without it each small SSE write waits for a delayed ACK.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


async def main() -> None:
    apps = {
        "sse": make_server().streamable_http_app(event_store=MemoryEventStore(), retry_interval=100),
        "json": make_server().streamable_http_app(json_response=True),
        "stateless": make_server().streamable_http_app(json_response=True, stateless_http=True),
        "legacy": make_server().sse_app(),
    }
    servers: list[uvicorn.Server] = []
    ports: dict[str, int] = {}
    async with anyio.create_task_group() as tg:
        for name, app in apps.items():
            sock = bound_socket()
            ports[name] = sock.getsockname()[1]
            config = uvicorn.Config(logged(name, app), log_level="warning", lifespan="on")
            server = uvicorn.Server(config)
            server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
            servers.append(server)
            tg.start_soon(server.serve, [sock])
        with anyio.fail_after(20):
            while not all(s.started for s in servers):
                await anyio.sleep(0.01)
        print(json.dumps(ports), flush=True)
        log("ready")


if __name__ == "__main__":
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
