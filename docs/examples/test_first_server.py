"""Testing first_server.py in process, with pytest and pytest-trio (no subprocess, no socket)."""

from collections.abc import AsyncIterator

import pytest
from first_server import server

from mcp_trio.client import Client, connect_server


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async with connect_server(server) as client:
        yield client


@pytest.mark.trio
async def test_add(client: Client) -> None:
    result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structuredContent == {"result": 5}


@pytest.mark.trio
async def test_add_refuses_a_string(client: Client) -> None:
    result = await client.call_tool("add", {"a": 2, "b": "three"})
    assert result.isError
    assert "Expected `int`, got `str`" in result.content[0].text


@pytest.mark.trio
async def test_greeting(client: Client) -> None:
    read = await client.read_resource("greeting://Ada")
    assert read.contents[0].text == "Hello, Ada!"
