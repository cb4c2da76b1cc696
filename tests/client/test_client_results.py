"""The client's result types: the same in every revision, never UNSET, tolerant of a peer's
extras (kept and logged) unless ``strict=True``."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from mcp_trio import RemoteProtocolError
from mcp_trio.client.results import (
    Annotations,
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    ListToolsResult,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
    ToolExecution,
    UnknownContent,
)
from mcp_trio.types import _versions
from tests._support.client import connected, raw_peer

ALL = list(_versions.SUPPORTED_VERSIONS)


def unset_anywhere(value: Any) -> bool:
    if value is msgspec.UNSET:
        return True
    if isinstance(value, msgspec.Struct):
        return any(unset_anywhere(getattr(value, f)) for f in value.__struct_fields__)
    if isinstance(value, list | tuple):
        return any(unset_anywhere(v) for v in value)
    if isinstance(value, dict):
        return any(unset_anywhere(v) for v in value.values())
    return False


@pytest.mark.parametrize("version", ALL)
async def test_the_same_types_in_every_revision(version: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, "mcp_trio.client")
    async with connected(version, strict=True) as client:
        page = await client.list_tools()
        assert isinstance(page, ListToolsResult) and page.nextCursor is None and page.extra == {}
        tools = {t.name: t for t in await client.list_all_tools()}
        assert all(isinstance(t, Tool) for t in tools.values())
        assert tools["echo"].description == "Echo." and tools["echo"].inputSchema["type"] == "object"
        assert tools["echo"].icons == [] and tools["echo"].meta is None
        structured = version >= "2025-06-18"
        assert (tools["point"].outputSchema is not None) is structured

        result = await client.call_tool("echo", {"text": "hi"})
        assert isinstance(result, CallToolResult)
        assert result.content == [TextContent(text="hi")] and result.content[0].type == "text"
        assert result.isError is False and result.meta is None
        assert result.structuredContent == ({"result": "hi"} if structured else None)
        failed = await client.call_tool("boom")
        assert failed.isError is True
        shaped = await client.call_tool("point")
        assert shaped.structuredContent == ({"x": 1, "y": 2} if structured else None)

        read = await client.read_resource("test://note")
        assert isinstance(read, ReadResourceResult)
        assert read.contents == [
            TextResourceContents(uri="test://note", text="a note", mimeType="text/plain")
        ]
        (blob,) = (await client.read_resource("test://blob")).contents
        assert isinstance(blob, BlobResourceContents) and blob.blob == "AAE="

        prompts = await client.list_all_prompts()
        assert [type(p) for p in prompts] == [Prompt] and prompts[0].arguments[0].required is True
        got = await client.get_prompt("plain", {"topic": "trio"})
        assert isinstance(got, GetPromptResult)
        assert got.messages == [PromptMessage(role="user", content=TextContent(text="talk about trio"))]

        done = await client.complete("topic", "t", prompt="plain")
        assert isinstance(done, CompleteResult) and done.completion.values == ["trio", "tasks"]
        assert (await client.list_all_resources())[0].uri in ("test://note", "test://blob")
        assert await client.list_all_resource_templates() == []

        for value in (page, result, failed, shaped, read, prompts, got, done):
            assert not unset_anywhere(value)
    # our server sends nothing its revision lacks (its "boom" tool logs its error, as it should)
    assert [r for r in caplog.records if r.name.startswith("mcp_trio.client")] == []


async def test_to_builtins_gives_the_wire_shape() -> None:
    async with connected("2025-06-18") as client:
        shaped = await client.call_tool("point")
    assert msgspec.to_builtins(shaped) == {
        "content": [{"type": "text", "text": '{"x":1,"y":2}'}],
        "structuredContent": {"x": 1, "y": 2},
    }


def test_shared_members_come_last_as_on_the_wire() -> None:
    # annotations, _meta, extra and a page's cursor and cache hints are declared
    # once (keyword-only bases); they still come after each type's own members.
    link = ResourceLink("file:///x", "x", size=3, annotations=Annotations(priority=1.0), meta={"m": 1})
    assert list(msgspec.to_builtins(link)) == ["type", "uri", "name", "size", "annotations", "_meta"]
    image = ImageContent("AA==", "image/png", annotations=Annotations(priority=0.5), meta={})
    assert msgspec.json.encode(image) == (
        b'{"type":"image","data":"AA==","mimeType":"image/png","annotations":{"priority":0.5},"_meta":{}}'
    )
    page = ListToolsResult([], nextCursor="c", ttlMs=5, cacheScope="private", meta={"k": 0})
    assert list(msgspec.to_builtins(page)) == ["tools", "nextCursor", "ttlMs", "cacheScope", "_meta"]
    read = ReadResourceResult([TextResourceContents("u", "t", meta={"a": 1})], ttlMs=1)
    assert msgspec.to_builtins(read) == {
        "contents": [{"uri": "u", "text": "t", "_meta": {"a": 1}}],
        "ttlMs": 1,
    }
    for cls in (TextContent, ImageContent, EmbeddedResource, ResourceLink, Tool, Prompt, CallToolResult):
        assert cls.__struct_fields__[-2:] == ("meta", "extra"), cls
    assert ResourceLink.__struct_fields__[:2] == ("uri", "name")


# ------------------------------------------------------------ a peer's extras


LINK = {"type": "resource_link", "uri": "file:///x", "name": "x"}
VIDEO = {"type": "video", "url": "https://example.com/v.mp4"}


def tool_result(*blocks: Any, **members: Any) -> Callable[[str, Any], Any]:
    return lambda method, params: {"content": list(blocks), **members}


async def test_a_resource_link_in_2025_03_26_is_kept_with_one_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, "mcp_trio.client")
    async with raw_peer("2025-03-26", tool_result({"type": "text", "text": "see"}, LINK)) as client:
        result = await client.call_tool("x")
        assert result.content == [TextContent(text="see"), ResourceLink(uri="file:///x", name="x")]
        await client.call_tool("x")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "content type 'resource_link' is not defined in 2025-03-26" in warnings[0].getMessage()
    assert "$.result.content[1]" in warnings[0].getMessage()
    assert sum("resource_link" in r.getMessage() for r in caplog.records) == 2  # then at debug level


async def test_unknown_blocks_and_members_are_kept() -> None:
    embedded = {"type": "resource", "resource": {"uri": "a://b", "blob": "AA==", "hash": "h"}}
    answer = tool_result(
        VIDEO,
        {"type": "image", "data": "AA==", "mimeType": "image/png", "alt": "a dot"},
        embedded,
        structuredContent={"n": 1},
        fancy=[1],
        resultType="complete",
    )
    async with raw_peer("2025-03-26", answer) as client:
        result = await client.call_tool("x")
    video, image, resource = result.content
    assert isinstance(video, UnknownContent) and video.type == "video" and video.raw == VIDEO
    assert isinstance(image, ImageContent) and image.extra == {"alt": "a dot"}
    assert isinstance(resource, EmbeddedResource)
    assert resource.resource == BlobResourceContents(uri="a://b", blob="AA==", extra={"hash": "h"})
    # a later revision's member goes to its field, an unknown one to extra
    assert result.structuredContent == {"n": 1} and result.extra == {"fancy": [1]}


async def test_unknown_members_of_list_items_are_kept() -> None:
    def answer(method: str, params: Any) -> Any:
        assert method == "tools/list"
        return {"tools": [{"name": "t", "inputSchema": {"type": "object"}, "color": "red"}]}

    async with raw_peer("2025-06-18", answer) as client:
        (tool,) = await client.list_all_tools()
    assert tool.extra == {"color": "red"}


async def test_a_tools_execution_is_typed() -> None:
    def answer(method: str, params: Any) -> Any:
        tool = {"name": "t", "inputSchema": {"type": "object"}}
        return {"tools": [{**tool, "execution": {"taskSupport": "optional"}}, tool]}

    async with raw_peer("2025-11-25", answer) as client:
        with_tasks, plain = await client.list_all_tools()
    assert with_tasks.execution == ToolExecution(taskSupport="optional")
    assert plain.execution is None


@pytest.mark.parametrize(
    ("answer", "complaint"),
    [
        (tool_result(LINK), "content type 'resource_link' is not defined in 2025-03-26 (strict)"),
        (tool_result(VIDEO), "unknown content type 'video' (strict)"),
        (tool_result(structuredContent={}), "'structuredContent' not defined for CallToolResult"),
        (tool_result({"type": "text", "text": "a", "x": 1}), "'x' not defined for TextContent"),
    ],
)
async def test_strict_rejects_what_the_revision_does_not_define(answer: Any, complaint: str) -> None:
    async with raw_peer("2025-03-26", answer, strict=True) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("x")
    assert complaint in str(info.value) and "invalid result for tools/call" in str(info.value)


@pytest.mark.parametrize(
    ("answer", "complaint"),
    [
        (
            tool_result({"type": "text", "text": 5}),
            "Expected `str`, got `int` - at `$.result.content[0].text`",
        ),
        (
            tool_result({"text": "a"}),
            "a content block without a string `type` - at `$.result.content[0]`",
        ),
        (tool_result("a"), "expected a content block, got str - at `$.result.content[0]`"),
        (lambda m, p: {"isError": True}, "missing required field `content` - at `$.result`"),
        (tool_result(isError="yes"), "Expected `bool`, got `str` - at `$.result.isError`"),
    ],
)
async def test_broken_results_fail_even_when_tolerant(answer: Any, complaint: str) -> None:
    async with raw_peer("2025-06-18", answer) as client:
        with pytest.raises(RemoteProtocolError) as info:
            await client.call_tool("x")
    assert complaint in str(info.value)


@pytest.mark.parametrize(
    "data",
    [
        {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"content": [], "isError": True, "_meta": {"k": 1}, "structuredContent": {"a": 1}},
        {"content": [{"type": "text", "text": "a", "_meta": {}}]},
        {"content": [{"type": "text", "text": "a"}], "more": 1},
        {"content": [{"type": "image", "data": "", "mimeType": "image/png"}]},
    ],
)
def test_the_call_tool_shortcut_agrees_with_the_general_reader(data: dict[str, Any]) -> None:
    from mcp_trio.client._reading import Reader, call_tool_result, read

    reader = Reader("2025-11-25", False, "tools/call", set())
    assert call_tool_result(reader, data) == read(reader, data, CallToolResult)
