"""Typed form elicitation and the messages of revision-dependent features."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

import msgspec
import pytest
import trio

from mcp_trio import Session, open_memory_transport_pair, open_session
from mcp_trio.server import Context, Server
from mcp_trio.server._elicit import Elicited, form_schema


class Size(Enum):
    SMALL = "small"
    LARGE = "large"


@dataclass
class Order:
    name: str
    count: int
    urgent: bool = False
    size: Size = Size.SMALL
    mode: Literal["pickup", "delivery"] = "pickup"


class Nested(msgspec.Struct):
    tags: list[str]


@asynccontextmanager
async def connected(server: Server, version: str, answer: dict[str, Any]) -> AsyncIterator[Session]:
    seen: list[Any] = []

    async def elicit(ctx: Any, params: Any) -> dict[str, Any]:
        seen.append(msgspec.to_builtins(params))
        return answer

    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            versions=[version],
            capabilities={"elicitation": {}},
            request_handlers={"elicitation/create": elicit},
            notification_handlers={},
        ) as client:
            await client.connect()
            client.seen = seen  # type: ignore[attr-defined]
            yield client
        nursery.cancel_scope.cancel()


def test_a_form_schema_comes_from_the_type() -> None:
    assert form_schema(Order) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "urgent": {"type": "boolean", "default": False},
            "size": {"type": "string", "enum": ["small", "large"], "default": "small"},
            "mode": {"type": "string", "enum": ["pickup", "delivery"], "default": "pickup"},
        },
        "required": ["name", "count"],
    }
    with pytest.raises(TypeError, match=r"Nested: field 'tags' must be str, int, float, bool"):
        form_schema(Nested)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            {"action": "accept", "content": {"name": "tea", "count": 2, "size": "large"}},
            Elicited("accept", Order("tea", 2, size=Size.LARGE)),
        ),
        ({"action": "decline"}, Elicited("decline", None)),
    ],
)
async def test_typed_elicitation(answer: dict[str, Any], expected: Elicited[Order]) -> None:
    server = Server("s")
    got: list[Elicited[Order]] = []

    @server.tool
    async def order(ctx: Context) -> str:
        got.append(await ctx.elicit("What to order?", Order))
        return "ok"

    async with connected(server, "2025-11-25", answer) as client:
        with trio.fail_after(5):
            await client.request("tools/call", {"name": "order", "arguments": {}})
        (sent,) = client.seen  # type: ignore[attr-defined]
    assert sent["requestedSchema"] == form_schema(Order) and sent["mode"] == "form"
    assert got == [expected]


async def test_an_answer_that_does_not_fit_the_type_is_a_clear_error() -> None:
    server = Server("s")

    @server.tool
    async def order(ctx: Context) -> str:
        try:
            await ctx.elicit("What?", Order)
        except ValueError as exc:
            return str(exc)
        return "no error"

    answer = {"action": "accept", "content": {"name": "tea", "count": "many"}}
    async with connected(server, "2025-11-25", answer) as client:
        with trio.fail_after(5):
            result = await client.request("tools/call", {"name": "order", "arguments": {}})
    assert "the client's elicitation answer does not fit Order" in result.content[0].text
    assert "count" in result.content[0].text


async def test_elicitation_in_a_revision_without_it_names_the_revision() -> None:
    server = Server("s")

    @server.tool
    async def ask(ctx: Context) -> str:
        try:
            await ctx.elicit("What?", Order)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return "asked"

    async with connected(server, "2025-03-26", {"action": "cancel"}) as client:
        with trio.fail_after(5):
            result = await client.request("tools/call", {"name": "ask", "arguments": {}})
    assert result.content[0].text == (
        "MissingClientCapability: elicitation does not exist in protocol revision 2025-03-26, the one "
        "negotiated with this client (it needs 2025-06-18 or later)"
    )


async def test_log_levels_are_checked() -> None:
    server = Server("s")

    @server.tool
    async def bad(ctx: Context) -> str:
        try:
            await ctx.log("loud", "x")  # type: ignore[arg-type]
        except ValueError as exc:
            return str(exc)
        return "logged"

    async with connected(server, "2025-11-25", {}) as client:
        with trio.fail_after(5):
            result = await client.request("tools/call", {"name": "bad", "arguments": {}})
    assert result.content[0].text.startswith("unknown log level 'loud'; one of debug, info, notice")
