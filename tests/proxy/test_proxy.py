"""proxy(target): every request forwarded as it is over one upstream session (in memory, over stdio
to a real subprocess, over Streamable HTTP to a real server on 127.0.0.1), what the upstream sends
passed back (progress, logs, asks, list_changed, resources/updated), cancellation passed on, the
revision pinned to the upstream's; a misbehaving upstream (never answers, answers twice, floods
notifications, goes away) answered with errors in bounded time, and reconnected."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest
import trio

from examples.everything import WATCHED_URI
from examples.everything import server as everything
from mcp_trio import LocalProtocolError, McpError
from mcp_trio.client import Client, connect, connect_http, connect_server
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult, ElicitParams, ElicitResult, Root
from mcp_trio.client.results import TextContent
from mcp_trio.proxy import UpstreamUnavailable, _forwarding, proxy
from mcp_trio.server import Server
from tests._support.paths import EVERYTHING, ROOT

pytestmark = pytest.mark.trio

ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MISBEHAVING = [sys.executable, str(ROOT / "tests" / "programs" / "misbehaving_server.py")]
TOUCH = ROOT / "tests" / "programs" / "touch_server.py"
LISTS = [
    ("tools/list", "tools"),
    ("resources/list", "resources"),
    ("resources/templates/list", "resourceTemplates"),
    ("prompts/list", "prompts"),
]
AS_DICT = dict[str, Any]


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


async def raw(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await client.session.request(method, params, result_type=AS_DICT)
    return result


async def outcome(client: Client, method: str, params: dict[str, Any]) -> tuple[Any, ...]:
    """The result, or the error's code, message and data."""
    try:
        return ("result", await raw(client, method, params))
    except McpError as error:
        return ("error", error.code, error.message, error.data)


async def sampling(params: CreateMessageParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="sampled"), model="m")


async def elicitation(params: ElicitParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"username": "ann", "name": "Ann"})


ASKS: dict[str, Any] = {"sampling": sampling, "elicitation": elicitation, "roots": [Root("file:///w", "w")]}


# --------------------------------------------------------------------------- in memory


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", "2026-07-28"])
async def test_lists_and_answers_are_the_upstreams_untouched(version: str) -> None:
    upstream = Server("paged", "1", page_size=3)
    for n in range(7):
        upstream.tool(name=f"t{n}", description=f"tool {n}", annotations={"readOnlyHint": True})(
            lambda x=n: x
        )
        upstream.resource(f"paged://r{n}", mime_type="text/plain")(lambda x=n: str(x))
        upstream.resource(f"paged://t{n}/{{v}}", mime_type="text/plain")(lambda v: v)
        upstream.prompt(name=f"p{n}")(lambda x=n: str(x))
    upstream.mount(everything, prefix="e")
    async with connect_server(upstream, versions=[version]) as direct:
        async with connect(proxy(upstream, versions=[version]), versions=[version]) as through:
            assert through.protocol_version == version
            assert through.server_info == direct.server_info
            assert through.server_capabilities == direct.server_capabilities
            for method, key in LISTS:
                cursor: str | None = None
                pages = 0
                while True:
                    params = {} if cursor is None else {"cursor": cursor}
                    mine, theirs = await raw(through, method, params), await raw(direct, method, params)
                    assert mine == theirs, method
                    cursor = theirs.get("nextCursor")
                    pages += 1
                    if cursor is None:
                        break
                assert pages > 1, key  # (the upstream's pages, its cursors)
            for name, arguments in (
                ("t2", {}),
                ("nope", {}),
                ("e_test_image_content", {}),
                ("e_json_schema_2020_12_tool", {"name": "x"}),
                ("e_json_schema_2020_12_tool", {"name": "x", "address": {"street": "s", "city": "c"}}),
                ("e_test_error_handling", {}),
            ):
                params = {"name": name, "arguments": arguments}
                assert await outcome(through, "tools/call", params) == await outcome(
                    direct, "tools/call", params
                )
            for read in ({"uri": "test://e/static-binary"}, {"uri": "test://e/nothing"}):
                assert await outcome(through, "resources/read", read) == await outcome(
                    direct, "resources/read", read
                )


async def test_progress_logs_and_asks_reach_the_client() -> None:
    progress: list[tuple[float, float | None]] = []
    logs: list[Any] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total))

    async def on_log(message: Any) -> None:
        logs.append(message.data)

    target = proxy(everything, versions=["2025-11-25"])
    async with connect(target, on_log=on_log, **ASKS) as client:
        assert client.protocol_version == "2025-11-25"
        await client.set_log_level("debug")
        result = await client.call_tool("test_tool_with_progress", on_progress=on_progress)
        assert progress == [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)], result
        await client.call_tool("test_tool_with_logging")
        assert len(logs) == 3
        assert text(await client.call_tool("test_sampling", {"prompt": "2+2"})) == "LLM response: sampled"
        elicited = await client.call_tool("test_elicitation", {"message": "who?"})
        assert "accept" in text(elicited) and "ann" in text(elicited)
        assert "file:///w" in text(await client.call_tool("test_input_required_result_list_roots"))


async def test_without_a_client_that_can_answer_an_ask_the_upstream_gets_an_error() -> None:
    async with connect(proxy(everything, versions=["2025-11-25"])) as client:  # (no sampling)
        result = await client.call_tool("test_sampling", {"prompt": "2+2"})
    assert result.isError and "sampling" in text(result)


async def test_multi_round_trip_results_pass_through_in_2026_07_28() -> None:
    async with connect(proxy(everything), **ASKS) as client:
        assert client.protocol_version == "2026-07-28"
        assert text(await client.call_tool("test_input_required_result_elicitation")) == "Hello, Ann!"
        assert "file:///w" in text(await client.call_tool("test_input_required_result_list_roots"))
        assert text(await client.call_tool("test_sampling", {"prompt": "q"})) == "LLM response: sampled"


async def test_cancelling_a_call_cancels_it_upstream_and_one_session_serves_every_call() -> None:
    upstream = Server("slow", "1")
    started, cancelled = trio.Event(), trio.Event()

    @upstream.tool
    async def wait() -> str:
        started.set()
        try:
            await trio.sleep_forever()
        finally:
            cancelled.set()
        return "never"

    @upstream.tool
    def echo(x: int) -> int:
        return x

    target = proxy(upstream, versions=["2025-11-25"])
    async with connect(target) as first, connect(target) as second:
        with trio.move_on_after(5) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(first.call_tool, "wait")
                await started.wait()
                nursery.cancel_scope.cancel()
            await cancelled.wait()
        assert not scope.cancelled_caught
        for n in range(20):
            assert (await (first if n % 2 else second).call_tool("echo", {"x": n})).structuredContent == {
                "result": n
            }
    assert upstream.statistics().sessions_total == 1  # (one upstream session for both clients and every call)


async def test_list_changed_and_resource_updates_are_relayed() -> None:
    upstream = Server("live", "1")

    @upstream.resource("live://value", mime_type="text/plain")
    def value() -> str:
        return "v"

    changed: list[str] = []
    updated: list[str] = []
    got_both = trio.Event()

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async def on_updated(uri: str) -> None:
        updated.append(uri)
        got_both.set()

    target = proxy(upstream, versions=["2025-11-25"])
    async with connect(target, on_list_changed=on_list_changed, on_resource_updated=on_updated) as client:
        await client.subscribe_resource("live://value")
        upstream.tool(name="added")(lambda: 1)
        await upstream.notify_resource_updated("live://value")
        with trio.fail_after(5):
            await got_both.wait()
            while "tools" not in changed:
                await trio.sleep(0.01)
        assert updated == ["live://value"]
        assert "added" in [t.name for t in await client.list_all_tools()]
        await client.unsubscribe_resource("live://value")
        await upstream.notify_resource_updated("live://value")
        await trio.sleep(0.1)
        assert updated == ["live://value"]


async def test_resource_updates_of_a_2026_07_28_upstream_reach_the_listen_streams_watching_them() -> None:
    target = proxy(everything)
    static = "test://static-text"

    async def next_uri(subscription: Any) -> str | None:
        with trio.fail_after(5):
            method, notice = await anext(subscription)
        assert method == "notifications/resources/updated"
        return notice.uri  # type: ignore[no-any-return]

    noted: list[str] = []

    async def on_notification(method: str, params: Any) -> None:
        noted.append(method)

    async with connect(target, on_notification=on_notification) as watcher, connect(target) as other:
        assert watcher.protocol_version == "2026-07-28"
        await watcher.list_tools()  # (a client the proxy has seen)
        async with other.listen(resource_uris=[WATCHED_URI, static]) as elsewhere:
            for _ in range(2):  # (the same URI watched by two streams, one of them left and opened again)
                async with watcher.listen(resource_uris=[WATCHED_URI]) as watching:
                    assert watching.acknowledged == {"resourceSubscriptions": [WATCHED_URI]}
                    await everything.notify_resource_updated(static)  # (not the watcher's)
                    await everything.notify_resource_updated(WATCHED_URI)
                    assert await next_uri(watching) == WATCHED_URI
                    assert [await next_uri(elsewhere), await next_uri(elsewhere)] == [static, WATCHED_URI]
            await everything.notify_resource_updated(WATCHED_URI)  # (still watched upstream for the other)
            assert await next_uri(elsewhere) == WATCHED_URI
    # (its own two streams' acknowledgments and updates: none of the proxy's streams upstream)
    assert noted == ["notifications/subscriptions/acknowledged", "notifications/resources/updated"] * 2


async def test_resources_watched_are_watched_again_and_told_updated_after_a_reconnection() -> None:
    target = proxy([sys.executable, str(TOUCH)], env=ENV, backoff=0.1, wait=10)

    async def next_uri(subscription: Any) -> str | None:
        with trio.fail_after(10):
            method, notice = await anext(subscription)
        assert method == "notifications/resources/updated"
        return notice.uri  # type: ignore[no-any-return]

    async with connect(target) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(resource_uris=["live://value"]) as watching:
            await client.call_tool("touch", {"uri": "live://value"})
            assert await next_uri(watching) == "live://value"
            with pytest.raises(McpError, match="was lost"):
                await client.call_tool("exit")
            # (a new process; once its stream watches the URI, told: it may have changed meanwhile)
            assert await next_uri(watching) == "live://value"
            await client.call_tool("touch", {"uri": "live://value"})  # (waits for the new session)
            assert await next_uri(watching) == "live://value"


async def test_the_resources_watched_upstream_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_forwarding, "MAX_WATCHED", 2)
    async with connect(proxy(everything)) as client:
        async with client.listen(resource_uris=["test://a", "test://b"]):
            with pytest.raises(McpError) as refused:
                async with client.listen(resource_uris=["test://c"]):
                    pass
        assert refused.value.code == -32602
        assert "at most 2 resources of 'mcp-trio-everything'" in refused.value.message
        assert "2 are watched, and this stream asks for 1 more" in refused.value.message
        async with client.listen(resource_uris=["test://c"]) as watching:  # (the others left)
            assert watching.acknowledged == {"resourceSubscriptions": ["test://c"]}


async def test_a_client_speaking_only_another_era_is_refused_by_negotiation() -> None:
    legacy_only = proxy(everything, versions=["2025-06-18"])
    async with connect(legacy_only) as client:  # (it would take 2026-07-28: it is offered 2025-06-18)
        assert client.protocol_version == "2025-06-18"
    with pytest.raises(
        LocalProtocolError, match=r"server supports \['2025-06-18'\], client \['2026-07-28'\]"
    ):
        async with connect(legacy_only, versions=["2026-07-28"]):
            pass
    with pytest.raises(McpError) as stateless:
        async with connect(proxy(everything), versions=["2025-11-25"]):
            pass
    assert stateless.value.code == -32601 and "stateless" in stateless.value.message


async def test_options_the_proxy_sets_itself_are_refused() -> None:
    with pytest.raises(TypeError, match="sampling"):
        proxy(everything, sampling=sampling)
    with pytest.raises(ValueError, match="timeout"):
        proxy(everything, timeout=0)


async def test_an_upstream_that_cannot_be_reached_fails_serving_with_a_clear_error() -> None:
    with pytest.raises(UpstreamUnavailable, match="cannot connect to the proxied server"):
        async with connect(proxy([sys.executable, "-c", "pass"], connect_timeout=5)):
            pass


# ------------------------------------------------------------ real subprocess, real HTTP


async def test_over_stdio_to_a_subprocess() -> None:
    target = proxy([sys.executable, str(EVERYTHING)], env=ENV, versions=["2025-11-25"])
    async with connect(target, **ASKS) as client:
        assert client.server_info["name"] == "mcp-trio-everything"
        assert len(await client.list_all_tools()) > 20
        assert text(await client.call_tool("test_sampling", {"prompt": "2+2"})) == "LLM response: sampled"
        read = await client.read_resource("test://template/7/data")
        assert '"id":"7"' in read.contents[0].text.replace(" ", "")  # type: ignore[union-attr]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_over_streamable_http_both_sides(version: str) -> None:
    async with trio.open_nursery() as nursery:
        (upstream_url,) = await nursery.start(everything.serve_http, "127.0.0.1", 0)
        target = proxy(upstream_url, versions=[version])
        (url,) = await nursery.start(target.serve_http, "127.0.0.1", 0)
        async with connect_http(url, **ASKS) as client:
            assert client.protocol_version == version
            progress: list[float] = []

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                progress.append(value)

            await client.call_tool("test_tool_with_progress", on_progress=on_progress)
            assert progress == [0.0, 50.0, 100.0]
            assert text(await client.call_tool("test_sampling", {"prompt": "q"})) == "LLM response: sampled"
            assert "Ann" in text(await client.call_tool("test_input_required_result_elicitation"))
        nursery.cancel_scope.cancel()


# ------------------------------------------------------------------ a misbehaving upstream


async def test_a_misbehaving_upstream_cannot_wedge_the_proxy() -> None:
    logs = 0

    async def on_log(message: Any) -> None:
        nonlocal logs
        logs += 1

    target = proxy(MISBEHAVING, env=ENV, timeout=2, queue_size=64)
    async with connect(target, on_log=on_log) as client:
        pid = text(await client.call_tool("pid"))
        with trio.fail_after(5):
            with pytest.raises(McpError) as silent:
                await client.call_tool("silent")
        assert silent.value.code == -32603 and "did not answer tools/call within 2 s" in silent.value.message
        assert text(await client.call_tool("twice")) == "first"  # (the second answer is dropped)
        with trio.fail_after(10):
            assert text(await client.call_tool("flood")) == "flooded"
        assert text(await client.call_tool("pid")) == pid  # (the same process, one handshake)
        assert pid.endswith(" 1")
    assert logs < 5000  # (a flood is dropped past the queue, not waited for)


async def test_a_lost_upstream_answers_in_flight_requests_and_is_reconnected() -> None:
    target = proxy(MISBEHAVING, env=ENV, backoff=0.05, timeout=5)
    changed: list[str] = []

    async def on_list_changed(kind: str) -> None:
        changed.append(kind)

    async with connect(target, on_list_changed=on_list_changed) as client:
        first = text(await client.call_tool("pid"))
        with trio.fail_after(5):
            with pytest.raises(McpError) as lost:
                await client.call_tool("exit")
        assert lost.value.code == -32603 and "was lost while tools/call was in flight" in lost.value.message
        with trio.fail_after(10):
            second = text(await client.call_tool("pid"))  # (waits for the new connection)
        assert second != first and second.endswith(" 1")
        with trio.fail_after(5):
            while "tools" not in changed:  # (the lists may differ: the client is told)
                await trio.sleep(0.01)


async def test_requests_while_the_upstream_is_away_get_an_error_after_the_wait() -> None:
    target = proxy(MISBEHAVING, env=ENV, backoff=30, wait=0.2)
    async with connect(target) as client:
        with pytest.raises(McpError):
            await client.call_tool("exit")
        with trio.fail_after(5):
            with pytest.raises(McpError) as away:
                await client.call_tool("pid")
        assert away.value.code == -32603 and "is not connected" in away.value.message


async def test_a_stateless_clients_own_capabilities_reach_the_upstream() -> None:
    async with connect(proxy(everything)) as client:  # (2026-07-28, no sampling declared)
        assert client.protocol_version == "2026-07-28"
        with pytest.raises(McpError) as missing:
            await client.call_tool("test_missing_capability")
    assert missing.value.code == -32021


async def test_the_upstreams_header_annotations_are_the_proxys() -> None:
    target = proxy(everything)
    async with connect(target):
        mine = target.tool_header_annotations("test_custom_headers")
        assert mine and mine == everything.tool_header_annotations("test_custom_headers")
        assert target.tool_header_annotations("test_simple_text") == []
        assert target.tool_header_annotations("nope") is None


async def test_list_changes_of_a_stateless_upstream_reach_listening_clients() -> None:
    upstream = Server("live", "1")
    upstream.tool(name="first")(lambda: 1)
    async with connect(proxy(upstream)) as client:
        assert client.protocol_version == "2026-07-28"
        async with client.listen(tools=True) as subscription:
            await trio.sleep(0.2)  # (the proxy's own stream to the upstream is open by now)
            upstream.tool(name="second")(lambda: 2)
            with trio.fail_after(5):
                method, _ = await subscription.__anext__()
        assert method == "notifications/tools/list_changed"
        assert [t.name for t in await client.list_all_tools()] == ["first", "second"]


async def test_mounting_or_importing_a_proxy_is_refused_saying_why() -> None:
    app = Server("app", "1")
    for what in (app.mount, app.import_server):
        with pytest.raises(ValueError, match="it answers by forwarding"):
            what(proxy(everything), "remote")


async def test_offered_revisions_each_get_an_upstream_session_of_their_own() -> None:
    offered = ["2025-06-18", "2025-11-25", "2026-07-28"]
    upstream = Server("every", "1")
    upstream.mount(everything)
    target = proxy(upstream, offer=offered)
    async with connect(target, versions=["2025-06-18"], **ASKS) as old, connect(target, **ASKS) as new:
        async with connect(target, versions=["2025-11-25"], **ASKS) as mid:
            for client, version in ((old, "2025-06-18"), (mid, "2025-11-25"), (new, "2026-07-28")):
                assert client.protocol_version == version
                async with connect_server(upstream, versions=[version]) as direct:
                    assert await raw(client, "tools/list", {}) == await raw(direct, "tools/list", {})
                sampled = await client.call_tool("test_sampling", {"prompt": "q"})
                assert text(sampled) == "LLM response: sampled"
            assert "Ann" in text(await new.call_tool("test_input_required_result_elicitation"))
            audio = await old.call_tool("test_audio_content")  # (2025-06-18 has audio: not a tool error)
            assert not audio.isError
    assert upstream.statistics().sessions_total == 3 + 3  # (one per revision, and the direct ones)


async def test_offered_revisions_the_upstream_does_not_speak_are_left_out() -> None:
    legacy = Server("legacy", "1", versions=["2025-06-18"])
    legacy.tool(name="one")(lambda: 1)
    target = proxy(legacy, offer=["2025-06-18", "2026-07-28"])
    async with connect(target) as client:
        assert client.protocol_version == "2025-06-18"
        with pytest.raises(LocalProtocolError, match="no protocol version in common"):
            async with connect(target, versions=["2026-07-28"]):
                pass
    with pytest.raises(ValueError, match="non-empty list"):
        proxy(legacy, offer=[])
