"""Testing a server with pytest and pytest-trio: every revision, the user's answers stood in for
by the client's handler, the log it sends, and timeouts in virtual time."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_trio import RequestTimeout
from mcp_trio.client import Client, connect_server
from mcp_trio.server import Context, Server

server = Server("booking", "1.0")
SEATS = {"type": "object", "properties": {"seats": {"type": "integer"}}, "required": ["seats"]}


@server.tool
async def book(restaurant: str, ctx: Context) -> str:
    """Book a table, asking how many seats."""
    answer = await ctx.elicit(f"How many seats at {restaurant}?", SEATS)
    if answer.action != "accept":
        return "no booking"
    await ctx.info(f"booked {answer.content['seats']} at {restaurant}")
    return f"booked {answer.content['seats']} seats"


@server.tool
async def slow() -> str:
    """An hour of work."""
    await trio.sleep(3600)
    return "done"


@asynccontextmanager
async def connected(version: str, **client_options: Any) -> AsyncIterator[Client]:
    """The server and a client of the given revision, in memory."""
    async with connect_server(server, versions=[version], **client_options) as client:
        yield client


def answering(reply: dict[str, Any]) -> Any:
    """An elicitation handler that gives this reply, as a user would."""

    async def handler(params: Any) -> dict[str, Any]:
        assert params.message == "How many seats at Chez Trio?"
        return reply

    return handler


# elicitation exists from 2025-06-18 on; the last one is the stateless era
REVISIONS = ["2025-06-18", "2025-11-25", "2026-07-28"]


@pytest.mark.trio
@pytest.mark.parametrize("version", REVISIONS)
async def test_a_booking_asks_for_the_seats(version: str) -> None:
    logged = []

    async def on_log(params: Any) -> None:
        logged.append(params.data)

    accept = answering({"action": "accept", "content": {"seats": 2}})
    async with connected(version, elicitation=accept, on_log=on_log) as client:
        await client.set_log_level("info")
        result = await client.call_tool("book", {"restaurant": "Chez Trio"})
    assert result.content[0].text == "booked 2 seats"
    assert logged == ["booked 2 at Chez Trio"]


@pytest.mark.trio
@pytest.mark.parametrize("version", REVISIONS)
async def test_a_declined_question_books_nothing(version: str) -> None:
    async with connected(version, elicitation=answering({"action": "decline"})) as client:
        result = await client.call_tool("book", {"restaurant": "Chez Trio"})
    assert result.content[0].text == "no booking"


@pytest.mark.trio
async def test_a_slow_tool_times_out(autojump_clock: trio.abc.Clock) -> None:
    # autojump_clock (from pytest-trio): time jumps ahead whenever every task waits,
    # so an hour-long tool and a one-minute timeout take no real time
    async with connected("2025-11-25") as client:
        with pytest.raises(RequestTimeout):
            await client.call_tool("slow", timeout=60)
