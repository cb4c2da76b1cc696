"""Session state (ctx.set_state) of a session that workers share through a store: kept in the
session's record, so the worker serving the next request finds it; a value the store cannot
hold is refused, naming the key and why."""

from __future__ import annotations

from dataclasses import dataclass

import httpx2 as httpx
import pytest

from mcp_trio.server import Context, Server
from tests._support.http_shared import call, initialize, workers

pytestmark = pytest.mark.trio


@dataclass
class Cart:
    items: list[str]


def add_cart_tools(server: Server) -> None:
    @server.tool
    async def add_to_cart(item: str, ctx: Context) -> str:
        cart = await ctx.get_state("cart", Cart, Cart([]))
        cart.items.append(item)
        await ctx.set_state("cart", cart)
        return f"{server.info['name']}: {', '.join(cart.items)}"

    @server.tool
    async def forget(ctx: Context) -> str:
        await ctx.delete_state("cart")
        return repr(await ctx.get_state("cart", Cart))

    @server.tool
    async def keep_a_lock(ctx: Context) -> str:
        await ctx.set_state("lock", object())
        return "kept"


def text(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["result"]["content"][0]["text"])


async def test_the_next_request_finds_the_state_on_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, store, _):
        for server in servers:
            add_cart_tools(server)
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            session_id = headers["mcp-session-id"]
            r = await client.post(urls[0], headers=headers, json=call(2, "add_to_cart", {"item": "tea"}))
            assert text(r) == "w0: tea"
            r = await client.post(urls[1], headers=headers, json=call(3, "add_to_cart", {"item": "jam"}))
            assert text(r) == "w1: tea, jam"
            r = await client.post(urls[0], headers=headers, json=call(4, "add_to_cart", {"item": "rye"}))
            assert text(r) == "w0: tea, jam, rye"
            record = await store.sessions.get(session_id)
            assert record is not None and record.data["state:cart"] == b'{"items":["tea","jam","rye"]}'
            assert not any(server._open.states for server in servers)  # (nothing kept in memory)

            r = await client.post(urls[1], headers=headers, json=call(5, "forget"))
            assert text(r) == "None"
            r = await client.post(urls[0], headers=headers, json=call(6, "keep_a_lock"))
            assert r.json()["result"]["isError"]
            assert "session state 'lock' is shared with the other workers through the store, so it " in (
                text(r)
            )
            record = await store.sessions.get(session_id)
            assert record is not None and not any(key.startswith("state:") for key in record.data)
