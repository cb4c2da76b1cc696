"""server.mount(other, prefix=...) and server.import_server(other, prefix=...): the other server's
tools, resources, templates, prompts and completions through the parent (live for a mount, copied
once for an import), its handlers' Context reaching the parent's client, its lifespan nested in
the parent's; clashes, cycles and bad prefixes refused or resolved as docs/guide/composition.md
says."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import McpError
from mcp_trio.client import connect_http, connect_server
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Root
from mcp_trio.client.results import TextContent
from mcp_trio.server import Context, Server
from mcp_trio.server._mount import inner_uri, prefixed_uri
from mcp_trio.types import _versions

pytestmark = pytest.mark.trio

LEGACY = "2025-11-25"  # (sessions: list_changed, subscriptions, notifications/cancelled)
LATEST = _versions.LATEST_VERSION  # (asks answered through multi-round-trip requests)


def notes_server(name: str = "notes") -> Server:
    server = Server(name, "1")

    @server.tool
    async def add(a: int, b: int) -> int:
        "Add two numbers."
        return a + b

    @server.resource("notes://index", mime_type="text/plain")
    def index() -> str:
        return "the index"

    @server.resource("notes://{name}", mime_type="text/plain")
    def note(name: str) -> str:
        return f"note {name}"

    @server.prompt
    def greet(who: str) -> str:
        return f"hello {who}"

    @server.completion("greet", "who")
    def who(value: str, context_arguments: dict[str, str]) -> list[str]:
        return [n for n in ("ada", "alan") if n.startswith(value)]

    @server.completion("notes://{name}", "name")
    def names(value: str, context_arguments: dict[str, str]) -> list[str]:
        return ["index", "todo"]

    return server


def text(result: Any) -> str:
    return str(result.content[0].text)


async def test_a_mounted_server_is_served_under_its_prefix() -> None:
    parent = Server("parent", "1")
    parent.mount(notes_server(), prefix="kid")
    async with connect_server(parent) as client:
        tools = await client.list_all_tools()
        assert [t.name for t in tools] == ["kid_add"] and tools[0].description == "Add two numbers."
        assert (await client.call_tool("kid_add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
        assert [r.uri for r in await client.list_all_resources()] == ["notes://kid/index"]
        templates = await client.list_all_resource_templates()
        assert [t.uriTemplate for t in templates] == ["notes://kid/{name}"]
        read = await client.read_resource("notes://kid/index")
        assert [(c.uri, c.text) for c in read.contents] == [("notes://kid/index", "the index")]  # type: ignore[union-attr]
        read = await client.read_resource("notes://kid/todo")  # (through the template)
        assert [(c.uri, c.text) for c in read.contents] == [("notes://kid/todo", "note todo")]  # type: ignore[union-attr]
        assert [p.name for p in await client.list_all_prompts()] == ["kid_greet"]
        prompt = await client.get_prompt("kid_greet", {"who": "ada"})
        assert prompt.messages[0].content == TextContent(text="hello ada")
        assert (await client.complete("who", "a", prompt="kid_greet")).completion.values == ["ada", "alan"]
        completed = await client.complete("name", "", resource_template="notes://kid/{name}")
        assert completed.completion.values == ["index", "todo"]
        # what is not under the prefix is not found, as anything unknown
        with pytest.raises(McpError, match="Unknown tool: add"):
            await client.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(McpError, match="Resource not found: notes://index"):
            await client.read_resource("notes://index")
        with pytest.raises(McpError, match="Unknown prompt: greet"):
            await client.get_prompt("greet", {"who": "x"})


async def test_messages_name_the_tool_and_prompt_as_the_client_called_them() -> None:
    child = notes_server()

    @child.tool
    def broken() -> str:
        raise RuntimeError("it broke")

    parent = Server("parent", "1")
    parent.mount(child, prefix="kid")
    async with connect_server(parent, versions=[LEGACY]) as client:
        bad = await client.call_tool("kid_add", {"a": "x", "b": 1})
        assert bad.isError and text(bad).startswith("Invalid arguments for tool kid_add:")
        failed = await client.call_tool("kid_broken")
        assert failed.isError and text(failed) == "it broke"
        with pytest.raises(McpError, match="Missing required arguments for prompt kid_greet: who"):
            await client.get_prompt("kid_greet", {})


async def test_a_mounted_task_capable_tool_makes_the_parent_offer_tasks() -> None:
    child = Server("child", "1")
    parent = Server("parent", "1")
    parent.mount(child, prefix="c")
    assert "tasks" not in parent.capabilities

    @child.tool(task_support="optional")
    async def long() -> str:
        return "done"

    assert "tasks" in parent.capabilities
    async with connect_server(parent, versions=[LEGACY]) as client:
        assert text(await client.call_tool("c_long")) == "done"


async def test_without_a_prefix_names_and_uris_are_unchanged() -> None:
    parent = Server("parent", "1")
    parent.mount(notes_server())
    async with connect_server(parent) as client:
        assert [t.name for t in await client.list_all_tools()] == ["add"]
        read = await client.read_resource("notes://x")
        assert read.contents[0].text == "note x"  # type: ignore[union-attr]
        assert (await client.call_tool("add", {"a": 1, "b": 1})).structuredContent == {"result": 2}


async def test_the_uri_rule_and_its_inverse() -> None:
    assert prefixed_uri("notes://a/b", ("x",)) == "notes://x/a/b"
    assert prefixed_uri("notes://a", ("x", "y")) == "notes://x/y/a"
    assert prefixed_uri("file:///etc/hosts", ("x",)) == "file://x//etc/hosts"
    assert prefixed_uri("urn:isbn:1", ("x",)) == "urn:x/isbn:1"
    assert prefixed_uri("{scheme}://a", ("x",)) is None  # (no literal scheme to follow)
    for uri in ("notes://a/b", "file:///etc/hosts", "urn:isbn:1", "notes://{name}"):
        assert inner_uri(prefixed_uri(uri, ("x", "y")) or "", ("x", "y")) == uri
    assert inner_uri("notes://y/a", ("x",)) is None and inner_uri("notes://xa", ("x",)) is None


async def test_later_registrations_appear_and_changes_reach_the_parents_sessions() -> None:
    child = notes_server()
    parent = Server("parent", "1")
    parent.mount(child, prefix="kid")
    changed: list[str] = []
    updated: list[str] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async def on_resource_updated(uri: str) -> None:
        updated.append(uri)

    async with connect_server(
        parent, versions=[LEGACY], on_list_changed=on_list_changed, on_resource_updated=on_resource_updated
    ) as client:
        await client.subscribe_resource("notes://kid/index")
        child.tool(lambda: "fresh", name="fresh")
        child.prompt(lambda: "p", name="later")
        await child.notify_resource_updated("notes://index")
        with trio.fail_after(5):
            while len(changed) < 2 or not updated:
                await trio.sleep(0.01)
        assert sorted(changed) == ["prompts", "tools"] and updated == ["notes://kid/index"]
        assert [t.name for t in await client.list_all_tools()] == ["kid_add", "kid_fresh"]
        assert text(await client.call_tool("kid_fresh")) == "fresh"
        assert "kid_later" in [p.name for p in await client.list_all_prompts()]
        child.remove_tool("fresh")
        with trio.fail_after(5):
            while len(changed) < 3:
                await trio.sleep(0.01)
        assert [t.name for t in await client.list_all_tools()] == ["kid_add"]
        # mounting while a session is open announces the new lists
        parent.mount(notes_server("more"), prefix="more")
        with trio.fail_after(5):
            while len(changed) < 6:
                await trio.sleep(0.01)
        assert sorted(changed[3:]) == ["prompts", "resources", "tools"]
        assert [t.name for t in await client.list_all_tools()] == ["more_add", "kid_add"]


async def test_listen_streams_of_the_parent_hear_the_mounted_servers_changes() -> None:
    child = notes_server()
    parent = Server("parent", "1")
    parent.mount(child, prefix="kid")
    async with connect_server(parent, versions=[LATEST]) as client:
        async with client.listen(tools=True, resource_uris=["notes://kid/index"]) as sub:
            child.tool(lambda: "x", name="later")
            with trio.fail_after(5):
                method, _ = await sub.__anext__()
            assert method == "notifications/tools/list_changed"
            await child.notify_resource_updated("notes://index")
            with trio.fail_after(5):
                method, params = await sub.__anext__()
            assert method == "notifications/resources/updated" and params.uri == "notes://kid/index"


async def test_clashes_the_parents_own_first_then_the_latest_mount() -> None:
    parent = Server("parent", "1")

    @parent.tool(name="kid_add")
    def own(a: int, b: int) -> str:
        return "the parent's"

    parent.mount(notes_server(), prefix="kid")
    first, second = Server("first", "1"), Server("second", "1")
    first.tool(lambda: "first", name="same")
    second.tool(lambda: "second", name="same")
    first.resource("same://r")(lambda: "first")
    second.resource("same://r")(lambda: "second")
    parent.mount(first)
    parent.mount(second)
    async with connect_server(parent) as client:
        names = [t.name for t in await client.list_all_tools()]
        assert sorted(names) == ["kid_add", "same"]  # (each once)
        assert text(await client.call_tool("kid_add", {"a": 1, "b": 2})) == "the parent's"
        assert text(await client.call_tool("same")) == "second"
        assert [r.uri for r in await client.list_all_resources()].count("same://r") == 1
        assert (await client.read_resource("same://r")).contents[0].text == "second"  # type: ignore[union-attr]


@pytest.mark.parametrize("version", [LEGACY, LATEST])
async def test_context_reaches_the_parents_client(version: str) -> None:
    child = Server("child", "1")

    @child.tool
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "half")
        await ctx.info("working")
        sampled = await ctx.sample("2+2?", max_tokens=5)
        elicited = await ctx.elicit("name?", {"type": "object", "properties": {"n": {"type": "string"}}})
        roots = await ctx.list_roots()
        return (
            f"{sampled.content.text} {elicited.content['n']} {roots.roots[0].uri} {ctx.server.info['name']}"
        )

    parent = Server("parent", "1")
    parent.mount(child, prefix="c")
    progress: list[tuple[float, float | None, str | None]] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    async def on_log(params: Any) -> None:
        logs.append(params)

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    async def elicitation(params: ElicitParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"n": "ada"})

    async with connect_server(
        parent,
        versions=[version],
        on_log=on_log,
        sampling=sampling,
        elicitation=elicitation,
        roots=[Root(uri="file:///r", name="r")],
    ) as client:
        await client.set_log_level("info")
        result = await client.call_tool("c_work", on_progress=on_progress)
        assert text(result) == "4 ada file:///r parent", result
        with trio.fail_after(5):
            while not logs:
                await trio.sleep(0.01)
    assert progress[0] == (1, 2, "half")
    assert logs[0].level == "info" and logs[0].data == "working"


async def test_cancelling_the_parents_request_cancels_the_mounted_handler() -> None:
    started, cancelled = trio.Event(), trio.Event()
    child = Server("child", "1")

    @child.tool
    async def slow() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    parent = Server("parent", "1")
    parent.mount(child, prefix="c")
    async with connect_server(parent, versions=[LEGACY]) as client:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.call_tool, "c_slow")
            with trio.fail_after(5):
                await started.wait()
            nursery.cancel_scope.cancel()
        with trio.fail_after(5):
            await cancelled.wait()


def recording_lifespan(events: list[str], value: str) -> Any:
    @asynccontextmanager
    async def lifespan(server: Server) -> AsyncIterator[str]:
        events.append(f"enter {server.info['name']}")
        yield value
        events.append(f"exit {server.info['name']}")

    return lifespan


async def test_lifespans_nest_and_each_handler_sees_its_own_servers_value() -> None:
    events: list[str] = []
    grandchild = Server("grandchild", "1", lifespan=recording_lifespan(events, "g-value"))
    child = Server("child", "1", lifespan=recording_lifespan(events, "c-value"))
    parent = Server("parent", "1", lifespan=recording_lifespan(events, "p-value"))

    @grandchild.tool
    def deep(ctx: Context) -> str:
        return ctx.lifespan_value(str)

    @child.tool
    def mine(ctx: Context) -> str:
        return ctx.lifespan_value(str)

    @parent.tool
    def top(ctx: Context) -> str:
        return ctx.lifespan_value(str)

    child.mount(grandchild, prefix="g")
    parent.mount(child, prefix="c")
    async with connect_server(parent) as client:
        assert events == ["enter parent", "enter child", "enter grandchild"]
        assert [t.name for t in await client.list_all_tools()] == ["top", "c_mine", "c_g_deep"]
        assert text(await client.call_tool("top")) == "p-value"
        assert text(await client.call_tool("c_mine")) == "c-value"
        assert text(await client.call_tool("c_g_deep")) == "g-value"
    assert events[3:] == ["exit grandchild", "exit child", "exit parent"]


async def test_a_server_mounted_while_the_parent_serves_has_its_lifespan_entered_at_once() -> None:
    events: list[str] = []
    parent = Server("parent", "1", lifespan=recording_lifespan(events, "p-value"))
    child = Server("child", "1", lifespan=recording_lifespan(events, "c-value"))

    @child.tool
    def value(ctx: Context) -> str:
        return ctx.lifespan_value(str)

    async with connect_server(parent) as client:
        parent.mount(child, prefix="c")
        with trio.fail_after(5):
            while "enter child" not in events:
                await trio.sleep(0.01)
        assert text(await client.call_tool("c_value")) == "c-value"
    assert events == ["enter parent", "enter child", "exit child", "exit parent"]
    async with connect_server(parent) as client:  # (entered again with the parent's, nested)
        assert text(await client.call_tool("c_value")) == "c-value"
    assert events[4:] == ["enter parent", "enter child", "exit child", "exit parent"]


async def test_a_late_mounts_failing_lifespan_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    @asynccontextmanager
    async def broken(server: Server) -> AsyncIterator[None]:
        raise ConnectionRefusedError("the feed is down")
        yield

    parent = Server("parent", "1", lifespan=recording_lifespan([], "p-value"))
    async with connect_server(parent) as client:
        with caplog.at_level(logging.ERROR, logger="mcp_trio.server"):
            parent.mount(Server("child", "1", lifespan=broken), prefix="c")
            with trio.fail_after(5):
                while not caplog.records:
                    await trio.sleep(0.01)
        assert await client.list_all_tools() == []  # (the parent serves on)
    (record,) = caplog.records
    assert "the lifespan of server 'child', mounted while serving, failed" in record.getMessage()
    assert record.exc_info is not None and "the feed is down" in str(record.exc_info[1])


async def test_a_parent_without_a_lifespan_still_enters_its_mounted_servers() -> None:
    events: list[str] = []
    child = Server("child", "1", lifespan=recording_lifespan(events, "c-value"))

    @child.tool
    def value(ctx: Context) -> str:
        return ctx.lifespan_value(str)

    parent = Server("parent", "1")
    parent.mount(child, prefix="c")
    async with connect_server(parent) as client:
        assert text(await client.call_tool("c_value")) == "c-value"
    assert events == ["enter child", "exit child"]


async def test_nested_mounts_rename_twice_and_announce_to_the_top() -> None:
    inner = notes_server("inner")
    middle = Server("middle", "1")
    middle.mount(inner, prefix="b")
    top = Server("top", "1")
    top.mount(middle, prefix="a")
    changed: list[str] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async with connect_server(top, versions=[LEGACY], on_list_changed=on_list_changed) as client:
        assert [t.name for t in await client.list_all_tools()] == ["a_b_add"]
        assert (await client.read_resource("notes://a/b/x")).contents[0].uri == "notes://a/b/x"  # type: ignore[union-attr]
        assert [t.uriTemplate for t in await client.list_all_resource_templates()] == ["notes://a/b/{name}"]
        inner.tool(lambda: "hi", name="hi")
        with trio.fail_after(5):
            while not changed:
                await trio.sleep(0.01)
        assert text(await client.call_tool("a_b_hi")) == "hi"


async def test_a_mount_made_deeper_while_serving_appears_at_the_top() -> None:
    middle, top = Server("middle", "1"), Server("top", "1")
    middle.tool(lambda: "m", name="own")
    top.mount(middle, prefix="a")
    changed: list[str] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async with connect_server(top, versions=[LEGACY], on_list_changed=on_list_changed) as client:
        assert [t.name for t in await client.list_all_tools()] == ["a_own"]
        middle.mount(notes_server("inner"), prefix="b")
        with trio.fail_after(5):
            while len(changed) < 3:
                await trio.sleep(0.01)
        assert [t.name for t in await client.list_all_tools()] == ["a_own", "a_b_add"]
        assert (await client.call_tool("a_b_add", {"a": 1, "b": 2})).structuredContent == {"result": 3}


async def test_import_server_copies_once() -> None:
    other = notes_server()
    parent = Server("parent", "1")
    parent.import_server(other, prefix="n")
    other.tool(lambda: "too late", name="later")
    async with connect_server(parent) as client:
        assert [t.name for t in await client.list_all_tools()] == ["n_add"]
        assert (await client.call_tool("n_add", {"a": 1, "b": 1})).structuredContent == {"result": 2}
        assert (await client.read_resource("notes://n/index")).contents[0].text == "the index"  # type: ignore[union-attr]
        assert (await client.read_resource("notes://n/x")).contents[0].text == "note x"  # type: ignore[union-attr]
        assert (await client.get_prompt("n_greet", {"who": "b"})).messages[0].content == TextContent(
            text="hello b"
        )
        assert (await client.complete("who", "al", prompt="n_greet")).completion.values == ["alan"]
        completed = await client.complete("name", "", resource_template="notes://n/{name}")
        assert completed.completion.values == ["index", "todo"]
    assert parent.tool_names() == ["n_add"]
    # a clash refuses the whole import, naming what clashes
    again = notes_server()
    with pytest.raises(ValueError, match=r"'n_add', 'n_greet', 'notes://n/index'.*another prefix"):
        parent.import_server(again, prefix="n")
    assert parent.tool_names() == ["n_add"] and parent.prompt_names() == ["n_greet"]


async def test_mounting_into_itself_or_a_cycle_is_refused() -> None:
    a, b, c = Server("a"), Server("b"), Server("c")
    with pytest.raises(
        ValueError, match="cannot mount server 'a' into 'a': a server cannot be mounted into itself"
    ):
        a.mount(a, prefix="x")
    a.mount(b, prefix="b")
    b.mount(c, prefix="c")
    with pytest.raises(ValueError, match="cannot mount server 'a' into 'c'.*cycle"):
        c.mount(a, prefix="a")
    with pytest.raises(ValueError, match="already mounted here under prefix 'b'"):
        a.mount(b, prefix="b")
    with pytest.raises(ValueError, match="a server cannot import itself"):
        a.import_server(a)
    with pytest.raises(ValueError, match=r"has servers mounted \('b'\): mount it instead"):
        Server("d").import_server(a)


@pytest.mark.parametrize("prefix", ["", "a/b", "a b", "_x", "x" * 65, "ü"])
async def test_an_invalid_prefix_is_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match=f"invalid prefix {prefix!r} for server.mount"):
        Server("a").mount(Server("b"), prefix=prefix)
    with pytest.raises(ValueError, match="invalid prefix"):
        Server("a").import_server(Server("b"), prefix=prefix)


async def test_only_a_server_can_be_mounted() -> None:
    with pytest.raises(TypeError, match=r"server.mount\(\) takes a Server, not str"):
        Server("a").mount("b", prefix="b")  # type: ignore[arg-type]


async def test_a_mounted_server_over_http() -> None:
    child = notes_server()
    parent = Server("parent", "1")
    parent.mount(child, prefix="kid")
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(parent.serve_http, "127.0.0.1", 0)
        for version in (LEGACY, LATEST):
            async with connect_http(url, versions=[version]) as client:
                assert (await client.call_tool("kid_add", {"a": 4, "b": 5})).structuredContent == {
                    "result": 9
                }
                read = await client.read_resource("notes://kid/index")
                assert read.contents[0].uri == "notes://kid/index"  # type: ignore[union-attr]
        nursery.cancel_scope.cancel()


class Seen:
    """A middleware recording what it saw as (server, method, name)."""

    def __init__(self, server: str, seen: list[tuple[str, str, str | None]]) -> None:
        self.server, self.seen = server, seen

    async def __call__(self, request: Any, call_next: Any) -> Any:
        name = request.name
        if request.method == "completion/complete":
            ref = request.params.ref
            name = getattr(ref, "name", None) or ref.uri
        self.seen.append((self.server, request.method, name))
        return await call_next(request)


async def test_the_middleware_of_every_server_on_the_way_wraps_a_routed_request() -> None:
    seen: list[tuple[str, str, str | None]] = []
    inner = notes_server("inner")
    middle = Server("middle", "1")
    middle.mount(inner, prefix="b")
    top = Server("top", "1", middleware=[Seen("top", seen)])
    top.mount(middle, prefix="a")
    middle.add_middleware(Seen("middle", seen))  # (added after the mount: live)
    inner.add_middleware(Seen("inner", seen))
    async with connect_server(top, versions=[LEGACY]) as client:
        assert (await client.call_tool("a_b_add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
        assert seen == [
            ("top", "tools/call", "a_b_add"),
            ("middle", "tools/call", "b_add"),
            ("inner", "tools/call", "add"),
        ]
        seen.clear()
        read = await client.read_resource("notes://a/b/todo")
        assert read.contents[0].uri == "notes://a/b/todo"  # type: ignore[union-attr]
        assert [s[2] for s in seen] == ["notes://a/b/todo", "notes://b/todo", "notes://todo"]
        seen.clear()
        prompt = await client.get_prompt("a_b_greet", {"who": "ada"})
        assert prompt.messages[0].content == TextContent(text="hello ada")
        assert [s[2] for s in seen] == ["a_b_greet", "b_greet", "greet"]
        seen.clear()
        assert (await client.complete("who", "a", prompt="a_b_greet")).completion.values == ["ada", "alan"]
        completed = await client.complete("name", "", resource_template="notes://a/b/{name}")
        assert completed.completion.values == ["index", "todo"]
        assert [s[2] for s in seen] == [
            *("a_b_greet", "b_greet", "greet"),
            *("notes://a/b/{name}", "notes://b/{name}", "notes://{name}"),
        ]
        # the top server's own tools see only its own middleware
        seen.clear()
        top.tool(lambda: "own", name="own")
        assert text(await client.call_tool("own")) == "own"
        assert seen == [("top", "tools/call", "own")]


async def test_a_mounted_servers_middleware_may_refuse_change_or_answer() -> None:
    child = notes_server()

    async def guard(request: Any, call_next: Any) -> Any:
        if request.name == "greet":
            raise McpError(-32602, "greet is closed")
        if request.name == "add":  # (arguments changed on the way in, the name as the child has it)
            arguments = {**request.params.arguments, "b": 100}
            request = msgspec.structs.replace(
                request, params=msgspec.structs.replace(request.params, arguments=arguments)
            )
        if request.name == "notes://index":
            return {"contents": [{"uri": "notes://index", "text": "from the middleware"}]}
        if request.name == "notes://gone":  # (renamed out of the child's namespace)
            return await call_next(
                msgspec.structs.replace(request, params=msgspec.structs.replace(request.params, uri="x:y"))
            )
        return await call_next(request)

    child.add_middleware(guard)
    parent = Server("parent", "1")
    parent.mount(child, prefix="kid")
    async with connect_server(parent, versions=[LEGACY]) as client:
        assert (await client.call_tool("kid_add", {"a": 1, "b": 1})).structuredContent == {"result": 101}
        with pytest.raises(McpError, match="greet is closed"):
            await client.get_prompt("kid_greet", {"who": "x"})
        read = await client.read_resource("notes://kid/index")
        assert [(c.uri, c.text) for c in read.contents] == [("notes://kid/index", "from the middleware")]  # type: ignore[union-attr]
        with pytest.raises(McpError, match="Resource not found: x:y"):  # (the child's own namespace)
            await client.read_resource("notes://kid/gone")
        bad = await client.call_tool("kid_add", {"a": "x"})  # (messages still name the tool as called)
        assert bad.isError and text(bad).startswith("Invalid arguments for tool kid_add:")


async def test_a_middleware_cannot_route_out_of_the_server_it_belongs_to() -> None:
    async def elsewhere(request: Any, call_next: Any) -> Any:
        params = msgspec.structs.replace(request.params, name="other_add")
        return await call_next(msgspec.structs.replace(request, params=params))

    middle = Server("middle", "1", middleware=[elsewhere])
    middle.mount(notes_server("inner"), prefix="b")
    top = Server("top", "1")
    top.mount(middle, prefix="a")
    async with connect_server(top, versions=[LEGACY]) as client:
        with pytest.raises(
            McpError, match="a middleware of server 'middle' renamed this tools/call to 'other_add'"
        ):
            await client.call_tool("a_b_add", {"a": 1, "b": 2})
        assert [t.name for t in await client.list_all_tools()] == ["a_b_add"]  # (the session goes on)
