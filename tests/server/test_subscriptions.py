"""subscriptions/listen (2026-07-28): the server's hub and Client.listen, in memory and over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio import LocalProtocolError, McpError
from mcp_trio.client import Client, connect_http, connect_server
from mcp_trio.server import Server
from mcp_trio.server._listen import SUBSCRIPTION_ID, SubscriptionHub
from tests._support.doors import DOORS
from tests._support.paths import EVERYTHING

MODERN = "2026-07-28"


def make_server() -> Server:
    server = Server("subs", "1")

    @server.tool
    async def ping_tool() -> str:
        return "pong"

    @server.resource("test://watched")
    async def watched() -> str:
        return "w"

    return server


@asynccontextmanager
async def pair(server: Server, version: str = MODERN) -> AsyncIterator[Client]:
    with trio.fail_after(10):
        async with connect_server(server, versions=[version]) as client:
            yield client


def add_tool(server: Server, name: str) -> None:
    async def extra() -> str:
        return name

    server.tool(extra, name=name)


async def next_note(subscription: Any) -> tuple[str, Any]:
    with trio.fail_after(5):
        return await subscription.__anext__()


async def test_listen_acknowledges_then_delivers_what_was_asked() -> None:
    server = make_server()
    async with pair(server) as client:
        async with client.listen(tools=True, resource_uris=["test://watched"]) as sub:
            assert sub.acknowledged == {"toolsListChanged": True, "resourceSubscriptions": ["test://watched"]}
            assert len(server.subscriptions) == 1
            # prompts were not asked for: their change is never delivered
            server.prompt(lambda: "p", name="late_prompt")
            add_tool(server, "new_tool")
            method, params = await next_note(sub)
            assert method == "notifications/tools/list_changed"
            assert params.meta[SUBSCRIPTION_ID] == sub.id
            await server.notify_resource_updated("test://other")  # not watched
            await server.notify_resource_updated("test://watched")
            method, params = await next_note(sub)
            assert method == "notifications/resources/updated" and params.uri == "test://watched"
            assert params.meta[SUBSCRIPTION_ID] == sub.id
        # leaving the block cancelled the listen request: the server forgot it
        with trio.fail_after(5):
            while len(server.subscriptions):
                await trio.sleep(0.01)


async def test_changes_are_coalesced_while_the_client_has_not_received_them() -> None:
    server = make_server()
    async with pair(server) as client:
        async with client.listen(tools=True, resources=True) as sub:
            for i in range(5):  # no checkpoint in between: one pending notification
                add_tool(server, f"t{i}")
            server.resource("test://r2")(lambda: "r")
            first = await next_note(sub)
            second = await next_note(sub)
            assert [first[0], second[0]] == [
                "notifications/tools/list_changed",
                "notifications/resources/list_changed",
            ]
            add_tool(server, "t9")  # after delivery, a new change is announced again
            assert (await next_note(sub))[0] == "notifications/tools/list_changed"
            assert sub.dropped == 0


async def test_two_subscriptions_are_told_apart() -> None:
    server = make_server()
    async with pair(server) as client:
        async with client.listen(tools=True) as one, client.listen(resource_uris=["test://watched"]) as two:
            assert one.id != two.id
            await server.notify_resource_updated("test://watched")
            add_tool(server, "x")
            assert (await next_note(two))[0] == "notifications/resources/updated"
            assert (await next_note(one))[0] == "notifications/tools/list_changed"


async def test_the_server_ends_subscriptions_gracefully() -> None:
    server = make_server()
    async with pair(server) as client:
        async with client.listen(tools=True) as sub:
            add_tool(server, "before_end")
            server.subscriptions.end_all()
            got = [note async for note in sub]  # what was pending, then the end
            assert [m for m, _ in got] == ["notifications/tools/list_changed"]
            assert sub.ended_gracefully
        assert (await client.call_tool("ping_tool")).content[0].text == "pong"  # the session goes on


async def test_listen_needs_the_stateless_era() -> None:
    server = make_server()
    async with pair(server, "2025-11-25") as client:
        with pytest.raises(LocalProtocolError, match="stateless"):
            async with client.listen(tools=True):
                pass  # pragma: no cover
        with pytest.raises((McpError, LocalProtocolError)):
            await client.session.request("subscriptions/listen", {"notifications": {}})


async def test_the_server_only_acknowledges_what_it_offers() -> None:
    from mcp_trio.types.v2026_07_28 import SubscriptionFilter

    hub = SubscriptionHub(lambda: {"tools": {"listChanged": True}, "resources": {}})
    requested = SubscriptionFilter(
        toolsListChanged=True, promptsListChanged=True, resourcesListChanged=True, resourceSubscriptions=["a"]
    )
    agreed, methods, uris = hub._agree(requested)
    assert agreed == {"toolsListChanged": True}
    assert methods == {"notifications/tools/list_changed"} and uris == set()


@pytest.mark.parametrize("front_door", DOORS)
async def test_listen_over_streamable_http(front_door: str) -> None:
    server = make_server()
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: server.serve_http(
                "127.0.0.1", 0, front_door=front_door, task_status=task_status
            )
        )
        with trio.fail_after(10):
            async with connect_http(urls[0], versions=[MODERN]) as client:
                async with client.listen(tools=True, resource_uris=["test://watched"]) as sub:
                    assert sub.acknowledged == {
                        "toolsListChanged": True,
                        "resourceSubscriptions": ["test://watched"],
                    }
                    add_tool(server, "over_http")
                    assert (await next_note(sub))[0] == "notifications/tools/list_changed"
                    await server.notify_resource_updated("test://watched")
                    assert (await next_note(sub))[1].uri == "test://watched"
                    # the list the client caches was invalidated by the notification
                    names = [t.name for t in await client.list_all_tools()]
                    assert "over_http" in names
                # closing the stream is the cancellation on HTTP
                while len(server.subscriptions):
                    await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def test_listen_over_stdio_against_the_everything_example() -> None:
    """Over stdio every subscription shares the one channel: notifications are told apart by
    their subscription id, and leaving the block sends notifications/cancelled."""
    import sys

    from mcp_trio.client import connect_stdio

    example = EVERYTHING
    with trio.fail_after(30):
        async with connect_stdio(sys.executable, str(example), versions=[MODERN]) as client:
            async with client.listen(tools=True) as tools, client.listen(prompts=True) as prompts:
                assert tools.acknowledged == {"toolsListChanged": True}
                assert prompts.acknowledged == {"promptsListChanged": True}
                await client.call_tool("test_trigger_prompt_change")
                method, params = await next_note(prompts)
                assert (
                    method == "notifications/prompts/list_changed"
                    and params.meta[SUBSCRIPTION_ID] == prompts.id
                )
                await client.call_tool("test_trigger_tool_change")
                method, params = await next_note(tools)
                assert (
                    method == "notifications/tools/list_changed" and params.meta[SUBSCRIPTION_ID] == tools.id
                )
            # both subscriptions are over; the session goes on
            assert (await client.call_tool("test_simple_text")).content[0].text
