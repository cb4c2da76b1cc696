"""Several HTTP servers sharing one store (``workers``), as the workers of one endpoint are: the
sessions they share, the streams they resume, and the changes they hear."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, aclosing, asynccontextmanager
from typing import Any

import httpx2 as httpx
import msgspec
import trio

from mcp_trio.server import Context, Server
from mcp_trio.store import Store, open_store
from mcp_trio.transports.http._sse import SSEDecoder
from tests._support.http_server import ACCEPT, RawResponse, init, rpc


def make_server(name: str, state: dict[str, Any]) -> Server:
    """One worker's server; ``state`` is shared by the workers' tools (as an app's database would be)."""
    server = Server(name, "1")

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def where(ctx: Context) -> str:
        return name

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        return f"hi {answer.content['n']} from {name}"

    @server.tool
    async def forever() -> str:
        state["started"].set()
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            state["cancelled"] = name
            state["cancelled_event"].set()
            raise
        return "never"

    @server.tool
    async def ask_llm(ctx: Context) -> str:
        answer = await ctx.sample("2+2?", max_tokens=5)
        return f"{answer.content.text} via {name}"

    @server.tool
    async def chatty(ctx: Context) -> str:
        await ctx.info("an info")
        await ctx.error("an error")
        return "said"

    return server


_prefixes = itertools.count()


@asynccontextmanager
async def workers(
    n: int = 2,
    front_door: str = "h11",
    task_lease: float | None = None,
    store_url: str | None = None,
    **options: Any,
) -> AsyncIterator[tuple[list[str], list[Server], Store, dict[str, Any]]]:
    """``n`` servers sharing one store (see ``store_url``), each on its own port: their URLs."""
    async with AsyncExitStack() as stack:
        if store_url is None:
            stores = [Store.in_memory()] * n
        else:
            prefix = f"anyworker{next(_prefixes)}:"
            stores = [await stack.enter_async_context(open_store(store_url, prefix=prefix)) for _ in range(n)]
        async with _serving(n, front_door, task_lease, stores, options) as running:
            yield running


@asynccontextmanager
async def _serving(
    n: int, front_door: str, task_lease: float | None, stores: list[Store], options: dict[str, Any]
) -> AsyncIterator[tuple[list[str], list[Server], Store, dict[str, Any]]]:
    state: dict[str, Any] = {"started": trio.Event(), "cancelled_event": trio.Event()}
    servers = [make_server(f"w{i}", state) for i in range(n)]
    if task_lease is not None:
        for i, server in enumerate(servers):
            server.tasks.share(stores[i], f"w{i}", lease=task_lease)
    state["stop"] = []  # state["stop"][i]() stops worker i (as if its process died)
    store = stores[0]
    async with trio.open_nursery() as nursery:
        urls = []
        for i, server in enumerate(servers):

            async def serve(task_status: Any, server: Server = server, i: int = i) -> None:
                with trio.CancelScope() as scope:
                    state["stop"].append(scope.cancel)
                    await server.serve_http(
                        "127.0.0.1",
                        0,
                        front_door=front_door,
                        store=stores[i],
                        worker_id=f"w{i}",
                        task_status=task_status,
                        **options,
                    )

            urls.append((await nursery.start(serve))[0])
        yield urls, servers, store, state
        nursery.cancel_scope.cancel()


async def initialize(client: httpx.AsyncClient, url: str, version: str = "2025-11-25") -> dict[str, str]:
    r = await client.post(url, headers=ACCEPT, json=init(version))
    assert r.status_code == 200, r.text
    return {**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": version}


def call(id: Any, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return rpc(id, "tools/call", {"name": tool, "arguments": arguments or {}})


async def sse_messages(response: RawResponse, count: int, timeout: float = 5) -> list[Any]:
    """The next ``count`` messages (with their event ids) of an SSE response."""
    decoder = SSEDecoder()
    got: list[Any] = []
    with trio.fail_after(timeout):
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                got += [(e.id, msgspec.json.decode(e.data)) for e in decoder.feed(chunk) if e.data]
                if len(got) >= count:
                    return got
    return got


GET = {"accept": "text/event-stream"}


async def initialized_everywhere(
    client: httpx.AsyncClient, urls: list[str], servers: list[Server]
) -> dict[str, str]:
    """A session initialized on the first worker, ``notifications/initialized``
    sent to the second, and a replica on each worker."""
    headers = await initialize(client, urls[0])
    r = await client.post(urls[1], headers=headers, json=rpc(None, "notifications/initialized"))
    assert r.status_code == 202
    for i, url in enumerate(urls[1:]):
        r = await client.post(url, headers=headers, json=call(100 + i, "add", {"a": 0, "b": 0}))
        assert r.status_code == 200
    with trio.fail_after(5):  # (notifications/initialized reaches the first one over the bus)
        while not all(s.initialized.is_set() for server in servers for s in server._sessions):
            await trio.sleep(0.01)
    return headers


def add_tool(server: Server, name: str) -> None:
    """Change the server's tools: its sessions get notifications/tools/list_changed."""

    async def extra() -> str:
        return name

    server.tool(name=name)(extra)


def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {**ACCEPT, "mcp-protocol-version": "2026-07-28", "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return headers
