"""A user's file: every public call of the client, with the types a checker must infer.

Checked by mypy --strict (tests/typing/test_client_typing.py); never run.  Each
``assert_type`` pins a type, and each ``# type: ignore[...]`` pins a mistake the
checker must catch (``warn_unused_ignores`` fails the check if it stops catching it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict, assert_type

from mcp_trio.client import (
    Client,
    ClientOptions,
    HandlerError,
    OutputDecodeError,
    OutputValidationError,
    Subscription,
    ToolCallError,
    connect,
    connect_http,
    connect_server,
    connect_stdio,
    connect_websocket,
    elicitation_defaults,
    open_client,
)
from mcp_trio.client.asks import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitationHandler,
    ElicitParams,
    ElicitResult,
    ListName,
    LogMessage,
    ModelPreferences,
    Root,
    RootsProvider,
    SamplingContent,
    SamplingHandler,
    SamplingMessage,
)
from mcp_trio.client.results import (
    BlobResourceContents,
    CallToolResult,
    CompleteResult,
    Completion,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    JSONValue,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    LogLevel,
    Notice,
    Prompt,
    PromptMessage,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
    ToolAnnotations,
    ToolExecution,
    UnknownContent,
)
from mcp_trio.server import Server
from mcp_trio.transports import MessageChannel


@dataclass
class Weather:
    city: str
    celsius: float


class WeatherDict(TypedDict):
    city: str


async def tools(client: Client) -> None:
    page = await client.list_tools()
    assert_type(page, ListToolsResult)
    assert_type(page.nextCursor, str | None)
    assert_type(page.tools, list[Tool])
    assert_type(await client.list_tools(page.nextCursor, timeout=5, fresh=True), ListToolsResult)
    everything = await client.list_all_tools(timeout=None)
    assert_type(everything, list[Tool])
    tool = everything[0]
    assert_type(tool.name, str)
    assert_type(tool.inputSchema, dict[str, Any])
    assert_type(tool.outputSchema, dict[str, Any] | None)
    assert_type(tool.annotations, ToolAnnotations | None)
    assert_type(tool.execution, ToolExecution | None)
    if tool.execution is not None:
        assert_type(tool.execution.taskSupport, str | None)
    assert_type(tool.extra, dict[str, Any])

    result = await client.call_tool("add", {"a": 1}, timeout=3.5, meta={"k": "v"})
    assert_type(result, CallToolResult)
    assert_type(result.isError, bool)
    assert_type(result.structuredContent, Any)
    assert_type(result.meta, dict[str, Any] | None)
    assert_type(result.content, list[ContentBlock])
    for block in result.content:
        if isinstance(block, TextContent):
            assert_type(block.text, str)
        elif isinstance(block, ImageContent):
            assert_type(block.data, str)
        elif isinstance(block, EmbeddedResource):
            assert_type(block.resource, TextResourceContents | BlobResourceContents)
        elif isinstance(block, ResourceLink):
            assert_type(block.uri, str)
        elif isinstance(block, UnknownContent):
            assert_type(block.raw, dict[str, Any])
        assert_type(block.type, str)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    assert_type(await client.call_tool("slow", on_progress=on_progress), CallToolResult)

    assert_type(await client.call_tool("slow", max_total_timeout=60), CallToolResult)
    await client.call_tool("slow", reset_timeout_on_progress=False)

    # result conveniences: text, data typed by output_type
    assert_type(result.text, str)
    assert_type(result.data, JSONValue)
    weather = await client.call_tool("weather", {"city": "Oslo"}, output_type=Weather, raise_on_error=True)
    assert_type(weather, CallToolResult[Weather])
    assert_type(weather.data, Weather)
    assert_type(weather.data.celsius, float)
    assert_type((await client.call_tool("w", output_type=WeatherDict)).data, WeatherDict)
    assert_type((await client.call_tool("w", output_type=list[Weather])).data, list[Weather])
    assert_type((await client.call_tool("w", output_type=int, timeout=1)).data, int)
    untyped: CallToolResult = await client.call_tool("w")
    print(untyped)

    # mistakes a checker must catch
    print(weather.data.fahrenheit)  # type: ignore[attr-defined]
    await client.call_tool("w", raise_on_error="yes")  # type: ignore[arg-type]
    await client.call_tool("w", output_type="Weather")  # type: ignore[arg-type]
    await client.call_tool("slow", max_total_timout=60)  # type: ignore[call-arg]
    await client.call_tool("slow", reset_timeout_on_progress="no")  # type: ignore[arg-type]
    print(result.nonexistent)  # type: ignore[attr-defined]
    print(result.content[0].text)  # type: ignore[union-attr]
    await client.call_tool(5)  # type: ignore[arg-type]
    await client.call_tool("x", timeout="soon")  # type: ignore[arg-type]


async def resources(client: Client) -> None:
    assert_type(await client.list_resources(), ListResourcesResult)
    assert_type(await client.list_all_resources(), list[Resource])
    assert_type(await client.list_resource_templates(), ListResourceTemplatesResult)
    templates = await client.list_all_resource_templates()
    assert_type(templates, list[ResourceTemplate])
    assert_type(templates[0].uriTemplate, str)
    read = await client.read_resource("file:///a", fresh=True)
    assert_type(read, ReadResourceResult)
    assert_type(read.contents, list[ResourceContents])
    first = read.contents[0]
    if isinstance(first, TextResourceContents):
        assert_type(first.text, str)
    else:
        assert_type(first.blob, str)
    assert_type(await client.subscribe_resource("file:///a"), None)
    assert_type(await client.unsubscribe_resource("file:///a"), None)


async def prompts(client: Client) -> None:
    assert_type(await client.list_prompts(), ListPromptsResult)
    listed = await client.list_all_prompts()
    assert_type(listed, list[Prompt])
    assert_type(listed[0].arguments[0].required, bool)
    got = await client.get_prompt("greet", {"name": "ada"})
    assert_type(got, GetPromptResult)
    assert_type(got.messages, list[PromptMessage])
    assert_type(got.messages[0].content, ContentBlock)
    done = await client.complete("name", "a", prompt="greet", context={"x": "y"})
    assert_type(done, CompleteResult)
    assert_type(done.completion, Completion)
    assert_type(done.completion.values, list[str])
    await client.get_prompt("greet", {"n": 5})  # type: ignore[dict-item]


async def utilities(client: Client) -> None:
    assert_type(await client.set_log_level("warning"), None)
    await client.set_log_level("loud")  # type: ignore[arg-type]
    assert_type(await client.ping(), None)
    assert_type(await client.set_roots([{"uri": "file:///"}]), None)
    assert_type(client.invalidate_cache(), None)
    assert_type(client.protocol_version, str)
    assert_type(client.modern, bool)
    assert_type(client.server_info, dict[str, Any])
    assert_type(client.server_capabilities, dict[str, Any])
    assert_type(client.instructions, str | None)
    assert_type(client.strict, bool)
    async with client.listen(tools=True, resource_uris=["file:///a"]) as subscription:
        assert_type(subscription, Subscription)
        async for method, params in subscription:
            assert_type(method, str)
            assert_type(params, Notice)


async def opening(channel: MessageChannel) -> None:
    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        assert_type(params.messages, list[SamplingMessage])
        assert_type(params.maxTokens, int)
        assert_type(params.systemPrompt, str | None)
        assert_type(params.tools, list[Tool])
        assert_type(params.modelPreferences, ModelPreferences | None)
        content = params.messages[0].content
        assert_type(content, SamplingContent | list[SamplingContent])
        if isinstance(content, TextContent):
            assert_type(content.text, str)
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    async def elicitation(params: ElicitParams) -> ElicitResult:
        assert_type(params.mode, Literal["form", "url"])
        assert_type(params.requestedSchema, dict[str, Any] | None)
        assert_type(params.url, str | None)
        return ElicitResult(action="accept", content=elicitation_defaults(params.requestedSchema))

    async def as_dict(params: ElicitParams) -> dict[str, Any]:
        return {"action": "decline"}

    async def untyped(params: Any) -> Any:
        return {}

    def roots() -> list[Root]:
        return [Root(uri="file:///", name="all")]

    async def async_roots() -> list[dict[str, str]]:
        return [{"uri": "file:///"}]

    async def on_log(message: LogMessage) -> None:
        assert_type(message.level, LogLevel)
        assert_type(message.logger, str | None)
        assert_type(message.data, Any)

    async def changed(name: ListName) -> None:
        assert_type(name, Literal["tools", "resources", "prompts"])

    async def changed_str(name: str) -> None:
        pass

    async def changed_number(name: int) -> None:
        pass

    typed_sampling: SamplingHandler = sampling
    typed_elicitation: ElicitationHandler = as_dict
    roots_provider: RootsProvider = async_roots
    print(typed_sampling, typed_elicitation, roots_provider)

    async with open_client(
        channel,
        sampling=sampling,
        elicitation=elicitation,
        roots=roots,
        on_log=on_log,
        on_list_changed=changed,
        strict=True,
        validate_output=False,
    ) as client:
        assert_type(client, Client)
    any_roots = [Root(uri="file:///")]
    async with open_client(channel, sampling=untyped, elicitation=untyped, roots=any_roots):
        pass
    async with connect_stdio("python", "server.py") as client:
        assert_type(client, Client)
    async with connect_http("http://localhost/mcp") as client:
        assert_type(client, Client)
    async with connect_websocket("ws://localhost/mcp") as client:
        assert_type(client, Client)

    # mistakes a checker must catch
    async with open_client(channel, sampling=elicitation):  # type: ignore[arg-type]
        pass
    async with open_client(channel, elicitation=sampling):  # type: ignore[arg-type]
        pass
    async with open_client(channel, roots="file:///"):  # type: ignore[arg-type]
        pass
    async with open_client(channel, on_log=sampling):  # type: ignore[arg-type]
        pass
    async with open_client(channel, on_list_changed=changed_str):
        pass
    async with open_client(channel, on_list_changed=changed_number):  # type: ignore[arg-type]
        pass
    ElicitResult(action="maybe")  # type: ignore[arg-type]
    CreateMessageResult(content=TextContent(text="4"), model="m")  # type: ignore[call-arg]


async def options(server: Server) -> None:
    """The options of open_client, taken by every connect_* function, are typed."""
    async with connect_stdio("python", "server.py", cwd="/", max_pages=3, default_timeout=5) as c:
        assert_type(c, Client)
    async with connect_http("http://localhost/mcp", http_options={}, cache=False) as c:
        assert_type(c, Client)
    async with connect_websocket("ws://localhost/mcp", versions=["2025-06-18"]) as c:
        assert_type(c, Client)
    async with connect_server(server, strict=True, keepalive_interval=None) as c:
        assert_type(c, Client)
    async with connect(server, connect_timeout=1) as c:
        assert_type(c, Client)
    async with connect("python server.py", env={"A": "1"}, validate_output=False) as c:
        assert_type(c, Client)
    async with connect(["python", "server.py"], cwd="/tmp") as c:
        assert_type(c, Client)
    async with connect_http(
        "https://localhost/mcp", http_options={"ssl_context": None, "headers": {"A": "b"}, "timeout": 5}
    ) as c:
        assert_type(c, Client)
    async with connect("wss://localhost/mcp", websocket_options={"origin": "https://me", "proxy": None}) as c:
        assert_type(c, Client)
    options: ClientOptions = {"name": "me", "max_input_rounds": 2}
    async with connect_server(server, **options) as c:
        assert_type(c, Client)

    # mistakes a checker must catch
    async with connect_stdio("python", "server.py", max_page=3):  # type: ignore[call-arg]
        pass
    async with connect_http("http://localhost/mcp", strict="yes"):  # type: ignore[arg-type]
        pass
    async with connect_websocket("ws://x", version=2):  # type: ignore[arg-type]
        pass
    async with connect_server(server, sampling_tool=True):  # type: ignore[call-arg]
        pass
    async with connect(server, env={"A": "1"}):  # type: ignore[call-overload]
        pass
    async with connect("python server.py", cache_namespaces="x"):  # type: ignore[call-overload]
        pass
    async with connect_http("http://x/mcp", ssl_context=None):  # type: ignore[call-arg]
        pass
    async with connect("http://x/mcp", ssl_context=None):  # type: ignore[call-overload]
        pass
    async with connect_http("http://x/mcp", http_options={"ssl_contxt": None}):  # type: ignore[arg-type]
        pass
    async with connect_http("http://x/mcp", http_options={"timeout": "soon"}):  # type: ignore[arg-type]
        pass
    async with connect_websocket("ws://x/mcp", websocket_options={"legacy_fallback": False}):  # type: ignore[arg-type]
        pass
    wrong: ClientOptions = {"max_pages": "many"}  # type: ignore[typeddict-item]
    print(wrong)


def errors(exc: Exception) -> None:
    if isinstance(exc, HandlerError):
        assert_type(exc.method, str)
    if isinstance(exc, OutputValidationError):
        assert_type(exc.result, CallToolResult)
        assert_type(exc.path, str)
    if isinstance(exc, ToolCallError):
        assert_type(exc.tool, str)
        assert_type(exc.text, str)
        assert_type(exc.result, CallToolResult[Any])
    if isinstance(exc, OutputDecodeError):
        assert_type(exc.path, str)
        assert_type(exc.reason, str)
        assert_type(exc.result, CallToolResult[Any])
