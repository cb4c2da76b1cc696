"""gateway(backends): several servers behind one, each under its prefix (names and URIs as mount
renames them), only the allowed tools, a timeout per backend; a backend that never answers, floods
notifications or goes away leaves the others served; the gateway's own pages; the configuration
files (TOML, and the ``mcpServers`` JSON clients use) and ``mcp-trio serve`` of one."""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from examples.everything import server as everything
from mcp_trio import McpError
from mcp_trio.client import connect, connect_http
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult
from mcp_trio.client.results import TextContent
from mcp_trio.proxy import Backend, ConfigError, gateway, load_gateway
from mcp_trio.server import Server, prometheus_text
from tests._support.paths import ROOT

pytestmark = pytest.mark.trio

ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MISBEHAVING = [sys.executable, str(ROOT / "tests" / "programs" / "misbehaving_server.py")]
V = ["2025-06-18"]  # (the misbehaving server speaks only this one)


def notes() -> Server:
    server = Server("notes", "1")

    @server.tool
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    def secret() -> str:
        return "not for the gateway's clients"

    @server.resource("notes://today", mime_type="text/plain")
    def today() -> str:
        return "buy tea"

    @server.prompt
    def greet(who: str) -> str:
        return f"hello {who}"

    return server


TEMPLATE = "test://template/{id}/data"


async def everything_completions(argument: str, **ref: str) -> list[str]:
    async with connect(everything, versions=V) as client:
        return (await client.complete(argument, "", **ref)).completion.values


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


async def test_backends_under_their_prefixes_with_only_the_allowed_tools() -> None:
    app = gateway(
        {
            "notes": Backend(notes(), tools=["add"], options={"versions": V}),
            "every": Backend(everything, options={"versions": V}),
        },
        page_size=7,
    )

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="sampled"), model="m")

    async with connect(app, sampling=sampling) as client:
        assert client.protocol_version == "2025-06-18"
        tools = [t.name for t in await client.list_all_tools()]  # (pages of 7, the gateway's)
        assert tools[0] == "notes_add" and "notes_secret" not in tools
        assert "every_test_simple_text" in tools and len(tools) == 1 + len(everything.tool_names())
        assert (await client.call_tool("notes_add", {"a": 2, "b": 3})).structuredContent == {"result": 5}
        for hidden in ("notes_secret", "secret", "nobody_add"):
            with pytest.raises(McpError) as unknown:
                await client.call_tool(hidden)
            assert unknown.value.code == -32602 and hidden in unknown.value.message
        assert text(await client.call_tool("every_test_sampling", {"prompt": "q"})) == "LLM response: sampled"
        uris = [r.uri for r in await client.list_all_resources()]
        assert "notes://notes/today" in uris and "test://every/static-text" in uris
        read = await client.read_resource("notes://notes/today")
        assert read.contents[0].uri == "notes://notes/today"
        assert read.contents[0].text == "buy tea"  # type: ignore[union-attr]
        templates = [t.uriTemplate for t in await client.list_all_resource_templates()]
        assert templates == ["test://every/template/{id}/data"]
        prompt = await client.get_prompt("notes_greet", {"who": "ada"})
        assert prompt.messages[0].content.text == "hello ada"  # type: ignore[union-attr]
        by_prompt = await client.complete("arg1", "", prompt="every_test_prompt_with_arguments")
        direct = await everything_completions("arg1", prompt="test_prompt_with_arguments")
        assert by_prompt.completion.values == direct and direct
        by_template = await client.complete("id", "", resource_template="test://every/template/{id}/data")
        assert by_template.completion.values == await everything_completions("id", resource_template=TEMPLATE)
        with pytest.raises(McpError):
            await client.read_resource("notes://elsewhere/today")


async def test_a_backend_that_never_answers_or_goes_away_leaves_the_others_served() -> None:
    app = gateway(
        {
            "bad": Backend(MISBEHAVING, timeout=2, options={"env": ENV, "versions": V}),
            "notes": Backend(notes(), options={"versions": V}),
        },
        wait=0.2,
        backoff=30,
    )
    async with connect(app) as client:
        with trio.fail_after(5):
            with pytest.raises(McpError) as silent:
                await client.call_tool("bad_silent")
        assert silent.value.code == -32603 and "within 2 s" in silent.value.message
        assert (await client.call_tool("notes_add", {"a": 1, "b": 1})).structuredContent == {"result": 2}
        async with trio.open_nursery() as nursery:  # (a flood from one, a call to the other meanwhile)
            nursery.start_soon(client.call_tool, "bad_flood")
            with trio.fail_after(5):
                added = await client.call_tool("notes_add", {"a": 3, "b": 3})
            nursery.cancel_scope.cancel()
        assert added.structuredContent == {"result": 6}
        with pytest.raises(McpError):
            await client.call_tool("bad_exit")
        with trio.fail_after(5):  # (the lost backend is left out of the list, not waited for)
            names = [t.name for t in await client.list_all_tools()]
        assert names == ["notes_add", "notes_secret"]
        assert (await client.call_tool("notes_add", {"a": 2, "b": 2})).structuredContent == {"result": 4}


async def test_bad_gateways_are_refused_saying_why() -> None:
    with pytest.raises(ValueError, match="at least one backend"):
        gateway({})
    with pytest.raises(ValueError, match="invalid prefix"):
        gateway({"no way": Backend(everything)})
    legacy = Server("legacy", "1", versions=["2025-06-18"])
    mixed = gateway({"a": Backend(legacy), "b": Backend(everything)})  # (2025-06-18, 2026-07-28)
    with pytest.raises(ValueError, match="no protocol revision in common"):
        async with connect(mixed):
            pass


FIRST = ROOT / "docs" / "examples" / "first_server.py"


def write_toml(tmp_path: Path) -> Path:
    config = tmp_path / "gateway.toml"
    config.write_text(
        f"""
[gateway]
name = "front"

[servers.first]
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(FIRST))}]
env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}
tools = ["add"]
timeout = 5
versions = ["2025-11-25"]

[servers.more]
command = {json.dumps(sys.executable)}
args = ["first_server.py"]
cwd = {json.dumps(str(FIRST.parent))}
env = {{ PYTHONPATH = {json.dumps(str(ROOT))} }}
versions = ["2025-11-25"]
"""
    )
    return config


async def test_a_gateway_from_a_toml_file(tmp_path: Path) -> None:
    async with connect(load_gateway(write_toml(tmp_path))) as client:
        assert client.server_info["name"] == "front"
        assert [t.name for t in await client.list_all_tools()] == ["first_add", "more_add"]
        assert (await client.call_tool("more_add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
        templates = [t.uriTemplate for t in await client.list_all_resource_templates()]
        assert templates == ["greeting://first/{name}", "greeting://more/{name}"]
        read = await client.read_resource("greeting://more/Ada")
        assert read.contents[0].text == "Hello, Ada!"  # type: ignore[union-attr]


async def test_a_gateway_from_the_mcp_servers_json_clients_use(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    entry = {"command": sys.executable, "args": [str(FIRST)], "env": {"PYTHONPATH": str(ROOT)}}
    config.write_text(json.dumps({"mcpServers": {"first": {**entry, "versions": ["2025-11-25"]}}}))
    async with connect(load_gateway(config)) as client:
        assert [t.name for t in await client.list_all_tools()] == ["first_add"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"mcpServers": {}}, "no servers"),
        ({"mcpServers": {"a": {"url": "http://x", "command": "y"}}}, "either a command"),
        ({"mcpServers": {"a": {"command": "y", "tools": "add"}}}, "tools must be a list of strings"),
        ({"mcpServers": {"a": {"command": "y", "colour": 1}}}, "unknown key(s) 'colour'"),
        ({"mcpServers": {"a b": {"command": "y"}}}, "invalid prefix 'a b'"),
        ({"mcpServers": {"a": {"command": "y", "timeout": 0}}}, "timeout must be a positive number"),
        ({"servers": {"a": {"command": "y"}}}, "unknown top-level key(s) 'servers'"),
        (
            {"mcpServers": {"a": {"command": "y", "validate": "warn"}}},
            "server 'a' validate: validation action",
        ),
        ({"gateway": {"validate": "x=block"}, "mcpServers": {"a": {"command": "y"}}}, "no rule 'x'"),
    ],
)
async def test_bad_configurations_name_the_file_and_what_to_fix(
    tmp_path: Path, content: dict[str, Any], message: str
) -> None:
    config = tmp_path / "bad.json"
    config.write_text(json.dumps(content))
    with pytest.raises(ConfigError) as refused:
        load_gateway(config)
    assert str(config) in str(refused.value) and message in str(refused.value)


async def test_mcp_trio_serve_serves_a_gateways_configuration_over_http(tmp_path: Path) -> None:
    config = write_toml(tmp_path)
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", str(config), "--http", "127.0.0.1:0"]
    async with trio.open_nursery() as nursery:
        run = partial(trio.run_process, argv, env={**os.environ, **ENV}, stderr=-1, check=False)
        process: trio.Process = await nursery.start(run)
        assert process.stderr is not None
        line = b""
        with trio.fail_after(20):
            while b"\n" not in line:
                line += await process.stderr.receive_some()
        url = line.decode().split(" at ")[1].split()[0]
        async with connect_http(url) as client:
            assert client.protocol_version == "2025-11-25"
            assert [t.name for t in await client.list_all_tools()] == ["first_add", "more_add"]
        process.terminate()


async def test_a_stateless_gateway_marks_its_merged_lists_and_forwards_the_rest() -> None:
    app = gateway({"a": Backend(notes()), "e": Backend(everything)})
    async with connect(app) as client:
        assert client.protocol_version == "2026-07-28"
        listed = await client.session.request("tools/list", {}, result_type=dict[str, Any])
        assert (listed["ttlMs"], listed["cacheScope"]) == (0, "private")
        assert "a_add" in [t["name"] for t in listed["tools"]]
        assert (await client.call_tool("a_add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
        read = await client.read_resource("test://e/static-text")
        assert read.contents[0].uri == "test://e/static-text"


async def test_a_gateway_validates_each_backend_as_its_configuration_says(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    bad = {
        "command": sys.executable,
        "args": MISBEHAVING[1:],
        "env": ENV,
        "validate": "count,result-schema=block",
    }
    unchecked = {"command": sys.executable, "args": MISBEHAVING[1:], "env": ENV, "validate": None}
    config.write_text(
        json.dumps({"gateway": {"validate": "count"}, "mcpServers": {"bad": bad, "raw": unchecked}})
    )
    target = load_gateway(config)
    async with connect(target) as client:
        with pytest.raises(McpError, match="blocked by validation: violation of result-schema"):
            await client.call_tool("bad_malformed")
        assert text(await client.call_tool("bad_twice")) == "first"
        assert text(await client.call_tool("raw_twice")) == "first"
        with trio.fail_after(5):
            while 'rule="one-reply"' not in prometheus_text(target):
                await trio.sleep(0.01)
    metrics = [line for line in prometheus_text(target).splitlines() if line.startswith("mcp_validation")]
    labels = 'grade="violation",sender="server",backend="bad"'
    assert metrics == [
        f'mcp_validation_findings_total{{rule="one-reply",{labels}}} 1',
        f'mcp_validation_findings_total{{rule="result-schema",{labels}}} 1',
    ]
