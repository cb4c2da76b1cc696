"""What prompt and resource functions may return, read back by a real client.

A prompt returns text, :class:`UserMessage` / :class:`AssistantMessage` (or ``Message``
with a role), alone or in a list; a resource returns text, bytes, or a JSON value that is
served as JSON text (``application/json`` unless the resource declares its type).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import msgspec
import pytest

from mcp_trio import McpError
from mcp_trio.client import connect_server
from mcp_trio.client.results import (
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from mcp_trio.server import AssistantMessage, Audio, Image, Message, Server, UserMessage


def prompt_server() -> Server:
    server = Server("prompts", "1.0")

    @server.prompt
    def conversation(topic: str) -> list[Message]:
        return [
            UserMessage(f"Explain {topic}."),
            AssistantMessage("Gladly. A quiz after?"),
            UserMessage(Image(b"\x89PNG", "image/png")),
            AssistantMessage({"type": "resource", "resource": {"uri": "notes://a", "text": "a note"}}),
        ]

    @server.prompt
    def single() -> Message:
        return AssistantMessage("only me")

    @server.prompt
    def mixed() -> list[str | Message]:
        return ["plain text is the user's", Message("with a role", role="assistant")]

    return server


async def test_prompt_message_helpers_become_prompt_messages() -> None:
    async with connect_server(prompt_server()) as client:
        result = await client.get_prompt("conversation", {"topic": "nurseries"})
        assert [m.role for m in result.messages] == ["user", "assistant", "user", "assistant"]
        first, second, image, resource = (m.content for m in result.messages)
        assert isinstance(first, TextContent) and first.text == "Explain nurseries."
        assert isinstance(second, TextContent) and second.text == "Gladly. A quiz after?"
        assert isinstance(image, ImageContent) and image.mimeType == "image/png"
        assert isinstance(resource, EmbeddedResource)
        assert isinstance(resource.resource, TextResourceContents)
        assert resource.resource.text == "a note"

        alone = await client.get_prompt("single")
        assert [(m.role, getattr(m.content, "text", None)) for m in alone.messages] == [
            ("assistant", "only me")
        ]
        mixed = await client.get_prompt("mixed")
        assert [(m.role, getattr(m.content, "text", None)) for m in mixed.messages] == [
            ("user", "plain text is the user's"),
            ("assistant", "with a role"),
        ]


def test_message_helpers_refuse_what_a_message_cannot_hold() -> None:
    with pytest.raises(TypeError, match=r"not list.*several messages"):
        UserMessage(["two", "blocks"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"content block dict with a 'type'.*without 'type'"):
        AssistantMessage({"text": "no type"})
    with pytest.raises(ValueError, match="'user' or 'assistant', not 'system'"):
        Message("hi", role="system")  # type: ignore[arg-type]
    assert UserMessage("a") == Message("a")
    assert UserMessage("a") != AssistantMessage("a")
    assert repr(AssistantMessage("a")) == "AssistantMessage('a')"
    assert Message(Audio(b"x")).wire()["content"]["type"] == "audio"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Place(msgspec.Struct):
    name: str
    at: Point


def resource_server() -> Server:
    server = Server("resources", "1.0")

    @server.resource("data://config")
    def config() -> dict[str, Any]:
        return {"debug": True, "retries": 3}

    @server.resource("data://list")
    def items() -> list[int]:
        return [1, 2, 3]

    @server.resource("data://place")
    def place() -> Place:
        return Place("home", Point(1, 2))

    @server.resource("data://geo", mime_type="application/geo+json")
    def geo() -> dict[str, Any]:
        return {"type": "Point", "coordinates": [1.0, 2.0]}

    @server.resource("data://text", mime_type="text/plain")
    def text() -> str:
        return "as written"

    @server.resource("data://broken")
    def broken() -> object:
        return object()

    return server


async def test_a_resource_returning_a_json_value_is_json_text() -> None:
    async with connect_server(resource_server()) as client:
        for uri, expected in (
            ("data://config", {"debug": True, "retries": 3}),
            ("data://list", [1, 2, 3]),
            ("data://place", {"name": "home", "at": {"x": 1, "y": 2}}),
        ):
            (item,) = (await client.read_resource(uri)).contents
            assert isinstance(item, TextResourceContents)
            assert (item.uri, item.mimeType) == (uri, "application/json")
            assert json.loads(item.text) == expected

        (geo,) = (await client.read_resource("data://geo")).contents
        assert isinstance(geo, TextResourceContents)
        assert geo.mimeType == "application/geo+json"
        assert json.loads(geo.text) == {"type": "Point", "coordinates": [1.0, 2.0]}

        (text,) = (await client.read_resource("data://text")).contents
        assert isinstance(text, TextResourceContents)
        assert (text.text, text.mimeType) == ("as written", "text/plain")


async def test_a_resource_returning_what_json_cannot_hold_is_an_error_naming_it() -> None:
    async with connect_server(resource_server()) as client:
        with pytest.raises(McpError) as caught:
            await client.read_resource("data://broken")
        assert caught.value.code == -32603
        assert "data://broken: its function returned a object, which has no JSON form" in caught.value.message
