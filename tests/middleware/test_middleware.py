"""Middleware around every request a server or a client answers: order, what a middleware
sees, short-circuits, errors, installing while sessions run; with real sessions (in memory)."""

from __future__ import annotations

from functools import partial
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import INVALID_PARAMS, McpError
from mcp_trio.client import connect_http, connect_server, open_client
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult, Root
from mcp_trio.client.results import TextContent
from mcp_trio.middleware import CallNext, Middleware, RequestInfo, Result
from mcp_trio.server import Context, Server
from mcp_trio.transports.http.client import open_legacy_sse_client

LEGACY = "2025-06-18"
MODERN = "2026-07-28"


class Recorder:
    """Notes each request it sees, and the order, in ``log``."""

    def __init__(self, label: str, log: list[tuple[str, RequestInfo]]) -> None:
        self.label = label
        self.log = log

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        self.log.append((f"{self.label} in", request))
        result = await call_next(request)
        self.log.append((f"{self.label} out", request))
        return result


def make_server(**options: Any) -> Server:
    server = Server("mw", "1", **options)

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.sample("2+2?", max_tokens=5)
        roots = await ctx.list_roots()
        return f"{answer.content.text} {len(roots.roots)}"

    @server.resource("notes://{name}")
    def note(name: str) -> str:
        if name == "missing":
            raise KeyError(name)
        return f"note {name}"

    @server.prompt
    def greet(who: str) -> str:
        return f"hello {who}"

    return server


async def test_the_first_listed_is_outermost_and_sees_the_request() -> None:
    log: list[tuple[str, RequestInfo]] = []
    server = make_server(middleware=[Recorder("a", log), Recorder("b", log)])
    with trio.fail_after(5):
        async with connect_server(server, versions=[LEGACY]) as client:
            assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
            await client.read_resource("notes://x")
            await client.get_prompt("greet", {"who": "w"})
            await client.list_tools()
    labels = [label for label, _ in log]
    assert labels[:4] == ["a in", "b in", "b out", "a out"]
    seen = [request for label, request in log if label == "a in"]
    assert [(r.method, r.name) for r in seen] == [
        ("tools/call", "add"),
        ("resources/read", "notes://x"),
        ("prompts/get", "greet"),
        ("tools/list", None),
    ]
    call = seen[0]
    assert call.side == "server" and call.session_id is None
    assert isinstance(call.params, msgspec.Struct) and call.params.arguments == {"a": 1, "b": 2}  # type: ignore[attr-defined]
    assert call.context is not None and call.request_id == call.context.id
    assert call.context.version == LEGACY
    assert call.session_key() is call.context.session


async def test_no_middleware_leaves_the_handlers_as_they_are() -> None:
    server = make_server()
    assert server._dispatch.table()["tools/list"] == server._mounts.list_tools
    server.add_middleware(Recorder("a", []))
    assert server._dispatch.table()["tools/list"] != server._mounts.list_tools
    assert len(server.middleware) == 1


async def test_a_middleware_may_answer_itself_or_refuse() -> None:
    class Gate:
        async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
            if request.name == "add" and isinstance(request.params, msgspec.Struct):
                arguments: Any = getattr(request.params, "arguments", {})
                if arguments.get("a") == 0:
                    return {"content": [{"type": "text", "text": "short-circuited"}]}
                if arguments.get("a") < 0:
                    raise McpError(INVALID_PARAMS, "negative numbers are refused here", {"a": arguments["a"]})
                if arguments.get("a") == 7:
                    raise RuntimeError("unlucky")
                changed = msgspec.structs.replace(request.params, arguments={**arguments, "b": 100})
                return await call_next(msgspec.structs.replace(request, params=changed))
            return await call_next(request)

    gate: Middleware = Gate()
    with trio.fail_after(5):
        async with connect_server(make_server(middleware=[gate])) as client:
            assert (await client.call_tool("add", {"a": 0, "b": 1})).content[0].text == "short-circuited"  # type: ignore[union-attr]
            with pytest.raises(McpError) as refused:
                await client.call_tool("add", {"a": -1, "b": 1})
            assert refused.value.code == INVALID_PARAMS
            assert refused.value.message == "negative numbers are refused here"
            assert refused.value.data == {"a": -1}
            with pytest.raises(McpError, match="RuntimeError: unlucky") as failed:
                await client.call_tool("add", {"a": 7, "b": 1})
            assert failed.value.code == -32603
            assert (await client.call_tool("add", {"a": 1, "b": 1})).structuredContent == {"result": 101}


async def test_add_middleware_reaches_sessions_already_open() -> None:
    log: list[tuple[str, RequestInfo]] = []
    server = make_server()
    with trio.fail_after(5):
        async with connect_server(server) as client:
            await client.call_tool("add", {"a": 1, "b": 2})
            assert log == []
            server.add_middleware(Recorder("late", log))
            await client.call_tool("add", {"a": 1, "b": 2})
    assert [label for label, _ in log] == ["late in", "late out"]


@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_a_client_middleware_wraps_the_servers_asks(version: str) -> None:
    log: list[tuple[str, RequestInfo]] = []

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    with trio.fail_after(5):
        async with connect_server(
            make_server(),
            versions=[version],
            sampling=sampling,
            roots=[Root(uri="file:///a", name="a")],
            middleware=[Recorder("c", log)],
        ) as client:
            result = await client.call_tool("ask")
    assert result.content[0].text == "4 1"  # type: ignore[union-attr]
    seen = [request for label, request in log if label == "c in"]
    assert [r.method for r in seen] == ["sampling/createMessage", "roots/list"]
    assert all(r.side == "client" for r in seen)
    if version == LEGACY:  # JSON-RPC requests of the server, with their ids and contexts
        assert all(r.request_id is not None and r.context is not None for r in seen)
    else:  # asks inside an InputRequiredResult: no id, no request of the server to speak of
        assert all(r.request_id is None and r.context is None for r in seen)
    assert isinstance(seen[0].params, msgspec.Struct)


async def test_a_client_middleware_may_refuse_an_ask() -> None:
    class NoSampling:
        async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
            if request.method == "sampling/createMessage":
                raise McpError(INVALID_PARAMS, "no sampling today")
            return await call_next(request)

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        raise AssertionError("never reached")

    with trio.fail_after(5):
        async with connect_server(
            make_server(), versions=[LEGACY], sampling=sampling, roots=[], middleware=[NoSampling()]
        ) as client:
            # the refusal reaches the server's ctx.sample, which the tool lets out
            with pytest.raises(McpError, match="no sampling today") as refused:
                await client.call_tool("ask")
    assert refused.value.code == INVALID_PARAMS


async def test_the_session_id_is_the_transports_over_http_and_http_sse() -> None:
    """Streamable HTTP: the ``Mcp-Session-Id``; the 2024-11-05 HTTP+SSE transport: its session's id."""
    log: list[tuple[str, RequestInfo]] = []
    server = make_server(middleware=[Recorder("a", log)])
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, legacy_sse=True))
            async with connect_http(urls[0], versions=["2025-11-25"]) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
                streamable = getattr(client.session.channel, "session_id", None)
            sse = urls[0].rsplit("/", 1)[0] + "/sse"
            async with open_legacy_sse_client(sse) as channel, open_client(channel) as client:
                await client.call_tool("add", {"a": 1, "b": 2})
            nursery.cancel_scope.cancel()
    first, second = (request for label, request in log if label == "a in")
    assert first.session_id == streamable and streamable is not None
    assert second.session_id is not None and second.session_id != streamable
    assert first.session_key() == streamable
