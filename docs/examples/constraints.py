"""Constraints on tool arguments (annotated_types, pydantic Field) and pydantic models."""

import json
from typing import Annotated

import annotated_types as at
import trio
from pydantic import BaseModel, Field

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Server

server = Server("constraints-demo", "1.0")


@server.tool
def search(
    query: Annotated[str, at.MinLen(1), Field(description="What to look for")],
    limit: Annotated[int, Field(ge=1, le=100, description="How many results")] = 10,
    tags: list[Annotated[str, Field(pattern=r"^[a-z]+$")]] | None = None,
) -> list[str]:
    """Search the catalogue."""
    return [f"{query} #{n}" for n in range(1, min(limit, 3) + 1)]


class Item(BaseModel):
    name: str
    quantity: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    items: list[Item] = Field(min_length=1)


class Receipt(BaseModel):
    lines: int
    total_items: int


@server.tool
def place_order(order: Order) -> Receipt:
    """Place an order: pydantic validates it and describes the receipt."""
    return Receipt(lines=len(order.items), total_items=sum(i.quantity for i in order.items))


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            print("search:", json.dumps(tools["search"].inputSchema["properties"], sort_keys=True))
            order_schema = tools["place_order"].inputSchema["properties"]["order"]
            print("order items:", json.dumps(order_schema["properties"]["items"], sort_keys=True))

            result = await client.call_tool("search", {"query": "lamp", "limit": 500})
            print("too many:", result.isError, result.content[0].text)
            result = await client.call_tool("search", {"query": "lamp", "tags": ["Red"]})
            print("bad tag:", result.isError, result.content[0].text)
            result = await client.call_tool("search", {"query": "lamp", "limit": 2})
            print("found:", result.structuredContent)

            order = {"customer": "Ada", "items": [{"name": "lamp", "quantity": 2}]}
            result = await client.call_tool("place_order", {"order": order})
            print("receipt:", result.structuredContent)
            order["items"][0]["quantity"] = 0
            result = await client.call_tool("place_order", {"order": order})
            print("refused:", result.isError, result.content[0].text)


trio.run(main)
