"""The library's own client through a round-robin TCP proxy in front of three
workers sharing one store: each connection it opens lands on the next worker,
so its requests of one session are served by several of them."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import urlsplit

import pytest
import trio

from mcp_trio.client import connect_http
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult
from mcp_trio.client.results import TextContent
from tests._support.http_shared import add_tool, workers

pytestmark = pytest.mark.trio


@asynccontextmanager
async def round_robin(urls: list[str]) -> AsyncIterator[str]:
    """A TCP proxy sending each new connection to the next of ``urls``' ports; its URL."""
    ports = [urlsplit(url).port for url in urls]
    turn = itertools.count()

    async def relay(source: trio.SocketStream, target: trio.SocketStream) -> None:
        try:
            while data := await source.receive_some(65536):
                await target.send_all(data)
            await target.send_eof()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass

    async def handle(client: trio.SocketStream) -> None:
        port = ports[next(turn) % len(ports)]
        async with client, await trio.open_tcp_stream("127.0.0.1", port) as backend:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(relay, client, backend)
                nursery.start_soon(relay, backend, client)

    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(trio.serve_tcp, handle, 0, host="127.0.0.1"))
        yield f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/mcp"
        nursery.cancel_scope.cancel()


async def test_a_client_through_a_round_robin_proxy_in_front_of_three_workers(store_url: str | None) -> None:
    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    async def elicitation(params: ElicitParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"n": "ada"})

    changed: list[Any] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async with workers(3, store_url=store_url) as (urls, servers, store, _):
        async with round_robin(urls) as url:
            async with connect_http(
                url,
                versions=["2025-11-25"],
                sampling=sampling,
                elicitation=elicitation,
                on_list_changed=on_list_changed,
            ) as client:
                served: list[str] = []
                asked: list[str] = []
                with trio.fail_after(10):
                    async with trio.open_nursery() as nursery:

                        async def where() -> None:
                            served.append((await client.call_tool("where")).content[0].text)

                        async def ask(tool: str) -> None:
                            asked.append((await client.call_tool(tool)).content[0].text)

                        for _ in range(6):
                            nursery.start_soon(where)
                        nursery.start_soon(ask, "ask")
                        nursery.start_soon(ask, "ask_llm")
                assert len(set(served)) >= 2  # one session, served by several workers
                assert sorted(a.split(" from ")[0].split(" via ")[0] for a in asked) == ["4", "hi ada"]
                result = await client.call_tool("add", {"a": 2, "b": 40})
                assert result.content[0].text == "42"
                # a change on any worker reaches the client's GET stream, wherever it is held
                for server in servers:
                    add_tool(server, "extra")
                with trio.fail_after(5):
                    while not changed:
                        await trio.sleep(0.02)
                assert changed[0] == "tools"
                session_id = client.session.channel.session_id  # type: ignore[attr-defined]
            # the client's DELETE ended it everywhere
            assert session_id is not None
            with trio.fail_after(5):
                while any(server._sessions for server in servers):
                    await trio.sleep(0.02)
            assert await store.sessions.get(session_id) is None
