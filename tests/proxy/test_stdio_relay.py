"""A proxy served over stdio in front of a command line relays the plain calls between the pipes
in threads (mcp_trio/proxy/_relay.py), and keeps what the session path does: timeouts,
cancellation, upstream loss, invalid answers, duplicate ids, asks and logs of the upstream, the
metrics, a graceful shutdown.  Every test runs the proxy as a real subprocess
(tests/programs/relay_proxy.py) in front of another (tests/programs/relay_upstream.py), which
tells the ids it saw: ``relay-<n>`` for a relayed call, an integer for the session's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import McpError
from mcp_trio.client import Client, connect, open_client
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult, LogMessage
from mcp_trio.client.results import TextContent
from mcp_trio.transports import Frame
from mcp_trio.transports.stdio import StreamChannel, open_stdio_client
from tests._support.paths import ROOT

pytestmark = pytest.mark.trio

PROXY = [sys.executable, str(ROOT / "tests" / "programs" / "relay_proxy.py")]
SERVED = [sys.executable, "-m", "mcp_trio._cli", "serve", str(ROOT / "tests" / "programs" / "relay_proxy.py")]
ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def text(result: Any) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent), result
    return block.text


async def seen(client: Client) -> Any:
    """The id the upstream saw for a ``tools/call``."""
    return json.loads(text(await client.call_tool("seen")))["id"]


async def test_plain_calls_are_relayed_once_the_session_forwarded_one() -> None:
    async with connect(PROXY, env=ENV) as client:
        first = await seen(client)
        assert isinstance(first, int)  # (the session's: the relay starts after it)
        ids = [await seen(client) for _ in range(3)]
        assert all(isinstance(i, str) and i.startswith("relay-") for i in ids), ids
        assert len(set(ids)) == 3
        tools = await client.list_tools()
        assert "seen" in [tool.name for tool in tools.tools]
        read = await client.read_resource("test://seen")
        assert str(json.loads(read.contents[0].text)).startswith("relay-")  # type: ignore[union-attr]


@pytest.mark.parametrize("why", ["RELAY_OFF", "RELAY_MIDDLEWARE"])
async def test_without_the_relay_every_call_goes_through_the_sessions(why: str) -> None:
    async with connect(PROXY, env={**ENV, why: "1"}) as client:
        ids = [await seen(client) for _ in range(4)]
        assert all(isinstance(i, int) for i in ids), ids


async def test_a_call_with_a_progress_token_goes_through_the_sessions() -> None:
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async with connect(PROXY, env=ENV) as client:
        await seen(client)
        result = await client.call_tool("progress", on_progress=on_progress)
        assert text(result) == "progress True" and reported == [1]
        assert str(await seen(client)).startswith("relay-")


async def test_a_relayed_call_past_the_timeout_is_answered_and_cancelled_upstream() -> None:
    async with connect(PROXY, env={**ENV, "RELAY_TIMEOUT": "0.5"}) as client:
        await seen(client)
        with trio.fail_after(5), pytest.raises(McpError) as late:
            await client.call_tool("silent")
        assert late.value.code == -32603
        assert "did not answer tools/call within 0.5 s" in late.value.message
        cancelled = json.loads(text(await client.call_tool("cancelled")))
        assert len(cancelled) == 1 and cancelled[0].startswith("relay-")


async def test_a_relayed_call_the_client_cancels_is_cancelled_upstream() -> None:
    async with connect(PROXY, env=ENV) as client:
        await seen(client)
        with trio.move_on_after(0.3):
            await client.call_tool("silent")
        with trio.fail_after(5):
            while True:  # (the notification may reach the upstream after the next call)
                cancelled = json.loads(text(await client.call_tool("cancelled")))
                if cancelled:
                    break
                await trio.sleep(0.02)
        assert len(cancelled) == 1 and cancelled[0].startswith("relay-")
        assert str(await seen(client)).startswith("relay-")


async def test_a_lost_upstream_answers_the_relayed_calls_and_relaying_starts_again() -> None:
    async with connect(PROXY, env=ENV) as client:
        before = json.loads(text(await client.call_tool("seen")))["pid"]
        assert str(await seen(client)).startswith("relay-")
        with trio.fail_after(5), pytest.raises(McpError) as lost:
            await client.call_tool("exit")
        assert lost.value.code == -32603
        assert "was lost while tools/call was in flight" in lost.value.message
        with trio.fail_after(10):
            after = json.loads(text(await client.call_tool("seen")))  # (the session's: it waits)
        assert after["pid"] != before and isinstance(after["id"], int)
        assert str(await seen(client)).startswith("relay-")


async def test_an_answer_that_is_not_valid_is_replaced_by_an_error() -> None:
    async with connect(PROXY, env=ENV) as client:
        await seen(client)
        with pytest.raises(McpError) as invalid:
            await client.call_tool("invalid")
        assert invalid.value.code == -32603
        assert "answered tools/call with a message that is not valid" in invalid.value.message
        assert "both a result and an error" in invalid.value.message
        with trio.fail_after(5), pytest.raises(McpError) as version:  # (not after the 60 s timeout)
            await client.call_tool("badversion")
        assert version.value.code == -32603 and '"jsonrpc" member is not "2.0"' in version.value.message


async def test_asks_and_logs_of_the_upstream_reach_the_client_of_relayed_calls() -> None:
    logged: list[Any] = []

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="sampled"), model="m")

    async def on_log(message: LogMessage) -> None:
        logged.append(message.data)

    async with connect(PROXY, env=ENV, sampling=sampling, on_log=on_log) as client:
        await seen(client)
        assert text(await client.call_tool("ask")) == "sampled"
        assert text(await client.call_tool("log")) == "logged"
        with trio.fail_after(5):
            while not logged:
                await trio.sleep(0.01)
        assert logged == ["hello"]
        assert str(await seen(client)).startswith("relay-")


async def test_relayed_calls_are_counted_in_the_upstream_metrics_and_server_statistics(
    tmp_path: Path,
) -> None:
    metrics = tmp_path / "metrics.txt"
    env = {**ENV, "RELAY_METRICS": str(metrics), "RELAY_TIMEOUT": "0.5"}
    async with connect(PROXY, env=env) as client:
        for _ in range(4):
            await seen(client)
        with pytest.raises(McpError):
            await client.call_tool("silent")
        with pytest.raises(McpError):
            await client.call_tool("invalid")
    with trio.fail_after(10):
        while not metrics.exists():
            await trio.sleep(0.05)
    lines = set(metrics.read_text().splitlines())
    prefix = 'mcp_upstream_requests_total{method="tools/call",outcome='
    assert f'{prefix}"ok"}} 4' in lines  # (one by the session, three relayed)
    assert f'{prefix}"timeout"}} 1' in lines
    assert f'{prefix}"invalid"}} 1' in lines
    assert "mcp_upstream_relayed_total 5" in lines  # (all but the first)
    # The server's own request statistics count the relayed calls as the stdio session's, as
    # they count them without the relay (the handshake is no request handled).
    counted = 'mcp_requests_total{transport="stdio",outcome='
    assert f'{counted}"ok"}} 4' in lines  # (one by the session, three relayed)
    assert f'{counted}"error"}} 2' in lines  # (the timeout and the invalid answer)
    assert f'{counted}"cancelled"}} 0' in lines
    assert 'mcp_requests_in_flight{transport="stdio"} 0' in lines


async def exchange(process: Any, message: dict[str, Any]) -> None:
    await process.channel.send(Frame(json.dumps(message).encode()))


async def answer(process: Any) -> dict[str, Any]:
    with trio.fail_after(10):
        frame = await process.channel.receive()
    value: dict[str, Any] = json.loads(frame.data)
    return value


async def handshake(process: Any) -> None:
    params = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    await exchange(process, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    assert (await answer(process))["id"] == 0
    await exchange(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    await exchange(process, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert (await answer(process))["id"] == 1  # (the session's: relaying starts)


def call(id: Any, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name}}


async def test_an_id_in_use_by_a_relayed_call_is_refused_and_bad_input_gets_the_sessions_errors() -> None:
    async with open_stdio_client(PROXY, env=ENV) as process:
        await handshake(process)
        await exchange(process, call(7, "silent"))
        await exchange(process, call(7, "seen"))
        refused = await answer(process)
        assert refused["id"] == 7 and refused["error"]["code"] == -32600
        assert "already in use" in refused["error"]["message"]
        await exchange(process, {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": 7})
        assert (await answer(process))["error"]["code"] == -32602
        await process.channel.send(Frame(b'{"jsonrpc": "2.0", "id": 9, "method": '))
        assert (await answer(process))["error"]["code"] == -32700
        await exchange(
            process, {"jsonrpc": "2.0", "id": True, "method": "tools/call", "params": {"name": "seen"}}
        )
        assert (await answer(process))["error"]["code"] == -32600
        await exchange(process, call(10, "seen"))
        relayed = await answer(process)
        assert relayed["id"] == 10 and json.loads(relayed["result"]["content"][0]["text"])["id"].startswith(
            "relay-"
        )


async def test_an_id_in_use_on_either_path_is_refused_on_the_other() -> None:
    async with open_stdio_client(PROXY, env=ENV) as process:
        await handshake(process)
        # A relayed call holds 7: a ping with that id (the session's, else) is refused.
        await exchange(process, call(7, "silent"))
        await exchange(process, {"jsonrpc": "2.0", "id": 7, "method": "ping"})
        refused = await answer(process)
        assert refused["id"] == 7 and refused["error"]["code"] == -32600, refused
        # The session holds 20 (a call with a progress token is its): a call that the relay
        # would take with that id goes to the session, which refuses it; one answer each.
        slow = call(20, "slow")
        slow["params"]["_meta"] = {"progressToken": "p"}
        await exchange(process, slow)
        await trio.sleep(0.1)
        await exchange(process, call(20, "seen"))
        refused = await answer(process)
        assert refused["id"] == 20 and refused["error"]["code"] == -32600, refused
        assert "already in use" in refused["error"]["message"]
        done = await answer(process)
        assert done["id"] == 20 and isinstance(json.loads(done["result"]["content"][0]["text"])["id"], int)
        # Once answered, the id is free again; the next call takes the relay.
        await exchange(process, call(20, "seen"))
        again = await answer(process)
        assert again["id"] == 20
        assert json.loads(again["result"]["content"][0]["text"])["id"].startswith("relay-")


async def test_a_graceful_shutdown_waits_for_the_relayed_calls() -> None:
    async with open_stdio_client(SERVED, env=ENV, stderr=subprocess.DEVNULL) as process:
        await handshake(process)
        await exchange(process, call(2, "seen"))
        assert (await answer(process))["result"]["content"][0]["text"].find("relay-") > 0
        await exchange(process, call(3, "slow"))
        await trio.sleep(0.1)
        process.process.send_signal(signal.SIGTERM)
        slow = await answer(process)
        assert slow["id"] == 3 and json.loads(slow["result"]["content"][0]["text"])["id"].startswith("relay-")
        with trio.fail_after(10):
            assert await process.process.wait() == 0


async def test_calls_past_the_sessions_max_in_flight_go_through_the_session() -> None:
    async with open_stdio_client(PROXY, env=ENV) as process:
        await handshake(process)
        for n in range(63):  # (the session's max_in_flight is 64)
            await exchange(process, call(100 + n, "silent"))
        await exchange(process, call(2, "seen"))
        under = await answer(process)
        assert json.loads(under["result"]["content"][0]["text"])["id"].startswith("relay-")
        await exchange(process, call(163, "silent"))
        await exchange(process, call(3, "seen"))  # (the 65th: the session takes it)
        over = await answer(process)
        assert over["id"] == 3 and isinstance(json.loads(over["result"]["content"][0]["text"])["id"], int)


async def test_a_relayed_call_is_answered_after_the_client_closes_its_input() -> None:
    async with open_stdio_client(PROXY, env=ENV) as process:
        await handshake(process)
        await exchange(process, call(5, "slow"))
        await trio.sleep(0.1)
        assert process.process.stdin is not None
        await process.process.stdin.aclose()
        slow = await answer(process)
        assert slow["id"] == 5 and json.loads(slow["result"]["content"][0]["text"])["id"].startswith("relay-")
        with trio.fail_after(10):
            assert await process.process.wait() == 0


async def test_a_flood_of_upstream_notifications_does_not_hold_a_relayed_answer_forever() -> None:
    logged: list[Any] = []

    async def on_log(message: LogMessage) -> None:
        logged.append(message.data)

    async with connect(PROXY, env=ENV, on_log=on_log) as client:
        await seen(client)
        with trio.fail_after(20):
            flooded = json.loads(text(await client.call_tool("flood")))
        assert flooded["id"].startswith("relay-")
        assert str(await seen(client)).startswith("relay-")
    assert 0 < len(logged) <= 5000


def call_with(id: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def test_a_late_answer_to_a_call_that_timed_out_is_dropped() -> None:
    async with open_stdio_client(PROXY, env={**ENV, "RELAY_TIMEOUT": "0.5"}) as process:
        await handshake(process)
        await exchange(process, call(5, "late"))
        late = await answer(process)
        assert (
            late["id"] == 5 and late["error"]["code"] == -32603 and "within 0.5 s" in late["error"]["message"]
        )
        await trio.sleep(1.0)  # (the upstream's answer came meanwhile)
        await exchange(process, call(6, "seen"))
        after = await answer(process)  # (the next frame is its answer: no second one for 5)
        assert after["id"] == 6 and json.loads(after["result"]["content"][0]["text"])["id"].startswith(
            "relay-"
        )


async def test_a_busy_child_does_not_stop_the_proxy_reading_its_client() -> None:
    async with open_stdio_client(PROXY, env=ENV) as process:
        await handshake(process)
        await exchange(process, call(2, "nap"))  # (the child reads nothing for 2 s)
        padding = "x" * 2048
        for n in range(60):  # (more than a pipe holds: those that do not fit go to the session)
            await exchange(process, call_with(100 + n, "seen", {"padding": padding}))
        await exchange(process, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
        with trio.fail_after(1.5):
            pong = await answer(process)  # (before the nap is over)
        assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
        answered = {}
        for _ in range(61):
            frame = await answer(process)
            answered[frame["id"]] = json.loads(frame["result"]["content"][0]["text"])["id"]
        assert set(answered) == {2, *range(100, 160)}
        relayed = [i for i in answered.values() if isinstance(i, str)]
        assert 0 < len(relayed) < 60  # (some relayed until the pipe was full, the rest the session's)


async def test_the_end_of_a_graceful_shutdowns_grace_period_answers_the_relayed_calls() -> None:
    served = [*SERVED, "--grace-period", "0.5"]
    async with open_stdio_client(served, env=ENV, stderr=subprocess.DEVNULL) as process:
        await handshake(process)
        await exchange(process, call(4, "silent"))
        await trio.sleep(0.1)
        process.process.send_signal(signal.SIGTERM)
        cut = await answer(process)
        assert cut["id"] == 4 and cut["error"]["code"] == -32603
        assert "cancelled by server shutdown" in cut["error"]["message"]
        with trio.fail_after(10):
            assert await process.process.wait() == 0


async def test_stdin_and_stdout_on_one_socket_are_served_by_the_session() -> None:
    mine, theirs = socket.socketpair()
    with mine, theirs:
        process = await trio.lowlevel.open_process(PROXY, stdin=theirs, stdout=theirs, env=ENV)
        theirs.close()
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(mine))
        channel = StreamChannel(stream, stream)
        try:
            async with open_client(channel) as client:
                ids = [await seen(client) for _ in range(3)]
                assert all(isinstance(i, int) for i in ids), ids  # (no relay: one socket both ways)
        finally:
            with trio.fail_after(10):
                await process.wait()
