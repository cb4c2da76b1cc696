"""Expected refusals get their own error and a message that says why, never an internal error with a
traceback: a handler that asks the client for what it lacks (its revision has no elicitation,
it did not declare it, or the server is stateless), alone or from several tasks at once."""

from __future__ import annotations

import logging

import httpx2 as httpx
import pytest
import trio

from mcp_trio.server import Context, Server
from mcp_trio.testing import serve_raw
from tests._support.http_server import ACCEPT, events, init, rpc, running

FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


def asking_server() -> Server:
    server = Server("asks", "1")

    @server.prompt
    async def greeting(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", FORM)
        return f"Hello {answer.content['name']}"

    @server.tool
    async def two_questions(ctx: Context) -> str:
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(ctx.elicit, "Your name?", FORM)
        return "asked"

    @server.tool
    async def two_failures(ctx: Context) -> str:
        async def fail(message: str) -> None:
            raise ValueError(message)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(fail, "first")
            nursery.start_soon(fail, "second")
        return "never"

    return server


@pytest.mark.parametrize(
    ("version", "why"),
    [
        ("2025-03-26", "elicitation does not exist in protocol revision 2025-03-26, the one negotiated"),
        ("2025-11-25", "the client did not advertise the 'elicitation' capability"),
    ],
)
async def test_a_prompt_that_asks_for_what_the_client_lacks_is_refused_by_name(
    version: str, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with serve_raw(asking_server()) as peer:
        await peer.initialize(version)
        with caplog.at_level(logging.INFO):
            answer = await peer.request("prompts/get", {"name": "greeting"})
    assert answer["error"]["code"] == -32021  # (what 2026-07-28 names MissingRequiredClientCapability)
    assert answer["error"]["message"].startswith(why)
    assert answer["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]  # (no "failed", no traceback)


async def test_a_tool_that_asks_twice_at_once_says_what_is_missing_not_that_it_was_a_group(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serve_raw(asking_server()) as peer:
        await peer.initialize("2025-11-25")
        with caplog.at_level(logging.INFO):
            answer = await peer.request("tools/call", {"name": "two_questions", "arguments": {}})
    result = answer["result"]
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        "MissingClientCapability: the client did not advertise the 'elicitation' capability"
    )
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_a_tool_whose_tasks_fail_says_what_each_raised() -> None:
    async with serve_raw(asking_server()) as peer:
        await peer.initialize("2025-11-25")
        answer = await peer.request("tools/call", {"name": "two_failures", "arguments": {}})
    said = answer["result"]["content"][0]["text"].split("; ")  # (in the order the tasks failed)
    assert sorted(said) == ["first", "second"]


async def test_in_2026_07_28_a_tool_that_asks_twice_is_refused_with_the_missing_capability() -> None:
    async with serve_raw(asking_server()) as peer:
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        }
        answer = await peer.request("tools/call", {"name": "two_questions", "arguments": {}, "_meta": meta})
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_a_stateless_server_says_it_is_stateless_not_that_the_client_lacks_the_capability() -> None:
    server = asking_server()
    async with running("h11", server, stateless=True) as (url, _), httpx.AsyncClient() as client:
        await client.post(url, headers=ACCEPT, json=init("2025-11-25"))
        headers = {**ACCEPT, "mcp-protocol-version": "2025-11-25"}
        r = await client.post(url, headers=headers, json=rpc(1, "prompts/get", {"name": "greeting"}))
        body = r.json() if r.headers["content-type"] == "application/json" else events(r.content)[-1][1]
    assert body["error"]["code"] == -32021
    message = body["error"]["message"]
    assert message.startswith("this server is stateless (--stateless): in revision 2025-11-25")
    assert "did not advertise" not in message
