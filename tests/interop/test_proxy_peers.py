"""proxy() in front of real peers, each compared with the same peer called directly: the official
everything server (npm ``@modelcontextprotocol/server-everything``, TypeScript SDK) and a FastMCP
server, each over stdio and over Streamable HTTP.  The peers are the pinned ones the fuzzing
campaigns install (fuzz/npm-pins.json, fuzz/requirements.txt; ``python -m fuzz.campaigns``'s cache)."""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from fuzz.campaigns import BY_ID, EV, Installed, cache_dir, install, launched
from mcp_trio import McpError
from mcp_trio.client import Client, connect
from mcp_trio.proxy import proxy

pytestmark = [pytest.mark.interop, pytest.mark.slow, pytest.mark.trio]

LISTS = ("tools/list", "resources/list", "resources/templates/list", "prompts/list")


@pytest.fixture(scope="module")
def peers() -> Installed:
    installed = install(cache_dir(), need_python=True, need_node=True)
    missing = {name: why for name, why in installed.missing.items() if name in (EV, "fastmcp")}
    if missing:
        pytest.fail(f"the peers could not be installed: {missing}")
    return installed


async def outcome(client: Client, method: str, params: dict[str, Any]) -> tuple[Any, ...]:
    try:
        return ("result", await client.session.request(method, params, result_type=dict[str, Any]))
    except McpError as error:
        return ("error", error.code, error.message, error.data)


async def answer(params: Any) -> dict[str, Any]:
    return {"action": "decline"}


#: What the proxy declares upstream (it answers the asks through its own clients): a direct client
#: declaring the same, for a peer that offers tools by the client's capabilities.
AS_THE_PROXY: dict[str, Any] = {
    "sampling": answer,
    "elicitation": answer,
    "elicitation_modes": ("form", "url"),
    "roots": [],
}


async def same_through_the_proxy(target: Any, calls: list[dict[str, Any]], **options: Any) -> None:
    async with (
        connect(target, **options, **AS_THE_PROXY) as direct,
        connect(proxy(target, **options)) as through,
    ):
        assert through.protocol_version == direct.protocol_version
        assert through.server_info == direct.server_info
        assert through.server_capabilities == direct.server_capabilities
        for method in LISTS:
            if method.split("/")[0] in direct.server_capabilities:
                assert await outcome(through, method, {}) == await outcome(direct, method, {}), method
        for call in calls:
            assert await outcome(through, "tools/call", call) == await outcome(direct, "tools/call", call)


EVERYTHING_CALLS = [
    {"name": "echo", "arguments": {"message": "through the proxy"}},
    {"name": "get-sum", "arguments": {"a": 2, "b": 3}},
    {"name": "get-sum", "arguments": {"a": "two"}},
    {"name": "no-such-tool", "arguments": {}},
]


async def test_the_official_everything_server_over_stdio(peers: Installed) -> None:
    with launched(BY_ID["everything-server-stdio"], peers) as options:
        command = shlex.split(options[1])
        await same_through_the_proxy(command, EVERYTHING_CALLS, env=peers.environ())


async def test_the_official_everything_server_over_streamable_http(peers: Installed) -> None:
    with launched(BY_ID["everything-server-http"], peers) as options:
        await same_through_the_proxy(options[1], EVERYTHING_CALLS)


async def test_a_fastmcp_server_over_stdio(peers: Installed) -> None:
    with launched(BY_ID["fastmcp-server-stdio"], peers) as options:
        command = shlex.split(options[1])
        calls = [{"name": "echo", "arguments": {"text": "hi"}}, {"name": "echo", "arguments": {}}]
        await same_through_the_proxy(command, calls, env=peers.environ())


async def test_a_fastmcp_server_over_streamable_http(peers: Installed) -> None:
    with launched(BY_ID["fastmcp-server-http"], peers) as options:
        calls = [{"name": "echo", "arguments": {"text": "hi"}}, {"name": "echo", "arguments": {}}]
        await same_through_the_proxy(options[1], calls)
