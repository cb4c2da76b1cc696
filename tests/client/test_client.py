"""The high-level Client against the high-level Server, in every revision,
including multi-round-trip requests (2026-07-28) and result caching."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from mcp_trio import McpError, RemoteProtocolError, open_memory_transport_pair, open_session
from mcp_trio.client import Client, ResultCache, connect_server, open_client
from mcp_trio.server import Context, Server
from mcp_trio.types import _versions

ALL = list(_versions.SUPPORTED_VERSIONS)
LEGACY = [v for v in ALL if not _versions.is_stateless(v)]
MODERN = [v for v in ALL if _versions.is_stateless(v)]
WITH_ELICITATION = [v for v in ALL if v >= "2025-06-18"]

FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


class Calls:
    """Counts how often handler code ran (to observe replay)."""

    def __init__(self) -> None:
        self.starts = 0
        self.sampling: list[Any] = []
        self.elicitation: list[Any] = []


def make_server(calls: Calls, **options: Any) -> Server:
    server = Server("client-test", "1.0", page_size=2, **options)

    for i in range(5):
        server.tool(lambda i=i: f"tool {i}", name=f"t{i}", description=f"tool number {i}")

    @server.tool
    async def echo(text: str) -> str:
        """Echo."""
        return text

    @server.tool
    async def ask_llm(question: str, ctx: Context) -> str:
        calls.starts += 1
        answer = await ctx.sample(question, max_tokens=10)
        return f"llm said {answer.content.text}"

    @server.tool
    async def two_steps(ctx: Context) -> str:
        calls.starts += 1
        first = await ctx.elicit("your name?", FORM)
        if first.action != "accept":
            return f"first {first.action}"
        second = await ctx.sample(f"greet {first.content['name']}", max_tokens=10)
        return f"{first.content['name']}: {second.content.text}"

    @server.tool
    async def both_at_once(ctx: Context) -> str:
        calls.starts += 1
        out: dict[str, Any] = {}

        async def elicit() -> None:
            out["e"] = await ctx.elicit("name?", FORM)

        async def roots() -> None:
            out["r"] = await ctx.list_roots()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(elicit)
            nursery.start_soon(roots)
        return f"{out['e'].content['name']} with {len(out['r'].roots)} roots"

    @server.tool
    async def swallow(ctx: Context) -> str:
        try:
            result = await ctx.elicit("name?", FORM)
        except Exception as exc:  # must not hide the round's end
            return f"swallowed {exc}"
        return str(result.action)

    @server.tool
    async def progress(ctx: Context) -> str:
        for i in range(3):
            await ctx.report_progress(i + 1, 3)
        await ctx.info("working")
        return "done"

    @server.resource("test://secret/{id}", mime_type="text/plain")
    async def secret(id: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"password for {id}?", FORM)
        return f"{id}:{answer.content['name']}"

    @server.prompt
    async def personal(ctx: Context) -> str:
        """Asks who you are."""
        answer = await ctx.elicit("who?", FORM)
        return f"hello {answer.content['name']}"

    @server.prompt
    def plain(topic: str) -> str:
        """About a topic."""
        return f"talk about {topic}"

    @server.completion("plain", "topic")
    def topics(value: str, context_arguments: dict[str, str]) -> list[str]:
        return [t for t in ("trio", "tasks", "types") if t.startswith(value)]

    return server


def handlers(calls: Calls, *, name: str = "ada") -> dict[str, Any]:
    async def sampling(params: Any) -> dict[str, Any]:
        calls.sampling.append(params)
        text = params.messages[0].content.text
        return {"role": "assistant", "content": {"type": "text", "text": f"<{text}>"}, "model": "m"}

    async def elicitation(params: Any) -> dict[str, Any]:
        calls.elicitation.append(params)
        return {"action": "accept", "content": {"name": name}}

    return {"sampling": sampling, "elicitation": elicitation, "roots": [{"uri": "file:///a", "name": "a"}]}


@asynccontextmanager
async def pair(
    version: str, calls: Calls | None = None, server: Server | None = None, **client_options: Any
) -> AsyncIterator[tuple[Client, Server, Calls]]:
    calls = calls or Calls()
    server = server or make_server(calls)
    options = {**handlers(calls), **client_options}
    with trio.fail_after(10):
        async with connect_server(server, versions=[version], **options) as client:
            yield client, server, calls


@pytest.mark.parametrize("version", ALL)
async def test_typed_methods_and_paging(version: str) -> None:
    async with pair(version) as (client, server, _):
        assert client.protocol_version == version
        assert client.server_info["name"] == "client-test"
        first = await client.list_tools()
        assert len(first.tools) == 2 and isinstance(first.nextCursor, str)
        tools = await client.list_all_tools()
        names = [t.name for t in tools]
        assert names[:5] == [f"t{i}" for i in range(5)] and "echo" in names and len(names) == len(set(names))
        result = await client.call_tool("echo", {"text": "hi"})
        assert result.content[0].text == "hi"
        with pytest.raises(McpError) as info:
            await client.call_tool("nope")
        assert info.value.code == -32602
        templates = await client.list_all_resource_templates()
        assert [t.uriTemplate for t in templates] == ["test://secret/{id}"]
        prompts = await client.list_all_prompts()
        assert {p.name for p in prompts} == {"personal", "plain"}
        prompt = await client.get_prompt("plain", {"topic": "trio"})
        assert prompt.messages[0].content.text == "talk about trio"
        done = await client.complete("topic", "t", prompt="plain")
        assert done.completion.values == ["trio", "tasks", "types"]
        assert (await client.list_all_resources()) == []


@pytest.mark.parametrize("version", ALL)
async def test_sampling_through_the_same_handler_in_both_eras(version: str) -> None:
    async with pair(version) as (client, _, calls):
        result = await client.call_tool("ask_llm", {"question": "2+2?"})
        assert result.content[0].text == "llm said <2+2?>"
        assert len(calls.sampling) == 1
        # legacy: one run; modern: the handler is replayed once with the answer
        assert calls.starts == (2 if version in MODERN else 1)


@pytest.mark.parametrize("version", WITH_ELICITATION)
async def test_two_inputs_in_sequence(version: str) -> None:
    async with pair(version) as (client, _, calls):
        result = await client.call_tool("two_steps")
        assert result.content[0].text == "ada: <greet ada>"
        assert len(calls.elicitation) == 1 and len(calls.sampling) == 1


@pytest.mark.parametrize("version", WITH_ELICITATION)
async def test_concurrent_inputs(version: str) -> None:
    async with pair(version) as (client, _, calls):
        result = await client.call_tool("both_at_once")
        assert result.content[0].text == "ada with 1 roots"
        if version in MODERN:
            assert calls.starts == 2  # both inputs were asked in one round


@pytest.mark.parametrize("version", WITH_ELICITATION)
async def test_except_exception_does_not_hide_a_round(version: str) -> None:
    async with pair(version) as (client, _, _calls):
        result = await client.call_tool("swallow")
        assert result.content[0].text == "accept"


@pytest.mark.parametrize("version", WITH_ELICITATION)
async def test_inputs_in_resources_and_prompts(version: str) -> None:
    async with pair(version) as (client, _, _calls):
        read = await client.read_resource("test://secret/7")
        assert read.contents[0].text == "7:ada"
        prompt = await client.get_prompt("personal")
        assert prompt.messages[0].content.text == "hello ada"


@pytest.mark.parametrize("version", ALL)
async def test_missing_client_capability_is_a_clear_error(version: str) -> None:
    async with pair(version, sampling=None) as (client, _, calls):
        if version in MODERN:  # MissingRequiredClientCapabilityError, as 2026-07-28 says
            with pytest.raises(McpError) as info:
                await client.call_tool("ask_llm", {"question": "x"})
            assert info.value.code == -32021
            assert info.value.data == {"requiredCapabilities": {"sampling": {}}}
        else:  # a tool error, as before
            result = await client.call_tool("ask_llm", {"question": "x"})
            assert result.isError is True
            assert "sampling" in result.content[0].text
        assert calls.sampling == []


@pytest.mark.parametrize("version", ALL)
async def test_progress_logging_and_notification_hooks(version: str) -> None:
    seen: list[tuple[float, float | None]] = []
    logs: list[Any] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async def on_log(params: Any) -> None:
        logs.append(params)

    async with pair(version, on_log=on_log) as (client, _, _calls):
        await client.set_log_level("info")
        result = await client.call_tool("progress", on_progress=on_progress)
        assert result.content[0].text == "done"
        assert seen == [(1, 3), (2, 3), (3, 3)]
        with trio.fail_after(5):
            while not logs:
                await trio.sleep(0.01)
        assert logs[0].level == "info" and logs[0].data == "working"
        # raising the threshold silences info
        await client.set_log_level("error")
        await client.call_tool("progress")
        await trio.sleep(0.05)
        assert len(logs) == 1


@pytest.mark.parametrize("version", LEGACY)
async def test_list_changed_and_resource_updates_reach_hooks(version: str) -> None:
    changed: list[str] = []
    updated: list[str] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async def on_resource_updated(uri: str) -> None:
        updated.append(uri)

    async with pair(version, on_list_changed=on_list_changed, on_resource_updated=on_resource_updated) as (
        client,
        server,
        _,
    ):
        await client.subscribe_resource("test://secret/1")
        server.tool(lambda: "new", name="fresh", description="new tool")
        await server.notify_resource_updated("test://secret/1")
        await server.notify_resource_updated("test://secret/2")  # not subscribed
        with trio.fail_after(5):
            while not (changed and updated):
                await trio.sleep(0.01)
        assert changed == ["tools"] and updated == ["test://secret/1"]
        assert "fresh" in [t.name for t in await client.list_all_tools()]
        await client.unsubscribe_resource("test://secret/1")


@pytest.mark.parametrize("version", LEGACY)
async def test_set_roots_notifies_the_server(version: str) -> None:
    got: list[str] = []
    server = make_server(Calls())
    a, b = open_memory_transport_pair()

    async def on_roots_changed(session: Any, method: str, params: Any) -> None:
        got.append(method)

    async with trio.open_nursery() as nursery:
        session = await nursery.start(server.serve_session, a)
        session.notification_handlers["notifications/roots/list_changed"] = on_roots_changed
        async with open_client(b, versions=[version], roots=[]) as client:
            await client.set_roots([{"uri": "file:///b"}])
            with trio.fail_after(5):
                while not got:
                    await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    assert got == ["notifications/roots/list_changed"]


async def test_cancelling_the_caller_cancels_the_tool() -> None:
    started = trio.Event()
    cancelled = trio.Event()
    server = Server("slow", "1")

    @server.tool
    async def slow() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_client(b) as client:
            with trio.move_on_after(5) as scope:
                async with trio.open_nursery() as inner:
                    inner.start_soon(client.call_tool, "slow")
                    await started.wait()
                    inner.cancel_scope.cancel()
                with trio.fail_after(5):
                    await cancelled.wait()
            assert not scope.cancelled_caught
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------ MRTR details


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
class TestRequestState:
    async def _first_round(self, client: Client) -> Any:
        result = await client.session.request("tools/call", {"name": "two_steps"})
        assert result.resultType == "input_required"
        ((key, request),) = result.inputRequests.items()
        assert request.__struct_config__.tag == "elicitation/create"
        assert request.params.message == "your name?"
        return key, result.requestState

    async def test_tampered_state_is_rejected(self) -> None:
        async with pair(MODERN[0]) as (client, _, _calls):
            key, state = await self._first_round(client)
            payload, mac = state.split(".")
            forged = payload[:-2] + ("AA" if payload[-2:] != "AA" else "BB") + "." + mac
            for bad in (forged, "garbage", state + "x"):
                with pytest.raises(McpError) as info:
                    await client.session.request(
                        "tools/call",
                        {
                            "name": "two_steps",
                            "requestState": bad,
                            "inputResponses": {key: {"action": "decline"}},
                        },
                    )
                assert info.value.code == -32602 and "requestState" in info.value.message

    async def test_state_of_another_request_is_rejected(self) -> None:
        async with pair(MODERN[0]) as (client, _, _calls):
            key, state = await self._first_round(client)
            with pytest.raises(McpError) as info:
                await client.session.request(
                    "tools/call", {"name": "ask_llm", "arguments": {"question": "q"}, "requestState": state}
                )
            assert info.value.code == -32602 and "another request" in info.value.message

    async def test_state_from_another_server_key_is_rejected(self) -> None:
        calls = Calls()
        async with pair(MODERN[0], calls, make_server(calls, state_key=b"k" * 32)) as (client, _, _):
            key, state = await self._first_round(client)
        async with pair(MODERN[0], calls, make_server(calls, state_key=b"j" * 32)) as (client, _, _):
            with pytest.raises(McpError, match="signature"):
                await client.session.request(
                    "tools/call",
                    {
                        "name": "two_steps",
                        "requestState": state,
                        "inputResponses": {key: {"action": "decline"}},
                    },
                )
        # the same key on another process is accepted (load-balanced servers)
        async with pair(MODERN[0], calls, make_server(calls, state_key=b"k" * 32)) as (client, _, _):
            result = await client.session.request(
                "tools/call",
                {"name": "two_steps", "requestState": state, "inputResponses": {key: {"action": "decline"}}},
            )
            assert result.content[0].text == "first decline"

    async def test_expired_state_is_rejected(self) -> None:
        calls = Calls()
        async with pair(MODERN[0], calls, make_server(calls, state_ttl=-5)) as (client, _, _):
            key, state = await self._first_round(client)
            with pytest.raises(McpError, match="expired"):
                await client.session.request(
                    "tools/call",
                    {
                        "name": "two_steps",
                        "requestState": state,
                        "inputResponses": {key: {"action": "decline"}},
                    },
                )

    async def test_invalid_answer_is_invalid_params(self) -> None:
        async with pair(MODERN[0]) as (client, _, _calls):
            key, state = await self._first_round(client)
            with pytest.raises(McpError) as info:
                await client.session.request(
                    "tools/call",
                    {
                        "name": "two_steps",
                        "requestState": state,
                        "inputResponses": {key: {"action": "maybe"}},
                    },
                )
            assert info.value.code == -32602 and key in info.value.message

    async def test_missing_answer_is_asked_again(self) -> None:
        async with pair(MODERN[0]) as (client, _, _calls):
            key, state = await self._first_round(client)
            again = await client.session.request(
                "tools/call", {"name": "two_steps", "requestState": state, "inputResponses": {"other": {}}}
            )
            assert again.resultType == "input_required" and list(again.inputRequests) == [key]

    async def test_a_server_that_never_finishes_is_bounded(self) -> None:
        server = Server("greedy", "1")
        counter = iter(range(10_000))

        @server.tool
        async def greedy(ctx: Context) -> str:
            await ctx.elicit(f"question {next(counter)}", FORM)  # always a new question
            return "unreachable"

        async with pair(MODERN[0], server=server, max_input_rounds=3) as (client, _, calls):
            with pytest.raises(RemoteProtocolError, match="3 rounds"):
                await client.call_tool("greedy")
            assert len(calls.elicitation) == 3


# ------------------------------------------------------------------ cache


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_cache_follows_ttl(autojump_clock: trio.testing.MockClock) -> None:
    calls = Calls()
    server = make_server(calls, cache_ttl_ms=1000)
    listed = 0
    original = server._tools.list

    async def counting(ctx: Any, params: Any) -> Any:
        nonlocal listed
        listed += 1
        return await original(ctx, params)

    server._tools.list = counting  # type: ignore[method-assign]
    async with pair(MODERN[0], calls, server) as (client, _, _):
        first = await client.list_tools()
        again = await client.list_tools()
        assert again is first and listed == 1
        await client.list_tools(first.nextCursor)  # another page: another key
        assert listed == 2
        await trio.sleep(1.5)  # stale now
        await client.list_tools()
        assert listed == 3
        await client.list_tools(fresh=True)
        assert listed == 4
        client.invalidate_cache()
        await client.list_tools()
        assert listed == 5


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_cache_can_be_turned_off_and_skips_retried_results() -> None:
    calls = Calls()
    server = make_server(calls, cache_ttl_ms=60_000)
    async with pair(MODERN[0], calls, server, cache=False) as (client, _, _):
        assert (await client.list_tools()) is not (await client.list_tools())
    cache = ResultCache()
    async with pair(MODERN[0], calls, server, cache=cache) as (client, _, _):
        await client.read_resource("test://secret/1")  # retried: never cached
        await client.read_resource("test://secret/1")
        assert len(calls.elicitation) == 2
        await client.list_tools()
        assert len(cache) == 1


def test_result_cache_scopes_and_eviction() -> None:
    class R(msgspec.Struct):
        ttlMs: int
        cacheScope: str

    async def main() -> None:
        cache = ResultCache(max_entries=2)
        public, private = R(1000, "public"), R(1000, "private")
        cache.put("ns", "alice", "tools/list", b"{}", public)
        cache.put("ns", "alice", "resources/read", b"1", private)
        assert cache.get("ns", "bob", "tools/list", b"{}") is public  # shared
        assert cache.get("ns", "bob", "resources/read", b"1") is None  # not shared
        assert cache.get("ns", "alice", "resources/read", b"1") is private
        assert cache.get("other", "alice", "tools/list", b"{}") is None
        cache.put("ns", "alice", "prompts/list", b"{}", public)
        assert len(cache) == 2 and cache.get("ns", "alice", "tools/list", b"{}") is None  # oldest evicted
        cache.put("ns", "alice", "x", b"", R(0, "public"))
        assert cache.get("ns", "alice", "x", b"") is None  # ttl 0: never stored
        cache.invalidate("ns", ("prompts/list",))
        assert cache.get("ns", "alice", "prompts/list", b"{}") is None

    trio.run(main)


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_modern_log_level_travels_in_meta() -> None:
    seen: list[Any] = []
    server = Server("meta", "1")

    @server.tool
    async def show(ctx: Context) -> str:
        seen.append(ctx.request.meta.get("io.modelcontextprotocol/logLevel"))
        return "ok"

    async with pair(MODERN[0], server=server) as (client, _, _):
        await client.call_tool("show")
        await client.set_log_level("warning")
        await client.call_tool("show")
    assert seen == [None, "warning"]


async def test_low_level_session_sees_the_capabilities_the_handlers_imply() -> None:
    server = Server("caps", "1")
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        session = await nursery.start(server.serve_session, a)
        async with open_client(
            b, versions=LEGACY[:1], **handlers(Calls()), elicitation_modes=("form", "url")
        ):
            assert session.peer_capabilities == {
                "sampling": {},
                "elicitation": {"form": {}, "url": {}},
                "roots": {"listChanged": True},
            }
        nursery.cancel_scope.cancel()
    _ = open_session  # the low-level API stays importable next to the client


URL_MODE = [v for v in ALL if v >= "2025-11-25"]


@pytest.mark.parametrize("version", URL_MODE)
async def test_url_mode_elicitation_needs_the_url_capability(version: str) -> None:
    server = Server("url", "1")
    asked: list[Any] = []

    @server.tool
    async def login(ctx: Context) -> str:
        result = await ctx.elicit_url("Sign in", "https://example.test/login")
        return result.action

    async def elicitation(params: Any) -> dict[str, Any]:
        asked.append(params)
        return {"action": "accept"}

    async with pair(version, server=server, elicitation=elicitation) as (client, _, _calls):
        # form mode only advertised
        if version in MODERN:
            with pytest.raises(McpError) as info:
                await client.call_tool("login")
            assert info.value.code == -32021 and "elicitation.url" in info.value.message
            assert info.value.data == {"requiredCapabilities": {"elicitation": {"url": {}}}}
        else:
            result = await client.call_tool("login")
            assert result.isError is True and "elicitation.url" in result.content[0].text
    async with pair(version, server=server, elicitation=elicitation, elicitation_modes=("url",)) as (
        client,
        _,
        _c,
    ):
        result = await client.call_tool("login")
        assert result.content[0].text == "accept"
    assert asked[0].mode == "url" and asked[0].url == "https://example.test/login"
    if version in MODERN:
        assert asked[0].elicitationId is None  # the revision has none
    else:
        assert len(asked[0].elicitationId) >= 16


@pytest.mark.parametrize("version", URL_MODE)
async def test_sampling_with_tools_needs_the_tools_capability(version: str) -> None:
    server = Server("tools-in-sampling", "1")
    tool = {"name": "lookup", "inputSchema": {"type": "object"}}

    @server.tool
    async def agent(ctx: Context) -> str:
        result = await ctx.sample("use a tool", tools=[tool], toolChoice={"mode": "auto"})
        return result.model

    async with pair(version, server=server) as (client, _, _calls):
        if version in MODERN:
            with pytest.raises(McpError) as info:
                await client.call_tool("agent")
            assert info.value.code == -32021 and "sampling.tools" in info.value.message
            assert info.value.data == {"requiredCapabilities": {"sampling": {"tools": {}}}}
        else:
            result = await client.call_tool("agent")
            assert result.isError is True and "sampling.tools" in result.content[0].text
    async with pair(version, server=server, sampling_tools=True) as (client, _, calls):
        result = await client.call_tool("agent")
        assert result.content[0].text == "m"
        assert calls.sampling[0].tools[0].name == "lookup"


def test_elicitation_defaults_take_each_property_default() -> None:
    from mcp_trio.client import elicitation_defaults
    from mcp_trio.types import v2025_11_25 as t

    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "default": ["b"]},
            "nickname": {"type": "string"},
        },
    }
    expected = {
        "name": "John Doe",
        "age": 30,
        "score": 95.5,
        "status": "active",
        "verified": True,
        "tags": ["b"],
    }
    assert elicitation_defaults(schema) == expected
    # the same through the decoded request params (Structs, not dicts)
    params = msgspec.convert({"message": "m", "requestedSchema": schema}, t.ElicitRequestFormParams)
    got = elicitation_defaults(params.requestedSchema)
    assert got == expected
    assert type(got["age"]) is int and type(got["score"]) is float
    assert elicitation_defaults({"type": "object"}) == {}
