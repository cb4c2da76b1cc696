"""proxy(target, validate=...): every message between the proxy and the server it proxies checked
by the fuzzer's oracles; findings logged, counted (the proxy's metrics) or blocked as the policy
says, against a real misbehaving stdio server and a raw one in memory; the session goes on."""

from __future__ import annotations

import logging
import os
import sys
from functools import partial
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import McpError, RemoteProtocolError
from mcp_trio.client import connect, open_client
from mcp_trio.fuzzing.wire import Policy, Validator, WireCheck
from mcp_trio.proxy import proxy
from mcp_trio.proxy._validating import ValidatingChannel
from mcp_trio.server import prometheus_text
from mcp_trio.transports import Frame
from mcp_trio.transports.memory import open_memory_transport_pair
from tests._support.messages import note, request, result
from tests._support.paths import ROOT

pytestmark = pytest.mark.trio

ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MISBEHAVING = [sys.executable, str(ROOT / "tests" / "programs" / "misbehaving_server.py")]
OLD = "2025-06-18"
TOOLS = {"tools": [{"name": "add", "inputSchema": {"type": "object"}}]}


async def test_a_validating_proxy_blocks_a_malformed_answer_and_counts_a_double_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = proxy(MISBEHAVING, env=ENV, validate="count,result-schema=block")
    with caplog.at_level(logging.WARNING, logger="mcp_trio.validate"):
        async with connect(target) as client:
            with pytest.raises(McpError) as blocked:
                await client.call_tool("malformed")
            assert blocked.value.code == -32603
            assert "answer was blocked by validation: violation of result-schema" in blocked.value.message
            assert "not a valid tools/call result" in blocked.value.message
            assert (await client.call_tool("twice")).text == "first"  # (the second one: counted)
            with trio.fail_after(5):
                while "one-reply" not in prometheus_text(target):
                    await trio.sleep(0.01)
            assert (await client.call_tool("pid")).text.endswith(" 1")  # (the session goes on)
    metrics = prometheus_text(target)
    assert (
        'mcp_validation_findings_total{rule="result-schema",grade="violation",sender="server"} 1' in metrics
    )
    assert 'mcp_validation_findings_total{rule="one-reply",grade="violation",sender="server"} 1' in metrics
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["blocked, the server"]


async def test_without_validate_the_malformed_answer_passes_through_as_it_is() -> None:
    target = proxy(MISBEHAVING, env=ENV)
    async with connect(target) as client:
        with pytest.raises(
            RemoteProtocolError, match="invalid result for tools/call"
        ):  # (found by the client)
            await client.call_tool("malformed")
    assert "mcp_validation_findings_total" not in prometheus_text(target)


async def test_a_policy_that_does_not_parse_is_refused_when_the_proxy_is_made() -> None:
    with pytest.raises(ValueError, match="no rule 'result-shape' to validate"):
        proxy(MISBEHAVING, validate="result-shape=block")
    with pytest.raises(ValueError, match="validation action 'drop'"):
        proxy(MISBEHAVING, validate=Policy("drop"))  # type: ignore[arg-type]


async def misbehaving_server(channel: Any, answers: list[Any], version: str = OLD) -> None:
    """A raw server: answers initialize, then tools/list with a result that is not one (and
    twice), answers a request never sent, announces a list change it did not declare, and asks
    for sampling the client did not offer."""
    async for frame in channel:
        message = msgspec.json.decode(frame.data)
        method, rid = message.get("method"), message.get("id")

        async def send(value: Any) -> None:
            await channel.send(Frame(msgspec.json.encode(value)))

        if method == "initialize":
            info = {"name": "bad", "version": "1"}
            await send(
                result(rid, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
            )
        elif method == "tools/list":
            await send(result(rid, {"tools": [{"name": 1}]}))
            await send(result(rid, TOOLS))
            await send(result(4242, TOOLS))
            await send(note("notifications/tools/list_changed"))
            await send(request("s1", "sampling/createMessage", {"messages": [], "maxTokens": 1}))
        elif method == "tools/call":
            await send(result(rid, {"content": [{"type": "text", "text": "ok"}]}))
        elif rid == "s1":
            answers.append(message)  # (the client's answer to its ask)


async def test_a_validating_channel_blocks_what_its_policy_says_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ours, theirs = open_memory_transport_pair()
    validator = Validator(WireCheck(), Policy.parse("count,result-schema=block,capabilities=block"))
    seen: list[tuple[str, Any]] = []
    answers: list[Any] = []

    async def on_notification(method: str, params: Any) -> None:
        seen.append((method, params))

    with caplog.at_level(logging.INFO, logger="mcp_trio.validate"):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(misbehaving_server, theirs, answers)
            wrap = partial(ValidatingChannel, validator=validator)
            async with open_client(
                ours, wrap_channel=wrap, versions=[OLD], on_notification=on_notification
            ) as client:
                assert validator.wire.revision == OLD  # (learned from the initialize answer)
                with pytest.raises(
                    McpError, match="answer was blocked by validation: violation of result-schema"
                ) as err:
                    await client.list_tools()
                assert err.value.code == -32603
                with trio.fail_after(5):
                    while not answers:
                        await trio.sleep(0.01)
                (answer,) = answers
                assert (
                    answer["error"]["code"] == -32601
                    and "blocked: note of capabilities" in answer["error"]["message"]
                )
                assert "notifications/tools/list_changed" not in [m for m, _ in seen]  # (dropped)
                assert (await client.call_tool("add", {})).text == "ok"  # (the session goes on)
            nursery.cancel_scope.cancel()
    counts = {(row["rule"], row["sender"]): row["count"] for row in validator.report()["findings"]}
    assert counts == {
        ("result-schema", "server"): 1,
        ("one-reply", "server"): 1,
        ("unasked-response", "server"): 1,
        ("capabilities", "server"): 2,
    }
    assert [r.getMessage().split(":")[0] for r in caplog.records] == [
        "blocked, the server",
        "blocked, the server",
        "blocked, the server",
    ]
