"""proxy() in front of real peers, each compared with the same peer called directly: the official
everything server (npm ``@modelcontextprotocol/server-everything``, TypeScript SDK) and a FastMCP
server, each over stdio and over Streamable HTTP.  The peers are the pinned ones the fuzzing
campaigns install (fuzz/npm-pins.json, fuzz/requirements.txt; ``python -m fuzz.campaigns``'s cache)."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from fuzz.campaigns import BY_ID, EV, Installed, cache_dir, install, launched
from mcp_trio import McpError
from mcp_trio.client import Client, connect, open_client
from mcp_trio.proxy import proxy
from mcp_trio.transports.stdio import open_stdio_client
from tests._support.paths import ROOT

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


async def test_the_official_everything_server_over_stdio_behind_the_stdio_relay(
    peers: Installed, tmp_path: Path
) -> None:
    """The proxy served over stdio (tests/programs/relay_proxy.py), its calls relayed."""
    with launched(BY_ID["everything-server-stdio"], peers) as options:
        command = shlex.split(options[1])
        metrics = tmp_path / "metrics.txt"
        env = {
            **peers.environ(),
            "PYTHONPATH": str(ROOT),
            "RELAY_UPSTREAM": json.dumps(command),
            "RELAY_METRICS": str(metrics),
        }
        served = [sys.executable, str(ROOT / "tests" / "programs" / "relay_proxy.py")]
        # (the proxy writes its metrics once its upstream is closed: time to do it on the way out)
        async with (
            open_stdio_client(served, env=env, shutdown_grace=30) as process,
            connect(command, env=peers.environ(), **AS_THE_PROXY) as direct,
            open_client(process.channel, **AS_THE_PROXY) as through,
        ):
            assert through.server_info == direct.server_info
            for method in LISTS:
                if method.split("/")[0] in direct.server_capabilities:
                    assert await outcome(through, method, {}) == await outcome(direct, method, {}), method
            for call in EVERYTHING_CALLS * 3:
                assert await outcome(through, "tools/call", call) == await outcome(direct, "tools/call", call)
        with trio.fail_after(20):
            while not metrics.exists():
                await trio.sleep(0.05)
        relayed = [
            line for line in metrics.read_text().splitlines() if line.startswith("mcp_upstream_relayed")
        ]
        assert relayed and int(relayed[0].split()[-1]) >= len(EVERYTHING_CALLS) * 3
