"""Typed elicitation: the form is built from a dataclass, and the answer comes back as one.

The client's handler prints the form it was sent (``requestedSchema``) and answers it: filled in
once, declined once.
"""

import json
from dataclasses import dataclass
from typing import Literal

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server

server = Server("typed-elicitation-demo", "1.0")


@dataclass
class Booking:
    name: str
    seats: int
    time: Literal["lunch", "dinner"] = "dinner"
    terrace: bool = False


@server.tool
async def book_table(ctx: Context) -> str:
    """Asks the user for a booking; ``answer.data`` is a Booking when they accept."""
    answer = await ctx.elicit("Your booking?", Booking)
    if answer.data is None:  # "decline" or "cancel"
        return f"no booking ({answer.action})"
    booking = answer.data
    where = " on the terrace" if booking.terrace else ""
    return f"{booking.seats} seats for {booking.name} at {booking.time}{where}"


# --- the client's side --------------------------------------------------------------------------

ANSWERS = [
    {"action": "accept", "content": {"name": "Ada", "seats": 4}},  # the defaults fill the rest
    {"action": "accept", "content": {"name": "Grace", "seats": 2, "time": "lunch", "terrace": True}},
    {"action": "decline"},
]


async def elicitation(params):
    if len(ANSWERS) == 3:  # the form, shown once: the same each time
        form = params.requestedSchema
        print(params.message, "required:", form["required"])
        for field, schema in form["properties"].items():
            print(f"  {field}: {json.dumps(schema)}")
    return ANSWERS.pop(0)


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end, elicitation=elicitation) as client:
            for _ in range(3):
                result = await client.call_tool("book_table")
                print(result.content[0].text)


trio.run(main)
