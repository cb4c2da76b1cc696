"""ctx.get_state / set_state / delete_state: kept per session, as long as it lives, typed on the
way out; refused, naming why, where a request has no session."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import pytest
import trio

from mcp_trio.client import connect_http, connect_server
from mcp_trio.server import Context, Server
from tests._support.server import connected, text_of

pytestmark = pytest.mark.trio


@dataclass
class Cart:
    items: list[str]


def cart_server() -> Server:
    server = Server("shop")

    @server.tool
    async def add(item: str, ctx: Context) -> str:
        cart = await ctx.get_state("cart", Cart, Cart([]))
        cart.items.append(item)
        await ctx.set_state("cart", cart)
        await ctx.set_state("count", len(cart.items))
        return ", ".join(cart.items)

    @server.tool
    async def count(ctx: Context) -> str:
        return repr(await ctx.get_state("count", int))

    @server.tool
    async def empty(ctx: Context) -> str:
        await ctx.delete_state("cart")
        await ctx.delete_state("never-set")
        return repr(await ctx.get_state("cart", Cart))

    @server.tool
    async def misread(ctx: Context) -> str:
        return repr(await ctx.get_state("count", Cart))

    return server


async def test_state_lives_with_its_session_and_no_other() -> None:
    server = cart_server()
    async with connect_server(server) as mine, connect_server(server) as theirs:
        assert text_of(await mine.call_tool("add", {"item": "tea"})) == "tea"
        assert text_of(await mine.call_tool("add", {"item": "jam"})) == "tea, jam"
        assert text_of(await theirs.call_tool("add", {"item": "bread"})) == "bread"
        assert text_of(await mine.call_tool("count")) == "2"
        assert text_of(await theirs.call_tool("count")) == "1"
        assert text_of(await mine.call_tool("empty")) == "None"
        assert text_of(await mine.call_tool("count")) == "2"  # (only "cart" was deleted)
        misread = await mine.call_tool("misread")
        assert misread.isError and "session state 'count' is a int, not a Cart" in text_of(misread)
        assert len(server._open.states) == 2
    assert server._open.states == {}  # (forgotten with the sessions)


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_a_connection_is_a_session_in_every_revision(version: str) -> None:
    async with connected(cart_server(), version) as client:
        for item in ("tea", "jam"):
            result = await client.request("tools/call", {"name": "add", "arguments": {"item": item}})
    assert text_of(result) == "tea, jam"


@pytest.mark.parametrize(
    ("version", "options", "why"),
    [
        ("2026-07-28", {}, "protocol revision 2026-07-28)"),
        ("2025-11-25", {"stateless": True}, "protocol revision 2025-11-25, a stateless server)"),
    ],
)
async def test_a_request_served_on_its_own_over_http_is_told_why_state_cannot_be_kept(
    version: str, options: dict[str, bool], why: str
) -> None:
    server = cart_server()
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, **options))
        async with connect_http(url, versions=[version]) as client:
            result = await client.call_tool("add", {"item": "tea"})
        nursery.cancel_scope.cancel()
    assert result.isError
    expected = (
        "ctx.get_state: this request has no session to keep state in (it is served on its own over HTTP: "
    )
    assert expected + why in text_of(result)


async def test_a_key_must_be_a_non_empty_string() -> None:
    server = Server("keys")

    @server.tool
    async def bad(ctx: Context) -> str:
        await ctx.set_state("", 1)
        return "kept"

    async with connect_server(server) as client:
        result = await client.call_tool("bad")
    assert result.isError and "a session state key is a non-empty str, not ''" in text_of(result)
