"""The high-level Server over the in-memory transport, in every revision."""

from __future__ import annotations

import base64
from typing import Annotated, Any

import msgspec
import pytest
import trio

from mcp_trio import LocalProtocolError, McpError, open_memory_transport_pair, open_session
from mcp_trio.server import Context, Image, MissingClientCapability, Server
from mcp_trio.types import _versions
from tests._support.server import connected, text_of

ALL = list(_versions.SUPPORTED_VERSIONS)
LEGACY = [v for v in ALL if not _versions.is_stateless(v)]


class Point(msgspec.Struct):
    x: int
    y: int


def make_server(page_size: int = 100) -> Server:
    server = Server("test-server", "2.0", instructions="hello", page_size=page_size)

    @server.tool
    async def add(a: int, b: Annotated[int, msgspec.Meta(ge=0)] = 2) -> int:
        """Add two numbers."""
        return a + b

    @server.tool
    def shout(text: str) -> str:
        return text.upper()

    @server.tool
    async def point(x: int) -> Point:
        return Point(x, x * 2)

    @server.tool
    async def boom() -> str:
        raise RuntimeError("it broke")

    @server.tool(name="picture", structured_output=False)
    async def picture() -> Any:
        return [Image(b"\x89PNG", "image/png"), {"type": "text", "text": "a picture"}]

    @server.tool
    async def progress(steps: int, ctx: Context) -> str:
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        await ctx.info("finished")
        return "done"

    @server.resource("test://static", mime_type="text/plain")
    def static() -> str:
        return "static text"

    @server.resource("test://blob", mime_type="application/octet-stream")
    def blob() -> bytes:
        return b"\x00\x01"

    @server.resource("test://items/{id}/data", mime_type="application/json")
    def item(id: str) -> str:
        return f'{{"id": "{id}"}}'

    @server.prompt
    def greet(name: str, greeting: str = "Hello") -> str:
        """A greeting."""
        return f"{greeting}, {name}!"

    @server.completion("greet", "name")
    def names(value: str, context_arguments: dict[str, str]) -> list[str]:
        return [n for n in ("alice", "albert", "bob") if n.startswith(value)]

    return server


@pytest.mark.parametrize("version", ALL)
async def test_tools(version: str) -> None:
    async with connected(make_server(), version) as c:
        tools = {t.name: t for t in (await c.request("tools/list")).tools}
        assert set(tools) == {"add", "shout", "point", "boom", "picture", "progress"}
        assert tools["add"].inputSchema["properties"]["b"]["minimum"] == 0
        assert tools["add"].inputSchema["required"] == ["a"]
        assert tools["add"].description == "Add two numbers."
        r = await c.request("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
        assert text_of(r) == "5"
        structured = version >= "2025-06-18"
        if structured:
            assert r.structuredContent == {"result": 5}
        else:
            assert "outputSchema" not in msgspec.to_builtins(tools["add"])
        assert text_of(await c.request("tools/call", {"name": "shout", "arguments": {"text": "hi"}})) == "HI"
        r = await c.request("tools/call", {"name": "point", "arguments": {"x": 2}})
        if structured:
            assert r.structuredContent == {"x": 2, "y": 4}
        assert text_of(r) == '{"x":2,"y":4}'
        r = await c.request("tools/call", {"name": "boom"})
        assert r.isError is True and "it broke" in text_of(r)
        r = await c.request("tools/call", {"name": "picture"})
        assert r.content[0].data == base64.b64encode(b"\x89PNG").decode() and r.content[1].text == "a picture"
        with pytest.raises(McpError) as info:
            await c.request("tools/call", {"name": "nope"})
        assert info.value.code == -32602
        # invalid arguments: a protocol error before 2025-11-25, a tool error from then on
        if version >= "2025-11-25":
            r = await c.request("tools/call", {"name": "add", "arguments": {"a": "x"}})
            assert r.isError is True and "Invalid arguments" in text_of(r)
        else:
            with pytest.raises(McpError) as info:
                await c.request("tools/call", {"name": "add", "arguments": {"b": -1, "a": 1}})
            assert info.value.code == -32602


@pytest.mark.parametrize("version", ALL)
async def test_resources(version: str) -> None:
    async with connected(make_server(), version) as c:
        listed = (await c.request("resources/list")).resources
        assert [r.uri for r in listed] == ["test://static", "test://blob"]
        templates = (await c.request("resources/templates/list")).resourceTemplates
        assert templates[0].uriTemplate == "test://items/{id}/data"
        r = await c.request("resources/read", {"uri": "test://static"})
        assert r.contents[0].text == "static text" and r.contents[0].mimeType == "text/plain"
        r = await c.request("resources/read", {"uri": "test://blob"})
        assert base64.b64decode(r.contents[0].blob) == b"\x00\x01"
        r = await c.request("resources/read", {"uri": "test://items/123/data"})
        assert r.contents[0].text == '{"id": "123"}'
        with pytest.raises(McpError) as info:
            await c.request("resources/read", {"uri": "test://missing"})
        assert info.value.code == (-32602 if _versions.is_stateless(version) else -32002)


@pytest.mark.parametrize("version", ALL)
async def test_prompts_and_completions(version: str) -> None:
    async with connected(make_server(), version) as c:
        prompts = (await c.request("prompts/list")).prompts
        assert prompts[0].name == "greet" and prompts[0].arguments[0].required is True
        r = await c.request("prompts/get", {"name": "greet", "arguments": {"name": "Ann"}})
        assert r.messages[0].content.text == "Hello, Ann!"
        with pytest.raises(McpError) as info:
            await c.request("prompts/get", {"name": "greet", "arguments": {}})
        assert info.value.code == -32602 and "name" in info.value.message
        if "completion/complete" in _versions.module_for(version).METHODS:
            r = await c.request(
                "completion/complete",
                {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "al"}},
            )
            assert r.completion.values == ["alice", "albert"] and r.completion.total == 2


async def test_pagination_and_bad_cursor() -> None:
    async with connected(make_server(page_size=2), LEGACY[0]) as c:
        names = []
        cursor = None
        while True:
            page = await c.request("tools/list", {"cursor": cursor} if cursor else None)
            names += [t.name for t in page.tools]
            cursor = page.nextCursor if page.nextCursor is not msgspec.UNSET else None
            if not cursor:
                break
        assert len(names) == 6 and len(set(names)) == 6
        with pytest.raises(McpError) as info:
            await c.request("tools/list", {"cursor": "garbage!"})
        assert info.value.code == -32602


async def test_logging_level_filters_messages() -> None:
    server = make_server()
    a, b = open_memory_transport_pair()
    seen: list[Any] = []

    async def on_log(session: Any, method: str, params: Any) -> None:
        seen.append(params)

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            versions=[LEGACY[0]],
            notification_handlers={"notifications/message": on_log},
        ) as c:
            await c.connect()
            await c.request("tools/call", {"name": "progress", "arguments": {"steps": 1}})
            await c.request("logging/setLevel", {"level": "info"})
            await c.request("tools/call", {"name": "progress", "arguments": {"steps": 1}})
            await c.request("logging/setLevel", {"level": "error"})
            await c.request("tools/call", {"name": "progress", "arguments": {"steps": 1}})
            with trio.fail_after(5):
                while not seen:
                    await trio.sleep(0.01)
            await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert [p.data for p in seen] == ["finished"]


async def test_list_changed_is_sent_to_open_sessions() -> None:
    server = make_server()
    a, b = open_memory_transport_pair()
    changes: list[str] = []

    async def on_change(session: Any, method: str, params: Any) -> None:
        changes.append(method)

    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            versions=[LEGACY[0]],
            notification_handlers={"notifications/tools/list_changed": on_change},
        ) as c:
            await c.connect()

            @server.tool
            def extra() -> str:
                return "x"

            with trio.fail_after(5):
                while not changes:
                    await trio.sleep(0.01)
            assert "extra" in [t.name for t in (await c.request("tools/list")).tools]
        nursery.cancel_scope.cancel()
    assert changes == ["notifications/tools/list_changed"]


# ------------------------------------------- asking the client, 2026-07-28

MODERN = [v for v in ALL if _versions.is_stateless(v)]
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


def asking_server() -> Server:
    server = Server("asking", "1")

    @server.tool
    async def needs_sampling(ctx: Context) -> str:
        await ctx.sample("q")
        return "sampled"

    @server.tool
    async def needs_sampling_tools(ctx: Context) -> str:
        tool = {"name": "t", "inputSchema": {"type": "object"}}
        await ctx.sample("q", tools=[tool])
        return "sampled"

    @server.tool
    async def needs_form(ctx: Context) -> str:
        await ctx.elicit("name?", FORM)
        return "elicited"

    @server.tool
    async def needs_url(ctx: Context) -> str:
        await ctx.elicit_url("go there", "https://example.com/consent")
        return "sent"

    @server.tool
    async def needs_roots(ctx: Context) -> str:
        await ctx.list_roots()
        return "listed"

    @server.tool
    async def tolerant(ctx: Context) -> str:
        try:
            await ctx.sample("q")
        except LocalProtocolError as exc:
            return f"no sampling ({type(exc).__name__})"
        return "sampled"

    @server.tool
    async def keyed(ctx: Context) -> str:
        first = await ctx.elicit("first?", FORM, input_key="answer")
        again = await ctx.elicit("again?", FORM, input_key="answer")
        derived = await ctx.elicit("derived?", FORM)
        return " ".join(r.content["name"] for r in (first, again, derived))

    @server.tool
    async def bad_key(ctx: Context) -> str:
        await ctx.elicit("?", FORM, input_key="")
        return "unreachable"

    return server


@pytest.mark.parametrize("version", MODERN)
@pytest.mark.parametrize(
    ("tool", "capabilities", "required"),
    [
        ("needs_sampling", {}, {"sampling": {}}),
        ("needs_sampling_tools", {"sampling": {}}, {"sampling": {"tools": {}}}),
        ("needs_form", {}, {"elicitation": {}}),
        ("needs_form", {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
        ("needs_url", {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
        ("needs_roots", {"sampling": {}}, {"roots": {}}),
    ],
)
async def test_a_missing_client_capability_is_32021(
    version: str, tool: str, capabilities: dict[str, Any], required: dict[str, Any]
) -> None:
    async with connected(asking_server(), version, capabilities) as c:
        with pytest.raises(McpError) as info:
            await c.request("tools/call", {"name": tool})
    assert info.value.code == -32021
    assert info.value.data == {"requiredCapabilities": required}
    assert "Missing required client capability" in info.value.message


@pytest.mark.parametrize("version", ALL)
async def test_a_missing_capability_is_a_local_protocol_error_to_the_handler(version: str) -> None:
    async with connected(asking_server(), version) as c:
        r = await c.request("tools/call", {"name": "tolerant"})
        assert text_of(r) == "no sampling (MissingClientCapability)"  # (a LocalProtocolError too)
        if version not in MODERN:  # uncaught: a tool error, as before
            r = await c.request("tools/call", {"name": "needs_sampling"})
            assert r.isError is True and "'sampling' capability" in text_of(r)
    assert issubclass(MissingClientCapability, LocalProtocolError)
    assert issubclass(MissingClientCapability, McpError)


@pytest.mark.parametrize("version", MODERN)
async def test_input_keys_named_by_the_handler(version: str) -> None:
    params: dict[str, Any] = {"name": "keyed"}
    async with connected(asking_server(), version, {"elicitation": {}}) as c:
        first = await c.request("tools/call", params)
        assert first.resultType == "input_required"
        keys = list(first.inputRequests)
        assert keys[:1] == ["answer"]  # the first ask ends the round
        answers: dict[str, Any] = {}
        state = first.requestState
        names = iter(["ann", "bob", "cy"])
        result = first
        while result.resultType == "input_required":
            for key in result.inputRequests:
                answers[key] = {"action": "accept", "content": {"name": next(names)}}
            state = result.requestState
            result = await c.request(
                "tools/call", {**params, "inputResponses": answers, "requestState": state}
            )
        assert text_of(result) == "ann bob cy"
        assert list(answers)[:2] == ["answer", "answer-1"]  # a name used again gets a suffix
        assert list(answers)[2].startswith("elicitation.create-")  # derived from the request
        r = await c.request("tools/call", {"name": "bad_key"})
        assert r.isError is True and "input key" in text_of(r)
