"""A server that opens what it needs once (a lifespan) and keeps a cart per session (state).

The lifespan opens a "database" before the first request and closes it after the last; every
handler reaches it with ctx.lifespan_value(Database). Each session's cart is kept with
ctx.set_state and read back, typed, with ctx.get_state; two clients have two carts.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import trio

from mcp_trio.client import connect_server
from mcp_trio.server import Context, Server


@dataclass
class Database:
    prices: dict[str, float]
    queries: int = 0


@dataclass
class Cart:
    items: list[str] = field(default_factory=list)


@asynccontextmanager
async def lifespan(server: Server) -> AsyncIterator[Database]:
    print(f"{server.info['name']}: opening the database")
    yield Database({"tea": 3.5, "jam": 4.0, "rye": 2.25})
    print(f"{server.info['name']}: closing the database")


server = Server("shop", "1.0", lifespan=lifespan)


@server.tool
async def add(item: str, ctx: Context) -> str:
    """Put an item in this session's cart."""
    db = ctx.lifespan_value(Database)
    db.queries += 1
    if item not in db.prices:
        return f"we have no {item}"
    cart = await ctx.get_state("cart", Cart, Cart())
    cart.items.append(item)
    await ctx.set_state("cart", cart)
    total = sum(db.prices[i] for i in cart.items)
    return f"{', '.join(cart.items)}: {total:.2f}"


async def main() -> None:
    async with connect_server(server) as ada, connect_server(server) as bob:
        for client, name, item in [(ada, "ada", "tea"), (bob, "bob", "rye"), (ada, "ada", "jam")]:
            result = await client.call_tool("add", {"item": item})
            print(f"{name}: {result.content[0].text}")
        print("queries:", server.lifespan.value(Database).queries)


trio.run(main)
