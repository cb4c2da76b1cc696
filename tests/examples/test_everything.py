"""The everything example server (examples/everything.py) in every protocol revision.

The fixtures are checked against what the official conformance suite expects of
them (names, texts, content types, schemas), written out here independently of
the example's own constants.  The server runs in-process over the memory
transport and is driven with the low-level client session; tests that wait
for the fixtures' pauses run on a virtual clock (``autojump_clock``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest
import trio
from trio.testing import MockClock

from mcp_trio import (
    McpError,
    RequestContext,
    Session,
    open_memory_transport_pair,
    open_session,
    open_stdio_client,
)
from mcp_trio.types import _versions
from tests._support.everything import PROMPTS, TOOLS, check_png, check_wav
from tests._support.paths import EVERYTHING, ROOT

EXAMPLE = EVERYTHING

ALL = list(_versions.SUPPORTED_VERSIONS)
LEGACY = [v for v in ALL if not _versions.is_stateless(v)]
# Server-to-client requests in the stateless era go through multi-round-trip
# results; here they are exercised on the revisions with real requests.
WITH_AUDIO = [v for v in ALL if v >= "2025-03-26"]
WITHOUT_AUDIO = [v for v in ALL if v < "2025-03-26"]
ELICITATION = [v for v in LEGACY if v >= "2025-06-18"]
NO_ELICITATION = [v for v in LEGACY if v < "2025-06-18"]
# SEP-1034 (defaults for every type) and SEP-1330 (titled and multi-select enums)
RICH_FORMS = [v for v in LEGACY if v >= "2025-11-25"]
NO_RICH_FORMS = [v for v in ELICITATION if v < "2025-11-25"]

#: Task support of the tools that have it (2025-11-25 ``execution.taskSupport``).
TASK_SUPPORT = {
    "slow_compute": "optional",
    "failing_job": "required",
    "protocol_error_job": "optional",
    "confirm_delete": "optional",
    "multi_input": "optional",
    "test_tool_with_task": "required",
}
TEMPLATE = "test://template/{id}/data"
ELICITATION_TOOLS = [
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
]


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("everything_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("everything_example", module)
    spec.loader.exec_module(module)
    return module


everything = load_example()

Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@asynccontextmanager
async def connected(
    version: str,
    *,
    capabilities: dict[str, Any] | None = None,
    handlers: dict[str, Handler] | None = None,
    notifications: dict[str, Any] | None = None,
) -> AsyncIterator[Session]:
    """A client session on ``version`` with the everything server at the other end."""
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(everything.server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": "everything-test", "version": "1"},
            capabilities=capabilities or {},
            versions=[version],
            request_handlers=handlers or {},
            notification_handlers=notifications or {},
        ) as client:
            with trio.fail_after(5):
                assert await client.connect() == version
            yield client
        nursery.cancel_scope.cancel()


async def call(client: Session, name: str, arguments: dict[str, Any] | None = None, **kw: Any) -> Any:
    with trio.fail_after(5):
        return await client.request("tools/call", {"name": name, "arguments": arguments or {}}, **kw)


def only_text(result: Any) -> str:
    assert len(result.content) == 1
    assert type(result.content[0]).__name__ == "TextContent"
    return str(result.content[0].text)


def is_error(result: Any) -> bool:
    return result.isError is True


class Inbox:
    """What a notification handler received, and a way to wait for it."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self._changed = trio.Event()

    def add(self, item: Any) -> None:
        self.items.append(item)
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, count: int) -> None:
        with trio.fail_after(5):
            while len(self.items) < count:
                await self._changed.wait()


# -------------------------------------------------------------------- tools


@pytest.mark.parametrize("version", ALL)
async def test_tools_list(version: str) -> None:
    async with connected(version) as client:
        with trio.fail_after(5):
            tools = {t.name: t for t in (await client.request("tools/list")).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert isinstance(tool.description, str) and tool.description, tool.name
        assert tool.inputSchema["type"] == "object", tool.name
    for name, argument in (("test_sampling", "prompt"), ("test_elicitation", "message")):
        schema = tools[name].inputSchema
        assert schema["required"] == [argument]
        assert schema["properties"][argument]["type"] == "string"
        assert schema["properties"][argument]["description"]


@pytest.mark.parametrize("version", ALL)
async def test_json_schema_2020_12_tool_keeps_its_schema(version: str) -> None:
    async with connected(version) as client:
        with trio.fail_after(5):
            tools = {t.name: t for t in (await client.request("tools/list")).tools}
        schema = tools["json_schema_2020_12_tool"].inputSchema
        # SEP-1613: the dialect, $defs and additionalProperties reach the client ...
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$defs"]["address"]["properties"] == {
            "street": {"type": "string"},
            "city": {"type": "string"},
        }
        assert schema["properties"]["address"] == {"$ref": "#/$defs/address"}
        assert schema["additionalProperties"] is False
        # ... and so do the SEP-2106 keywords: $anchor, composition, conditionals.
        assert schema["$defs"]["address"]["$anchor"] == "addressDef"
        assert schema["allOf"] == [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}]
        assert schema["if"]["properties"]["contactMethod"] == {"const": "phone"}
        assert schema["then"] == {"required": ["phone"]}
        assert schema["else"] == {"required": ["email"]}
        r = await call(client, "json_schema_2020_12_tool", {"name": "Ann", "email": "a@example.com"})
        assert not is_error(r)
        assert only_text(r) == (
            'JSON Schema 2020-12 tool called with: {"name":"Ann","email":"a@example.com"}'
        )


@pytest.mark.parametrize("version", ALL)
async def test_content_tools(version: str, autojump_clock: MockClock) -> None:
    async with connected(version) as client:
        r = await call(client, "test_simple_text")
        assert only_text(r) == "This is a simple text response for testing."
        assert not is_error(r)

        r = await call(client, "test_image_content")
        (image,) = r.content
        assert type(image).__name__ == "ImageContent" and image.mimeType == "image/png"
        check_png(image.data)

        r = await call(client, "test_embedded_resource")
        (embedded,) = r.content
        assert type(embedded).__name__ == "EmbeddedResource"
        assert msgspec.to_builtins(embedded.resource) == {
            "uri": "test://embedded-resource",
            "mimeType": "text/plain",
            "text": "This is an embedded resource content.",
        }

        r = await call(client, "test_multiple_content_types")
        text, image, resource = r.content
        assert [type(c).__name__ for c in r.content] == [
            "TextContent",
            "ImageContent",
            "EmbeddedResource",
        ]
        assert text.text == "Multiple content types test:"
        assert image.mimeType == "image/png"
        check_png(image.data)
        assert resource.resource.uri == "test://mixed-content-resource"
        assert resource.resource.mimeType == "application/json"
        assert json.loads(resource.resource.text) == {"test": "data", "value": 123}

        r = await call(client, "test_error_handling")
        assert is_error(r)  # a tool error, not a JSON-RPC error
        assert only_text(r) == "This tool intentionally returns an error for testing"

        r = await call(client, "test_reconnection")
        assert not is_error(r)
        assert only_text(r) == "Reconnection test completed"


@pytest.mark.parametrize("version", WITH_AUDIO)
async def test_audio_content(version: str) -> None:
    async with connected(version) as client:
        r = await call(client, "test_audio_content")
    (audio,) = r.content
    assert type(audio).__name__ == "AudioContent" and audio.mimeType == "audio/wav"
    check_wav(audio.data)


@pytest.mark.parametrize("version", WITHOUT_AUDIO)
async def test_audio_content_before_audio_existed(version: str) -> None:
    async with connected(version) as client:
        r = await call(client, "test_audio_content")
    assert is_error(r)
    assert only_text(r) == f"Audio content does not exist in protocol revision {version}"


@pytest.mark.parametrize("version", ALL)
async def test_tool_with_logging(version: str, autojump_clock: MockClock) -> None:
    logs = Inbox()

    async def on_message(session: Session, method: str, params: Any) -> None:
        logs.add(params)

    async with connected(version, notifications={"notifications/message": on_message}) as client:
        if _versions.is_stateless(version):
            # No logging/setLevel any more: each request opts in through _meta.
            params = {
                "name": "test_tool_with_logging",
                "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": "debug"},
            }
            with trio.fail_after(5):
                r = await client.request("tools/call", params)
        else:
            # No level set yet: the server sends no log messages at all.
            r = await call(client, "test_tool_with_logging")
            assert only_text(r) == "Tool with logging executed successfully"
            with trio.fail_after(5):
                assert msgspec.to_builtins(await client.request("logging/setLevel", {"level": "debug"})) == {}
            assert logs.items == []
            r = await call(client, "test_tool_with_logging")
        assert only_text(r) == "Tool with logging executed successfully"
        await logs.wait_for(3)
        await trio.sleep(0.02)
    assert [(p.level, p.data) for p in logs.items] == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]


@pytest.mark.parametrize("version", LEGACY)
async def test_log_level_above_info_silences_the_tool(version: str, autojump_clock: MockClock) -> None:
    logs = Inbox()

    async def on_message(session: Session, method: str, params: Any) -> None:
        logs.add(params)

    async with connected(version, notifications={"notifications/message": on_message}) as client:
        with trio.fail_after(5):
            await client.request("logging/setLevel", {"level": "warning"})
        r = await call(client, "test_tool_with_logging")
        assert only_text(r) == "Tool with logging executed successfully"
        await trio.sleep(0.05)
    assert logs.items == []


@pytest.mark.parametrize("version", ALL)
async def test_tool_with_progress(version: str, autojump_clock: MockClock) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async with connected(version) as client:
        r = await call(client, "test_tool_with_progress", on_progress=on_progress)
        token = only_text(r)  # the progress token the client sent (here the request id)
        assert token.isdigit()
        assert [(p, t) for p, t, _ in progress] == [(0, 100), (50, 100), (100, 100)]
        if version >= "2025-03-26":  # the progress message exists from 2025-03-26 on
            assert [m for _, _, m in progress] == [f"Completed step {n} of 100" for n in (0, 50, 100)]
        # Without a progress token the tool still runs, and says so.
        r = await call(client, "test_tool_with_progress")
        assert only_text(r) == "no progress token was given"


# ----------------------------------------------------- sampling and elicitation


def sampling_client(seen: list[Any], reply: str = "This is a test response from the client") -> Handler:
    async def create_message(ctx: RequestContext, params: Any) -> Any:
        seen.append(msgspec.to_builtins(params))
        return {
            "role": "assistant",
            "content": {"type": "text", "text": reply},
            "model": "test-model",
            "stopReason": "endTurn",
        }

    return create_message


@pytest.mark.parametrize("version", LEGACY)
async def test_sampling(version: str) -> None:
    seen: list[Any] = []
    async with connected(
        version,
        capabilities={"sampling": {}},
        handlers={"sampling/createMessage": sampling_client(seen)},
    ) as client:
        r = await call(client, "test_sampling", {"prompt": "Test prompt for sampling"})
    assert not is_error(r)
    assert only_text(r) == "LLM response: This is a test response from the client"
    (request,) = seen
    assert request["maxTokens"] == 100
    assert request["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Test prompt for sampling"}}
    ]


@pytest.mark.parametrize("version", LEGACY)
async def test_sampling_without_the_capability(version: str) -> None:
    async with connected(version) as client:
        r = await call(client, "test_sampling", {"prompt": "hello"})
    assert is_error(r)
    assert only_text(r).startswith("Sampling not supported or error:")
    assert "sampling" in only_text(r)


@pytest.mark.parametrize("version", LEGACY)
async def test_sampling_refused_by_the_client(version: str) -> None:
    async def refuse(ctx: RequestContext, params: Any) -> Any:
        raise McpError(-1, "User rejected sampling request")

    async with connected(
        version, capabilities={"sampling": {}}, handlers={"sampling/createMessage": refuse}
    ) as client:
        r = await call(client, "test_sampling", {"prompt": "hello"})
    assert is_error(r)
    assert "User rejected sampling request" in only_text(r)


def elicitation_client(seen: list[Any], action: str, content: dict[str, Any] | None) -> Handler:
    async def elicit(ctx: RequestContext, params: Any) -> Any:
        seen.append(msgspec.to_builtins(params))
        result: dict[str, Any] = {"action": action}
        if content is not None:
            result["content"] = content
        return result

    return elicit


@pytest.mark.parametrize("version", ELICITATION)
async def test_elicitation(version: str) -> None:
    seen: list[Any] = []
    answer = {"username": "testuser", "email": "test@example.com"}
    async with connected(
        version,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": elicitation_client(seen, "accept", answer)},
    ) as client:
        r = await call(client, "test_elicitation", {"message": "Please provide your information"})
    assert not is_error(r)
    assert only_text(r) == (
        'User response: action=accept, content={"username":"testuser","email":"test@example.com"}'
    )
    (request,) = seen
    assert request["message"] == "Please provide your information"
    assert request["requestedSchema"] == {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }


@pytest.mark.parametrize("version", ELICITATION)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicitation_declined(version: str, action: str) -> None:
    seen: list[Any] = []
    async with connected(
        version,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": elicitation_client(seen, action, None)},
    ) as client:
        r = await call(client, "test_elicitation", {"message": "Who are you?"})
    assert only_text(r) == f"User response: action={action}, content={{}}"
    assert len(seen) == 1


@pytest.mark.parametrize("version", RICH_FORMS)
async def test_elicitation_sep1034_defaults(version: str) -> None:
    seen: list[Any] = []
    answer = {
        "name": "Jane Smith",
        "age": 25,
        "score": 88.0,
        "status": "inactive",
        "verified": False,
    }
    async with connected(
        version,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": elicitation_client(seen, "accept", answer)},
    ) as client:
        r = await call(client, "test_elicitation_sep1034_defaults")
    assert not is_error(r)
    text = only_text(r)
    prefix = "Elicitation completed: action=accept, content="
    assert text.startswith(prefix) and json.loads(text[len(prefix) :]) == answer
    properties = seen[0]["requestedSchema"]["properties"]
    expected = {
        "name": ("string", "John Doe"),
        "age": ("integer", 30),
        "score": ("number", 95.5),
        "status": ("string", "active"),
        "verified": ("boolean", True),
    }
    assert {k: (v["type"], v["default"]) for k, v in properties.items()} == expected
    # the types of the defaults are exact: 30 is an integer, True a boolean
    assert type(properties["age"]["default"]) is int
    assert type(properties["verified"]["default"]) is bool
    assert properties["status"]["enum"] == ["active", "inactive", "pending"]
    assert all(p["description"] for p in properties.values())


@pytest.mark.parametrize("version", RICH_FORMS)
async def test_elicitation_sep1330_enums(version: str) -> None:
    seen: list[Any] = []
    answer = {
        "untitledSingle": "option1",
        "titledSingle": "value1",
        "legacyEnum": "opt1",
        "untitledMulti": ["option1", "option2"],
        "titledMulti": ["value1", "value2"],
    }
    async with connected(
        version,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": elicitation_client(seen, "accept", answer)},
    ) as client:
        r = await call(client, "test_elicitation_sep1330_enums")
    text = only_text(r)
    prefix = "Elicitation completed: action=accept, content="
    assert text.startswith(prefix) and json.loads(text[len(prefix) :]) == answer
    p = seen[0]["requestedSchema"]["properties"]
    # 1. untitled single-select: a plain enum
    assert p["untitledSingle"]["type"] == "string"
    assert p["untitledSingle"]["enum"] == ["option1", "option2", "option3"]
    assert "oneOf" not in p["untitledSingle"] and "enumNames" not in p["untitledSingle"]
    # 2. titled single-select: oneOf const/title, no enum
    assert p["titledSingle"]["type"] == "string" and "enum" not in p["titledSingle"]
    assert p["titledSingle"]["oneOf"] == [
        {"const": "value1", "title": "First Option"},
        {"const": "value2", "title": "Second Option"},
        {"const": "value3", "title": "Third Option"},
    ]
    # 3. legacy titled: enum with enumNames of the same length
    assert p["legacyEnum"]["enum"] == ["opt1", "opt2", "opt3"]
    assert p["legacyEnum"]["enumNames"] == ["Option One", "Option Two", "Option Three"]
    # 4. untitled multi-select: array of enum items
    assert p["untitledMulti"]["type"] == "array"
    assert p["untitledMulti"]["items"] == {
        "type": "string",
        "enum": ["option1", "option2", "option3"],
    }
    # 5. titled multi-select: array of anyOf const/title items
    assert p["titledMulti"]["type"] == "array" and "enum" not in p["titledMulti"]["items"]
    assert p["titledMulti"]["items"]["anyOf"] == [
        {"const": "value1", "title": "First Choice"},
        {"const": "value2", "title": "Second Choice"},
        {"const": "value3", "title": "Third Choice"},
    ]
    for name in ("untitledMulti", "titledMulti"):
        assert (p[name]["minItems"], p[name]["maxItems"]) == (1, 3)


@pytest.mark.parametrize(
    ("version", "tool"),
    [(v, "test_elicitation") for v in ELICITATION]
    + [(v, t) for v in RICH_FORMS for t in ELICITATION_TOOLS[1:]],
)
async def test_elicitation_without_the_capability(version: str, tool: str) -> None:
    async with connected(version) as client:
        r = await call(client, tool, {"message": "hi"} if tool == "test_elicitation" else {})
    assert is_error(r)
    text = only_text(r)
    assert text.startswith("Elicitation not supported or error: ")
    assert "elicitation" in text.removeprefix("Elicitation") and "capability" in text


@pytest.mark.parametrize(
    ("version", "tool"),
    [(v, t) for v in NO_ELICITATION for t in ELICITATION_TOOLS]
    + [(v, t) for v in NO_RICH_FORMS for t in ELICITATION_TOOLS[1:]],
)
async def test_elicitation_before_it_existed(version: str, tool: str) -> None:
    seen: list[Any] = []
    async with connected(
        version,
        capabilities={"elicitation": {}},
        handlers={"elicitation/create": elicitation_client(seen, "accept", {})},
    ) as client:
        r = await call(client, tool, {"message": "hi"} if tool == "test_elicitation" else {})
    assert is_error(r)
    what = "elicitation" if version < "2025-06-18" else "this elicitation form"
    assert only_text(r) == (
        f"Elicitation not supported or error: {what} does not exist in protocol revision {version}"
    )
    assert seen == []


# ---------------------------------------------------------------- resources


@pytest.mark.parametrize("version", ALL)
async def test_resources(version: str) -> None:
    async with connected(version) as client:
        with trio.fail_after(5):
            listed = (await client.request("resources/list")).resources
            templates = (await client.request("resources/templates/list")).resourceTemplates
            text = await client.request("resources/read", {"uri": "test://static-text"})
            binary = await client.request("resources/read", {"uri": "test://static-binary"})
            data = await client.request("resources/read", {"uri": "test://template/123/data"})
            watched = await client.request("resources/read", {"uri": "test://watched-resource"})
    assert {r.uri: r.mimeType for r in listed} == {
        "test://static-text": "text/plain",
        "test://static-binary": "image/png",
        "test://watched-resource": "text/plain",
    }
    for resource in listed:
        assert resource.name and resource.description, resource.uri
    (template,) = templates
    assert template.uriTemplate == TEMPLATE and template.mimeType == "application/json"
    assert template.name and template.description

    assert msgspec.to_builtins(text.contents) == [
        {
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource.",
        }
    ]
    (blob,) = binary.contents
    assert (blob.uri, blob.mimeType) == ("test://static-binary", "image/png")
    check_png(blob.blob)
    (item,) = data.contents
    assert (item.uri, item.mimeType) == ("test://template/123/data", "application/json")
    assert json.loads(item.text) == {"id": "123", "templateTest": True, "data": "Data for ID: 123"}
    (watched_item,) = watched.contents
    assert (watched_item.uri, watched_item.text) == (
        "test://watched-resource",
        "Watched resource content",
    )


@pytest.mark.parametrize("version", LEGACY)
async def test_subscribe_to_the_watched_resource(version: str, autojump_clock: MockClock) -> None:
    updates = Inbox()

    async def on_updated(session: Session, method: str, params: Any) -> None:
        updates.add(params.uri)

    uri = "test://watched-resource"
    async with connected(version, notifications={"notifications/resources/updated": on_updated}) as client:
        with trio.fail_after(5):
            assert client.peer_capabilities["resources"]["subscribe"] is True
            assert msgspec.to_builtins(await client.request("resources/subscribe", {"uri": uri})) == {}
            await everything.server.notify_resource_updated(uri)
            await updates.wait_for(1)
            assert updates.items == [uri]
            result = await client.request("resources/unsubscribe", {"uri": uri})
            assert msgspec.to_builtins(result) == {}
            await everything.server.notify_resource_updated(uri)
            await client.request("resources/list")  # a round trip: the update would be here by now
            await trio.sleep(0.02)
    assert updates.items == [uri]


# ------------------------------------------------------------------ prompts


@pytest.mark.parametrize("version", ALL)
async def test_prompts(version: str) -> None:
    async with connected(version) as client:
        with trio.fail_after(5):
            prompts = {p.name: p for p in (await client.request("prompts/list")).prompts}
            simple = await client.request("prompts/get", {"name": "test_simple_prompt"})
            with_args = await client.request(
                "prompts/get",
                {
                    "name": "test_prompt_with_arguments",
                    "arguments": {"arg1": "hello", "arg2": "world"},
                },
            )
            embedded = await client.request(
                "prompts/get",
                {
                    "name": "test_prompt_with_embedded_resource",
                    "arguments": {"resourceUri": "test://example-resource"},
                },
            )
            image = await client.request("prompts/get", {"name": "test_prompt_with_image"})
    assert set(prompts) == PROMPTS
    for prompt in prompts.values():
        assert prompt.description, prompt.name
    arguments = {name: [(a.name, a.required) for a in (p.arguments or [])] for name, p in prompts.items()}
    assert arguments == {
        "test_simple_prompt": [],
        "test_prompt_with_arguments": [("arg1", True), ("arg2", True)],
        "test_prompt_with_embedded_resource": [("resourceUri", True)],
        "test_prompt_with_image": [],
        "test_input_required_result_prompt": [],
    }

    def messages(result: Any) -> list[Any]:
        return msgspec.to_builtins(result.messages)  # type: ignore[no-any-return]

    assert messages(simple) == [
        {
            "role": "user",
            "content": {"type": "text", "text": "This is a simple prompt for testing."},
        }
    ]
    assert messages(with_args) == [
        {
            "role": "user",
            "content": {
                "type": "text",
                "text": "Prompt with arguments: arg1='hello', arg2='world'",
            },
        }
    ]
    assert messages(embedded) == [
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {
                    "uri": "test://example-resource",
                    "mimeType": "text/plain",
                    "text": "Embedded resource content for testing.",
                },
            },
        },
        {
            "role": "user",
            "content": {"type": "text", "text": "Please process the embedded resource above."},
        },
    ]
    first, second = messages(image)
    assert first["role"] == "user" and first["content"]["type"] == "image"
    assert first["content"]["mimeType"] == "image/png"
    check_png(first["content"]["data"])
    assert second == {
        "role": "user",
        "content": {"type": "text", "text": "Please analyze the image above."},
    }


# -------------------------------------------------------------- completions


@pytest.mark.parametrize("version", ALL)
async def test_completions(version: str) -> None:
    prompt_ref = {"type": "ref/prompt", "name": "test_prompt_with_arguments"}
    template_ref = {"type": "ref/resource", "uri": TEMPLATE}

    async with connected(version) as client:

        async def complete(ref: dict[str, str], name: str, value: str) -> list[str]:
            with trio.fail_after(5):
                r = await client.request(
                    "completion/complete", {"ref": ref, "argument": {"name": name, "value": value}}
                )
            assert r.completion.total == len(r.completion.values)
            assert r.completion.hasMore is False
            return list(r.completion.values)

        assert await complete(prompt_ref, "arg1", "al") == ["alpha", "alpine"]
        assert await complete(prompt_ref, "arg1", "G") == ["gamma"]
        assert await complete(prompt_ref, "arg1", "") == [
            "alpha",
            "alpine",
            "beta",
            "gamma",
            "delta",
        ]
        assert await complete(prompt_ref, "arg1", "zzz") == []
        assert await complete(prompt_ref, "arg2", "a") == []  # only arg1 completes
        assert await complete(template_ref, "id", "1") == ["1", "123"]
        assert await complete(template_ref, "id", "4") == ["42"]


# ------------------------------------- multi-round-trip input (SEP-2322)

MODERN = [v for v in ALL if _versions.is_stateless(v)]
INPUT_CAPS: dict[str, Any] = {"sampling": {}, "elicitation": {}, "roots": {}}
NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
ALICE = {"action": "accept", "content": {"name": "Alice"}}
PARIS = {
    "role": "assistant",
    "content": {"type": "text", "text": "Paris"},
    "model": "test-model",
    "stopReason": "endTurn",
}
ROOTS = {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}
OK = {"action": "accept", "content": {"ok": True}}


async def first_round(client: Session, method: str, params: dict[str, Any]) -> Any:
    with trio.fail_after(5):
        result = await client.request(method, params)
    assert result.resultType == "input_required", result
    assert isinstance(result.requestState, str) and result.requestState
    return result


def asked(result: Any) -> dict[str, Any]:
    """``inputRequests`` as plain data: key -> {"method", "params"}."""
    return msgspec.to_builtins(result.inputRequests)  # type: ignore[no-any-return]


async def retry(
    client: Session, method: str, params: dict[str, Any], previous: Any, answers: dict[str, Any]
) -> Any:
    with trio.fail_after(5):
        return await client.request(
            method,
            {**params, "inputResponses": answers, "requestState": previous.requestState},
        )


@pytest.mark.parametrize("version", MODERN)
@pytest.mark.parametrize(
    ("tool", "methods", "answers", "text"),
    [
        (
            "test_input_required_result_elicitation",
            {"user_name": "elicitation/create"},
            {"user_name": ALICE},
            "Hello, Alice!",
        ),
        (
            "test_input_required_result_sampling",
            {"capital_question": "sampling/createMessage"},
            {"capital_question": PARIS},
            "LLM response: Paris",
        ),
        (
            "test_input_required_result_list_roots",
            {"client_roots": "roots/list"},
            {"client_roots": ROOTS},
            "Client roots: file:///test/root",
        ),
        (
            "test_input_required_result_request_state",
            {"confirm": "elicitation/create"},
            {"confirm": OK},
            "state-ok: the request state verified; ok=True",
        ),
        (
            "test_input_required_result_multiple_inputs",
            {
                "user_name": "elicitation/create",
                "greeting": "sampling/createMessage",
                "client_roots": "roots/list",
            },
            {"user_name": ALICE, "greeting": PARIS, "client_roots": ROOTS},
            "name=Alice; greeting=Paris; roots=1",
        ),
        (
            "test_input_required_result_tampered_state",
            {"confirm": "elicitation/create"},
            {"confirm": OK},
            "Confirmed: ok=True",
        ),
    ],
)
async def test_input_required_tools(
    version: str, tool: str, methods: dict[str, str], answers: dict[str, Any], text: str
) -> None:
    params = {"name": tool, "arguments": {}}
    async with connected(version, capabilities=INPUT_CAPS) as client:
        first = await first_round(client, "tools/call", params)
        assert {key: r["method"] for key, r in asked(first).items()} == methods
        result = await retry(client, "tools/call", params, first, answers)
    assert result.resultType == "complete" and not is_error(result)
    assert only_text(result) == text


@pytest.mark.parametrize("version", MODERN)
async def test_input_requests_carry_what_the_suite_specifies(version: str) -> None:
    async with connected(version, capabilities=INPUT_CAPS) as client:
        first = await first_round(
            client,
            "tools/call",
            {"name": "test_input_required_result_multiple_inputs", "arguments": {}},
        )
    requests = asked(first)
    assert requests["user_name"]["params"] == {
        "mode": "form",
        "message": "What is your name?",
        "requestedSchema": NAME_SCHEMA,
    }
    assert requests["greeting"]["params"] == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Generate a greeting"}}],
        "maxTokens": 50,
    }
    assert requests["client_roots"]["params"] == {}


@pytest.mark.parametrize("version", MODERN)
async def test_input_required_multi_round(version: str) -> None:
    params = {"name": "test_input_required_result_multi_round", "arguments": {}}
    async with connected(version, capabilities=INPUT_CAPS) as client:
        first = await first_round(client, "tools/call", params)
        assert list(asked(first)) == ["step1"]
        second = await retry(client, "tools/call", params, first, {"step1": ALICE})
        assert second.resultType == "input_required"
        assert list(asked(second)) == ["step2"]
        assert asked(second)["step2"]["params"]["message"] == "Step 2: What is your favorite color?"
        assert second.requestState != first.requestState
        color = {"action": "accept", "content": {"color": "blue"}}
        third = await retry(client, "tools/call", params, second, {"step2": color})
    assert only_text(third) == "Alice likes blue"


@pytest.mark.parametrize("version", MODERN)
async def test_input_required_rejects_a_tampered_state(version: str) -> None:
    params = {"name": "test_input_required_result_tampered_state", "arguments": {}}
    async with connected(version, capabilities=INPUT_CAPS) as client:
        first = await first_round(client, "tools/call", params)
        with pytest.raises(McpError) as info, trio.fail_after(5):
            await client.request(
                "tools/call",
                {
                    **params,
                    "inputResponses": {"confirm": OK},
                    "requestState": first.requestState + "-TAMPERED",
                },
            )
    assert info.value.code == -32602 and "requestState" in info.value.message


@pytest.mark.parametrize("version", MODERN)
@pytest.mark.parametrize(
    ("capabilities", "keys"),
    [
        ({"sampling": {}}, {"sampling"}),
        ({"elicitation": {}, "roots": {}}, {"elicitation", "roots"}),
        (INPUT_CAPS, {"sampling", "elicitation", "roots"}),
    ],
)
async def test_input_required_respects_client_capabilities(
    version: str, capabilities: dict[str, Any], keys: set[str]
) -> None:
    params = {"name": "test_input_required_result_capabilities", "arguments": {}}
    async with connected(version, capabilities=capabilities) as client:
        first = await first_round(client, "tools/call", params)
        assert set(asked(first)) == keys
        answers = {"sampling": PARIS, "elicitation": ALICE, "roots": ROOTS}
        result = await retry(client, "tools/call", params, first, {k: answers[k] for k in keys})
    assert only_text(result).startswith("Answered: ")
    assert set(only_text(result).removeprefix("Answered: ").split(", ")) == keys


@pytest.mark.parametrize("version", MODERN)
async def test_input_required_without_any_input_capability(version: str) -> None:
    async with connected(version) as client:
        r = await call(client, "test_input_required_result_capabilities")
    assert only_text(r).startswith("The client declared none of sampling, elicitation and roots")


@pytest.mark.parametrize("version", MODERN)
async def test_input_required_prompt(version: str) -> None:
    params = {"name": "test_input_required_result_prompt"}
    async with connected(version, capabilities=INPUT_CAPS) as client:
        first = await first_round(client, "prompts/get", params)
        requests = asked(first)
        assert list(requests) == ["user_context"]
        assert requests["user_context"]["params"]["message"] == ("What context should the prompt use?")
        answer = {"action": "accept", "content": {"context": "test context"}}
        result = await retry(client, "prompts/get", params, first, {"user_context": answer})
    assert msgspec.to_builtins(result.messages) == [
        {"role": "user", "content": {"type": "text", "text": "Use this context: test context"}}
    ]


@pytest.mark.parametrize("version", ELICITATION)
async def test_input_tools_ask_with_requests_in_older_revisions(version: str) -> None:
    seen: list[str] = []

    async def elicit(ctx: RequestContext, params: Any) -> Any:
        seen.append("elicitation/create")
        return ALICE

    async def sample(ctx: RequestContext, params: Any) -> Any:
        seen.append("sampling/createMessage")
        return PARIS

    async def roots(ctx: RequestContext, params: Any) -> Any:
        seen.append("roots/list")
        return ROOTS

    handlers = {"elicitation/create": elicit, "sampling/createMessage": sample, "roots/list": roots}
    async with connected(version, capabilities=INPUT_CAPS, handlers=handlers) as client:
        r = await call(client, "test_input_required_result_multiple_inputs")
        assert only_text(r) == "name=Alice; greeting=Paris; roots=1"
        assert sorted(seen) == ["elicitation/create", "roots/list", "sampling/createMessage"]
        with trio.fail_after(5):
            prompt = await client.request("prompts/get", {"name": "test_input_required_result_prompt"})
    assert prompt.messages[0].content.text == "Use this context: (no answer)"


# ------------------------------------- stateless diagnostics (SEP-2575)


@pytest.mark.parametrize("version", ALL)
async def test_missing_capability(version: str) -> None:
    async with connected(version) as client:
        if _versions.is_stateless(version):
            with pytest.raises(McpError) as info:
                await call(client, "test_missing_capability")
            assert info.value.code == -32021
            assert info.value.data == {"requiredCapabilities": {"sampling": {}}}
        else:
            r = await call(client, "test_missing_capability")
            assert is_error(r) and "sampling" in only_text(r)


@pytest.mark.parametrize("version", MODERN)
async def test_streaming_elicitation_answers_with_input_required(version: str) -> None:
    logs = Inbox()

    async def on_message(session: Session, method: str, params: Any) -> None:
        logs.add(params)

    params = {"name": "test_streaming_elicitation", "arguments": {}}
    async with connected(
        version,
        capabilities={"elicitation": {}},
        notifications={"notifications/message": on_message},
    ) as client:
        first = await first_round(client, "tools/call", params)
        assert {k: r["method"] for k, r in asked(first).items()} == {"confirm": "elicitation/create"}
        yes = {"action": "accept", "content": {"confirm": True}}
        r = await retry(client, "tools/call", params, first, {"confirm": yes})
        await trio.sleep(0.05)
    assert only_text(r) == "Streaming elicitation answered: confirm=True"
    assert logs.items == []  # no log level in _meta: no log messages


@pytest.mark.parametrize("version", ALL)
async def test_logging_tool(version: str) -> None:
    logs = Inbox()

    async def on_message(session: Session, method: str, params: Any) -> None:
        logs.add(params)

    async with connected(version, notifications={"notifications/message": on_message}) as client:
        r = await call(client, "test_logging_tool")
        assert only_text(r) == "Logged three messages"
        await trio.sleep(0.05)
        assert logs.items == []  # nobody asked for a level
        with trio.fail_after(5):
            if _versions.is_stateless(version):
                meta = {"io.modelcontextprotocol/logLevel": "warning"}
                params = {"name": "test_logging_tool", "arguments": {}, "_meta": meta}
                await client.request("tools/call", params)
            else:
                await client.request("logging/setLevel", {"level": "warning"})
                await call(client, "test_logging_tool")
        await logs.wait_for(2)
        await trio.sleep(0.05)
    assert [(p.level, p.data) for p in logs.items] == [
        ("warning", "test_logging_tool: warning"),
        ("error", "test_logging_tool: error"),
    ]


# --------------------------------------- HTTP request headers (SEP-2243)


@pytest.mark.parametrize("version", ALL)
async def test_custom_headers_tool(version: str) -> None:
    async with connected(version) as client:
        with trio.fail_after(5):
            tools = {t.name: t for t in (await client.request("tools/list")).tools}
        schema = tools["test_custom_headers"].inputSchema
        assert schema["properties"]["region"]["x-mcp-header"] == "Region"
        assert schema["properties"]["region"]["type"] == "string"
        assert schema["properties"]["priority"]["x-mcp-header"] == "Priority"
        assert "x-mcp-header" not in schema["properties"]["query"]
        assert schema["required"] == ["region"]
        r = await call(client, "test_custom_headers", {"region": "eu-west1", "priority": 3, "query": "q"})
    assert only_text(r) == "region=eu-west1, priority=3, query=q"
    assert everything.server.tool_header_annotations("test_custom_headers") == [
        (("region",), "Region"),
        (("priority",), "Priority"),
    ]


# ------------------------------------------- Tasks extension (SEP-2663)

EXT = _versions.TASKS_EXTENSION
TASK_CAPS: dict[str, Any] = {"elicitation": {}, "extensions": {EXT: {}}}


async def until_terminal(client: Session, task_id: str, *statuses: str) -> Any:
    wanted = statuses or ("completed", "failed", "cancelled")
    with trio.fail_after(30):
        while True:
            got = await client.request("tasks/get", {"taskId": task_id})
            if got.status in wanted:
                return got
            await trio.sleep(0.05)


@pytest.mark.parametrize("version", MODERN)
async def test_task_tools_with_the_extension(version: str, autojump_clock: MockClock) -> None:
    async with connected(version, capabilities=TASK_CAPS) as client:
        r = await call(client, "greet", {"name": "World"})
        assert r.resultType == "complete" and only_text(r) == "Hello, World!"
        # legacy hint ignored, never promotes a sync tool
        with trio.fail_after(5):
            r = await client.request(
                "tools/call",
                {"name": "greet", "arguments": {"name": "x"}, "task": {"ttl": 60000}},
            )
        assert only_text(r) == "Hello, x!"

        created = await call(client, "slow_compute", {"seconds": 2, "label": "lifecycle"})
        assert created.resultType == "task" and created.status == "working"
        done = await until_terminal(client, created.taskId)
        assert done.status == "completed"
        assert done.result["content"] == [{"type": "text", "text": "Computed lifecycle in 2 s"}]

        failing = await call(client, "failing_job")
        done = await until_terminal(client, failing.taskId)
        assert done.status == "completed" and done.result["isError"] is True

        broken = await call(client, "protocol_error_job")
        done = await until_terminal(client, broken.taskId)
        assert done.status == "failed" and done.result is msgspec.UNSET
        assert done.error.code == -32603

        long = await call(client, "slow_compute", {"seconds": 60})
        with trio.fail_after(5):
            assert msgspec.to_builtins(await client.request("tasks/cancel", {"taskId": long.taskId})) == {
                "resultType": "complete"
            }
        assert (await until_terminal(client, long.taskId)).status == "cancelled"


@pytest.mark.parametrize("version", MODERN)
async def test_task_tools_ask_through_task_input_requests(version: str, autojump_clock: MockClock) -> None:
    async with connected(version, capabilities=TASK_CAPS) as client:
        created = await call(client, "confirm_delete", {"filename": "notes.txt"})
        waiting = await until_terminal(client, created.taskId, "input_required")
        requests = msgspec.to_builtins(waiting.inputRequests)
        assert list(requests) == ["confirm"]
        assert requests["confirm"]["method"] == "elicitation/create"
        assert requests["confirm"]["params"]["message"] == "Delete notes.txt?"
        yes = {"action": "accept", "content": {"confirm": True}}
        with trio.fail_after(5):
            await client.request(
                "tasks/update", {"taskId": created.taskId, "inputResponses": {"confirm": yes}}
            )
        done = await until_terminal(client, created.taskId)
        assert done.status == "completed"
        assert done.result["content"][0]["text"].startswith("Deleted notes.txt")

        # two requests outstanding at once, answered one at a time
        created = await call(client, "multi_input")
        with trio.fail_after(5):
            while True:
                waiting = await client.request("tasks/get", {"taskId": created.taskId})
                if waiting.status == "input_required" and len(waiting.inputRequests) == 2:
                    break
                await trio.sleep(0.05)
        assert set(waiting.inputRequests) == {"name", "confirm"}
        named = {"action": "accept", "content": {"name": "partial-1", "confirm": True}}
        with trio.fail_after(5):
            await client.request(
                "tasks/update", {"taskId": created.taskId, "inputResponses": {"name": named}}
            )
            partial = await client.request("tasks/get", {"taskId": created.taskId})
        assert partial.status == "input_required" and list(partial.inputRequests) == ["confirm"]
        with trio.fail_after(5):
            await client.request(
                "tasks/update", {"taskId": created.taskId, "inputResponses": {"confirm": yes}}
            )
        done = await until_terminal(client, created.taskId)
        assert done.result["content"][0]["text"] == "name=partial-1, confirm=True"


@pytest.mark.parametrize("version", MODERN)
async def test_tool_with_task_asks_first_then_becomes_a_task(version: str, autojump_clock: MockClock) -> None:
    params = {"name": "test_tool_with_task", "arguments": {}}
    async with connected(version, capabilities=TASK_CAPS) as client:
        first = await first_round(client, "tools/call", params)
        assert list(asked(first)) == ["user_name"]
        created = await retry(client, "tools/call", params, first, {"user_name": ALICE})
        assert created.resultType == "task" and created.taskId
        done = await until_terminal(client, created.taskId)
    assert done.status == "completed"
    assert done.result["content"] == [{"type": "text", "text": "Hello, Alice! (finished as a task)"}]


@pytest.mark.parametrize("version", MODERN)
async def test_task_tools_without_the_extension(version: str, autojump_clock: MockClock) -> None:
    async with connected(version, capabilities={"elicitation": {}}) as client:
        r = await call(client, "slow_compute", {"seconds": 0, "label": "inline"})
        assert r.resultType == "complete" and only_text(r) == "Computed inline in 0 s"
        for required in ("failing_job", "test_tool_with_task"):
            with pytest.raises(McpError) as info:
                await call(client, required)
            assert info.value.code == -32021
            assert info.value.data == {"requiredCapabilities": {"extensions": {EXT: {}}}}


async def test_task_support_in_2025_11_25() -> None:
    async with connected("2025-11-25") as client:
        with trio.fail_after(5):
            tools = (await client.request("tools/list")).tools
        support = {t.name: t.execution.taskSupport for t in tools if t.execution is not msgspec.UNSET}
        assert support == TASK_SUPPORT
        with pytest.raises(McpError) as info:
            await call(client, "failing_job")  # required, called without a task
        assert info.value.code == -32601


# ---------------------------------------------------------------- handshake


@pytest.mark.parametrize("version", ALL)
async def test_server_info_and_capabilities(version: str) -> None:
    async with connected(version) as client:
        info, caps = client.peer_info, client.peer_capabilities
    assert info["name"] == "mcp-trio-everything" and info["version"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert caps["resources"]["subscribe"] is True
    assert caps["logging"] == {}
    if version >= "2025-03-26":  # the completions capability exists from 2025-03-26 on
        assert caps["completions"] == {}
    # Tasks: the Tasks extension from 2026-07-28 on, where the 2025-11-25
    # ``tasks`` capability no longer exists and is not advertised.
    if _versions.is_stateless(version):
        assert caps["extensions"] == {"io.modelcontextprotocol/tasks": {}}
        assert "tasks" not in caps
    elif version == "2025-11-25":
        assert caps["tasks"] == {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


# ------------------------------------------- over stdio, via `mcp-trio serve`

SERVE = [sys.executable, "-m", "mcp_trio._cli", "serve", str(EXAMPLE)]


async def test_everything_over_stdio_through_mcp_trio_serve(tmp_path: Path) -> None:
    """One real server process, started by ``mcp-trio serve``, exercised end to end."""
    version = "2025-11-25"
    logs = Inbox()
    sampled: list[Any] = []
    elicited: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_message(session: Session, method: str, params: Any) -> None:
        logs.add((params.level, params.data))

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    answer = {"username": "stdio-user", "email": "stdio@example.com"}
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    with (tmp_path / "stderr.txt").open("w+b") as stderr, trio.fail_after(20):
        async with open_stdio_client(SERVE, env=env, cwd=tmp_path, stderr=stderr) as proc:
            async with open_session(
                proc.channel,
                role="client",
                info={"name": "everything-stdio-test", "version": "1"},
                capabilities={"sampling": {}, "elicitation": {}},
                versions=[version],
                request_handlers={
                    "sampling/createMessage": sampling_client(sampled, "over stdio"),
                    "elicitation/create": elicitation_client(elicited, "accept", answer),
                },
                notification_handlers={"notifications/message": on_message},
            ) as client:
                assert await client.connect() == version
                assert client.peer_info["name"] == "mcp-trio-everything"

                tools = (await client.request("tools/list")).tools
                assert {t.name for t in tools} == TOOLS
                assert only_text(await call(client, "test_simple_text")) == (
                    "This is a simple text response for testing."
                )
                check_png((await call(client, "test_image_content")).content[0].data)
                check_wav((await call(client, "test_audio_content")).content[0].data)
                r = await call(client, "test_multiple_content_types")
                assert [type(c).__name__ for c in r.content] == [
                    "TextContent",
                    "ImageContent",
                    "EmbeddedResource",
                ]
                r = await call(client, "test_error_handling")
                assert is_error(r) and "intentionally" in only_text(r)

                await client.request("logging/setLevel", {"level": "debug"})
                await call(client, "test_tool_with_logging")
                r = await call(client, "test_tool_with_progress", on_progress=on_progress)
                assert only_text(r).isdigit()

                r = await call(client, "test_sampling", {"prompt": "Say hi"})
                assert only_text(r) == "LLM response: over stdio"
                assert sampled[0]["messages"][0]["content"]["text"] == "Say hi"
                r = await call(client, "test_elicitation", {"message": "Who?"})
                assert only_text(r) == (
                    'User response: action=accept, content={"username":"stdio-user",'
                    '"email":"stdio@example.com"}'
                )
                assert elicited[0]["requestedSchema"]["required"] == ["username", "email"]

                r = await client.request("resources/read", {"uri": "test://template/7/data"})
                assert json.loads(r.contents[0].text)["id"] == "7"
                r = await client.request("resources/read", {"uri": "test://static-text"})
                assert r.contents[0].text == "This is the content of the static text resource."
                await client.request("resources/subscribe", {"uri": "test://watched-resource"})
                await client.request("resources/unsubscribe", {"uri": "test://watched-resource"})

                r = await client.request(
                    "prompts/get",
                    {"name": "test_prompt_with_arguments", "arguments": {"arg1": "a", "arg2": "b"}},
                )
                assert r.messages[0].content.text == "Prompt with arguments: arg1='a', arg2='b'"
                r = await client.request(
                    "completion/complete",
                    {
                        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                        "argument": {"name": "arg1", "value": "b"},
                    },
                )
                assert list(r.completion.values) == ["beta"]
                await logs.wait_for(3)
            # Leaving the session closed the server's stdin: it exits by itself, cleanly.
            await proc.process.wait()
        assert proc.process.returncode == 0
        stderr.seek(0)
        assert b"Traceback" not in stderr.read()
    assert logs.items == [
        ("info", "Tool execution started"),
        ("info", "Tool processing data"),
        ("info", "Tool execution completed"),
    ]
    assert [p for p, _, _ in progress] == [0, 50, 100]


async def test_triggers_change_the_lists_and_reach_a_listen_stream() -> None:
    """test_trigger_tool_change / _prompt_change change the lists for a moment;
    a 2026-07-28 subscription that asked for those lists hears of each change
    (coalesced: one notification per call), and the lists end as they were."""
    from mcp_trio.client import open_client

    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(everything.server.serve_session, a)
        with trio.fail_after(10):
            async with open_client(b, versions=["2026-07-28"]) as client:
                before = {t.name for t in await client.list_all_tools()}
                async with client.listen(tools=True, prompts=True) as sub:
                    await client.call_tool("test_trigger_tool_change")
                    assert (await sub.__anext__())[0] == "notifications/tools/list_changed"
                    await client.call_tool("test_trigger_prompt_change")
                    assert (await sub.__anext__())[0] == "notifications/prompts/list_changed"
                    await client.call_tool("test_trigger_tool_change")
                    assert (await sub.__anext__())[0] == "notifications/tools/list_changed"
                assert {t.name for t in await client.list_all_tools()} == before == TOOLS
                assert {p.name for p in await client.list_all_prompts()} == PROMPTS
        nursery.cancel_scope.cancel()
