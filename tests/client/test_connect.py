"""One-line connections: a server in process, or any target by its kind."""

from __future__ import annotations

import shlex
import sys

import pytest
import trio

from mcp_trio.client import connect, connect_server
from mcp_trio.server import Server
from tests._support.paths import ROOT


def small_server() -> Server:
    server = Server("small")

    @server.tool
    async def double(x: int) -> int:
        return 2 * x

    return server


async def test_a_server_in_process_in_one_line() -> None:
    with trio.fail_after(5):
        async with connect_server(small_server()) as client:
            result = await client.call_tool("double", {"x": 21})
            assert result.structuredContent == {"result": 42}
        async with connect(small_server()) as client:
            assert [t.name for t in await client.list_all_tools()] == ["double"]


async def test_an_error_in_the_block_is_not_wrapped() -> None:
    with trio.fail_after(5), pytest.raises(ValueError, match="mine"):
        async with connect_server(small_server()):
            raise ValueError("mine")


async def test_a_command_line_is_started_as_a_stdio_server() -> None:
    command = [
        sys.executable,
        "-m",
        "mcp_trio._cli",
        "serve",
        str(ROOT / "examples" / "everything.py"),
    ]
    with trio.fail_after(30):
        async with connect(shlex.join(command), cwd=str(ROOT)) as client:
            tools = await client.list_all_tools()
    assert "test_simple_text" in {t.name for t in tools}


def test_what_connect_cannot_take_is_named() -> None:
    with pytest.raises(TypeError, match="connect\\(\\) takes a URL, a command or a server, not int"):
        connect(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="empty command"):
        connect([])
