"""No ExceptionGroup from the client's public calls: each failure is one documented exception,
and a feature of another revision says which revision the session speaks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_trio import (
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    open_memory_transport_pair,
    open_session,
)
from mcp_trio.client import Client, HandlerError, open_client
from mcp_trio.server import Context, Server

MODERN = "2026-07-28"


def make_server() -> Server:
    server = Server("errors", "1.0")

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.sample("2+2?", max_tokens=5)
        return str(answer.content.text)

    @server.tool
    async def roots(ctx: Context) -> str:
        return str(len((await ctx.list_roots()).roots))

    @server.prompt
    def plain(topic: str) -> str:
        return topic

    return server


@asynccontextmanager
async def connected(version: str, **options: Any) -> AsyncIterator[Client]:
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(make_server().serve_session, a)
        with trio.fail_after(10):
            async with open_client(b, versions=[version], **options) as client:
                yield client
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def bare_server(version: str, handlers: dict[str, Any], **options: Any) -> AsyncIterator[Client]:
    """A low-level server with only ``handlers`` (no ``subscriptions/listen``)."""
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:

        async def serve() -> None:
            async with open_session(
                a,
                role="server",
                info={"name": "bare", "version": "1"},
                capabilities={"tools": {}},
                request_handlers=handlers,
            ):
                await trio.sleep_forever()

        nursery.start_soon(serve)
        with trio.fail_after(10):
            async with open_client(b, versions=[version], **options) as client:
                yield client
        nursery.cancel_scope.cancel()


async def test_listen_against_a_server_without_it_raises_the_error_alone() -> None:
    async with bare_server(MODERN, {}) as client:
        with pytest.raises(McpError) as info:
            async with client.listen(tools=True):
                pass  # pragma: no cover
    assert info.value.code == -32601


async def test_what_a_listen_block_raises_comes_out_alone() -> None:
    async with connected(MODERN) as client:
        with pytest.raises(ValueError, match="mine"):
            async with client.listen(tools=True):
                raise ValueError("mine")


async def test_a_failing_handler_in_a_multi_round_call_is_one_handler_error() -> None:
    async def sampling(params: Any) -> Any:
        raise RuntimeError("no model")

    async with connected(MODERN, sampling=sampling) as client:
        with pytest.raises(HandlerError) as info:
            await client.call_tool("ask")
    assert info.value.method == "sampling/createMessage"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "sampling/createMessage handler failed" in str(info.value)


async def test_a_failing_roots_callable_is_one_handler_error() -> None:
    def roots() -> Any:
        raise OSError("unreadable")

    async with connected(MODERN, roots=roots) as client:
        with pytest.raises(HandlerError) as info:
            await client.call_tool("roots")
    assert info.value.method == "roots/list" and isinstance(info.value.__cause__, OSError)


async def test_an_ask_the_client_did_not_advertise_is_a_remote_protocol_error() -> None:
    async def call(ctx: Any, params: Any) -> Any:
        if params.inputResponses is not None and params.inputResponses:
            return {"content": []}  # pragma: no cover
        request = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}}
        return {"resultType": "input_required", "inputRequests": {"s": request}}

    async with bare_server(MODERN, {"tools/call": call}) as client:
        with pytest.raises(RemoteProtocolError, match="did not advertise"):
            await client.call_tool("x")


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda c: c.ping(),
            "ping exists up to protocol version 2025-11-25 (this session speaks 2026-07-28)",
        ),
        (lambda c: c.subscribe_resource("a://b"), "use listen(resource_uris=...)"),
        (lambda c: c.unsubscribe_resource("a://b"), "this session speaks 2026-07-28"),
    ],
)
async def test_older_features_name_the_revision(call: Any, message: str) -> None:
    async with connected(MODERN) as client:
        with pytest.raises(LocalProtocolError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await call(client)


async def test_newer_features_name_the_revision() -> None:
    async with connected("2025-03-26") as client:
        with pytest.raises(LocalProtocolError) as info:
            await client.complete("topic", "t", prompt="plain", context={"a": "b"})
        assert "needs protocol version 2025-06-18 or later (this session speaks 2025-03-26)" in str(
            info.value
        )
        with pytest.raises(LocalProtocolError, match="needs a stateless protocol version .* 2025-03-26"):
            async with client.listen(tools=True):
                pass  # pragma: no cover
