"""The client's handlers for the server's asks get the types of mcp_trio.client.asks in every
revision (absent members None, never UNSET) and may answer with those types or with dicts."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import trio

from mcp_trio.client import connect_server
from mcp_trio.client._handlers import _log_message, _to_wire
from mcp_trio.client.asks import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    LogMessage,
    ModelHint,
    ModelPreferences,
    Root,
    SamplingMessage,
    ToolResultContent,
    ToolUseContent,
)
from mcp_trio.client.results import Annotations, TextContent, Tool, UnknownContent
from mcp_trio.server import Context, Server
from mcp_trio.types import _versions

ALL = list(_versions.SUPPORTED_VERSIONS)
WITH_ELICITATION = [v for v in ALL if v >= "2025-06-18"]
WITH_SAMPLING_TOOLS = [v for v in ALL if v >= "2025-11-25"]
FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


def no_unset(value: Any) -> None:
    """Nothing anywhere in ``value`` is msgspec.UNSET."""
    assert value is not msgspec.UNSET
    if isinstance(value, msgspec.Struct):
        for name in value.__struct_fields__:
            no_unset(getattr(value, name))
    elif isinstance(value, dict):
        for member in value.values():
            no_unset(member)
    elif isinstance(value, list):
        for member in value:
            no_unset(member)


def make_server() -> Server:
    server = Server("asks", "1")

    @server.tool
    async def ask_llm(ctx: Context) -> str:
        answer = await ctx.sample("2+2?", max_tokens=5, systemPrompt="be brief")
        return f"{answer.model}: {answer.content.text}"

    @server.tool
    async def ask_user(ctx: Context) -> str:
        answer = await ctx.elicit("your name?", FORM)
        return f"{answer.action} {answer.content['name']}"

    @server.tool
    async def roots(ctx: Context) -> str:
        listed = await ctx.list_roots()
        return ", ".join(f"{r.uri} {r.name}" for r in listed.roots)

    return server


@pytest.mark.parametrize("version", ALL)
async def test_sampling_gets_typed_params_and_may_answer_typed(version: str) -> None:
    seen: list[CreateMessageParams] = []

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        seen.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="4"), model="m", stopReason="endTurn"
        )

    async with connect_server(make_server(), versions=[version], sampling=sampling) as client:
        result = await client.call_tool("ask_llm")
    assert result.content == [TextContent(text="m: 4")]
    params = seen[0]
    assert type(params) is CreateMessageParams
    assert params.maxTokens == 5 and params.systemPrompt == "be brief"
    assert params.messages == [SamplingMessage(role="user", content=TextContent(text="2+2?"))]
    assert params.temperature is None and params.modelPreferences is None
    assert params.tools == [] and params.stopSequences == [] and params.meta is None
    no_unset(params)


@pytest.mark.parametrize("version", WITH_ELICITATION)
async def test_elicitation_gets_typed_params_and_may_answer_typed(version: str) -> None:
    seen: list[ElicitParams] = []

    async def elicitation(params: ElicitParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "ada"})

    async with connect_server(make_server(), versions=[version], elicitation=elicitation) as client:
        result = await client.call_tool("ask_user")
    assert result.content == [TextContent(text="accept ada")]
    params = seen[0]
    assert type(params) is ElicitParams
    assert params.message == "your name?" and params.mode == "form"
    assert params.requestedSchema == FORM
    assert params.url is None and params.elicitationId is None
    no_unset(params)


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("how", ["list", "sync", "async"])
async def test_roots_may_be_root_objects(version: str, how: str) -> None:
    listed = [Root(uri="file:///a", name="a"), {"uri": "file:///b", "name": "b"}]

    def sync() -> list[Any]:
        return listed

    async def async_() -> list[Any]:
        return listed

    roots: Any = {"list": listed, "sync": sync, "async": async_}[how]
    async with connect_server(make_server(), versions=[version], roots=roots) as client:
        result = await client.call_tool("roots")
    assert result.content == [TextContent(text="file:///a a, file:///b b")]


@pytest.mark.parametrize("version", WITH_SAMPLING_TOOLS)
async def test_sampling_with_tools_reads_tool_blocks(version: str) -> None:
    server = Server("tool-blocks", "1")
    messages = [
        {"role": "user", "content": {"type": "text", "text": "weather?"}},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "u1", "name": "weather", "input": {"city": "Oslo"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "toolUseId": "u1",
                    "content": [{"type": "text", "text": "rain"}],
                }
            ],
        },
    ]

    @server.tool
    async def agent(ctx: Context) -> str:
        tools = [{"name": "weather", "inputSchema": {"type": "object"}}]
        answer = await ctx.sample(
            messages,
            tools=tools,
            toolChoice={"mode": "auto"},
            modelPreferences={"hints": [{"name": "small"}], "speedPriority": 1},
        )
        return str(answer.content.text)

    seen: list[CreateMessageParams] = []

    async def sampling(params: CreateMessageParams) -> dict[str, Any]:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "rainy"}, "model": "m"}

    async with connect_server(server, versions=[version], sampling=sampling, sampling_tools=True) as client:
        result = await client.call_tool("agent")
    assert result.content == [TextContent(text="rainy")]
    params = seen[0]
    assert params.tools == [Tool(name="weather", inputSchema={"type": "object"})]
    assert params.toolChoice is not None and params.toolChoice.mode == "auto"
    assert params.modelPreferences == ModelPreferences(hints=[ModelHint(name="small")], speedPriority=1)
    assert params.messages[1].content == [ToolUseContent(id="u1", name="weather", input={"city": "Oslo"})]
    assert params.messages[2].content == [
        ToolResultContent(toolUseId="u1", content=[TextContent(text="rain")])
    ]
    no_unset(params)


@pytest.mark.parametrize("version", ALL)
async def test_on_log_gets_log_messages(version: str) -> None:
    server = Server("logs", "1")

    @server.tool
    async def work(ctx: Context) -> str:
        await ctx.log("warning", {"disk": "full"}, logger="db")
        await ctx.info("plain")
        return "done"

    logs: list[LogMessage] = []
    both = trio.Event()

    async def on_log(message: LogMessage) -> None:
        logs.append(message)
        if len(logs) == 2:
            both.set()

    async with connect_server(server, versions=[version], on_log=on_log) as client:
        await client.set_log_level("info")
        await client.call_tool("work")
        with trio.fail_after(5):
            await both.wait()
    assert logs == [
        LogMessage(level="warning", data={"disk": "full"}, logger="db"),
        LogMessage(level="info", data="plain"),
    ]
    assert logs[1].logger is None
    no_unset(logs)


def test_a_log_message_that_does_not_fit_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert _log_message({"level": "info", "data": [1]}) == LogMessage(level="info", data=[1])
    assert _log_message({"level": "loud", "data": 1}) is None
    assert "not passed to on_log" in caplog.text


def test_answers_go_out_by_their_wire_names() -> None:
    answer = CreateMessageResult(
        role="assistant",
        content=[
            TextContent(text="hi", annotations=Annotations(priority=1.0), extra={"x-new": 1}),
            UnknownContent(raw={"type": "future", "data": 2}),
            ToolUseContent(id="u", name="n", input={}, meta={"k": "v"}),
        ],
        model="m",
    )
    assert _to_wire(answer) == {
        "content": [
            {"type": "text", "text": "hi", "annotations": {"priority": 1.0}, "x-new": 1},
            {"type": "future", "data": 2},
            {"type": "tool_use", "id": "u", "name": "n", "input": {}, "_meta": {"k": "v"}},
        ],
        "model": "m",
        "role": "assistant",
    }
    assert list(_to_wire(answer))[0] == "role"
    assert _to_wire(ElicitResult(action="decline")) == {"action": "decline"}
    assert _to_wire({"roots": [Root(uri="file:///"), {"uri": "file:///x"}]}) == {
        "roots": [{"uri": "file:///"}, {"uri": "file:///x"}]
    }
