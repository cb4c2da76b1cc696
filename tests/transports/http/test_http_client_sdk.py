"""The Streamable HTTP client against the official Python SDK's HTTP servers (PyPI ``mcp`` 2.3.0).

The SDK runs on anyio/asyncio, so it only ever runs in a subprocess
(``tests/programs/sdk_http_server.py``), started once for this module; it
serves SSE and JSON-response Streamable HTTP apps, a stateless one and the
legacy HTTP+SSE transport, and logs every HTTP request it gets to stderr,
which the tests read back.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import ConnectionClosed, McpError, RequestTimeout
from mcp_trio.client import open_client
from mcp_trio.transports.http.client import (
    TRANSPORT_ERROR,
    open_http_client,
    open_legacy_sse_client,
)
from tests._support.paths import PROGRAMS

pytestmark = pytest.mark.interop

PROGRAM = PROGRAMS / "sdk_http_server.py"
LEGACY_ERA = ("2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
ALL = (*LEGACY_ERA, MODERN)
TOOLS = ["echo", "slow", "progress", "ask", "poll", "whoami", "region"]


class SdkServer:
    def __init__(self, ports: dict[str, int], log: Path) -> None:
        self.ports = ports
        self.log = log

    def url(self, app: str) -> str:
        return f"http://127.0.0.1:{self.ports[app]}/" + ("sse" if app == "legacy" else "mcp")

    def lines(self) -> list[str]:
        prefix = "sdk_http: "
        text = self.log.read_text(errors="replace")
        return [line[len(prefix) :] for line in text.splitlines() if line.startswith(prefix)]

    def mark(self) -> int:
        return len(self.lines())

    def requests(self, since: int = 0, app: str | None = None) -> list[dict[str, Any]]:
        found = []
        for line in self.lines()[since:]:
            if line.startswith("{"):
                entry = json.loads(line)
                if app is None or entry["app"] == app:
                    found.append(entry)
        return found

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 5) -> Any:
        with trio.fail_after(timeout):
            while not (found := predicate()):
                await trio.sleep(0.02)
        return found


@pytest.fixture(scope="module")
def sdk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    log = tmp_path_factory.mktemp("sdk_http") / "stderr.txt"
    with open(log, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, str(PROGRAM)], stdout=subprocess.PIPE, stderr=stderr)
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline() if ready else b""
        if not line:
            pytest.fail(f"the SDK server did not start:\n{log.read_text()}")
        yield SdkServer(json.loads(line), log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            proc.kill()
            proc.wait()
        proc.stdout.close()


def text_of(result: Any) -> str:
    return str(result.content[0].text)


async def sampling(params: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "test-model"}


async def elicitation(params: Any) -> dict[str, Any]:
    assert params.message == "Proceed?"
    return {"action": "accept", "content": {"ok": True}}


# ------------------------------------------------------------ basic interop


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize("app", ["sse", "json"])
async def test_connect_list_and_call(sdk: SdkServer, app: str, version: str) -> None:
    mark = sdk.mark()
    with trio.fail_after(10):
        async with open_http_client(sdk.url(app)) as channel:
            async with open_client(channel, versions=[version]) as client:
                assert client.protocol_version == version == channel.protocol_version
                assert client.server_info["name"] == "sdk-http-server"
                assert [t.name for t in await client.list_all_tools()] == TOOLS
                assert text_of(await client.call_tool("echo", {"text": "héllo"})) == "héllo"
                seen = json.loads(text_of(await client.call_tool("whoami")))
                assert text_of(await client.call_tool("region", {"region": "eu west 1"})) == "eu west 1:"
                session_id = channel.session_id
    assert seen["mcp-protocol-version"] == version
    requests = sdk.requests(mark, app)
    if version == MODERN:
        assert session_id is None and "mcp-session-id" not in seen
        assert seen["mcp-method"] == "tools/call" and seen["mcp-name"] == "whoami"
        region = next(r for r in requests if r["headers"].get("mcp-name") == "region")
        assert region["headers"]["mcp-param-region"] == "eu west 1"
        # no handshake, no GET stream, no session to delete
        assert {r["method"] for r in requests} == {"POST"}
        assert "initialize" not in {r["rpc"] for r in requests}
    else:
        assert session_id is not None and seen["mcp-session-id"] == session_id
        assert "mcp-method" not in seen
        methods = [r["method"] for r in requests]
        assert "GET" in methods  # the listening stream
        (delete,) = [r for r in requests if r["method"] == "DELETE"]
        assert delete["status"] == 200 and delete["headers"]["mcp-session-id"] == session_id
        assert delete["headers"]["mcp-protocol-version"] == version


async def test_the_default_negotiation_picks_the_newest_revision(sdk: SdkServer) -> None:
    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse")) as channel:
            async with open_client(channel) as client:
                assert client.protocol_version == MODERN


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_progress_and_logging(sdk: SdkServer, version: str) -> None:
    logs: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse")) as channel:
            async with open_client(channel, versions=[version], on_log=on_log) as client:
                result = await client.call_tool("progress", {"steps": 3}, on_progress=on_progress)
                if version != MODERN:
                    with trio.fail_after(2):
                        while not logs:
                            await trio.sleep(0.01)
    assert text_of(result) == "done"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    # From 2026-07-28 on, log messages are an opt-in per request (and this
    # server does not advertise logging); before, they flow on the call's stream.
    assert logs == ([] if version == MODERN else ["working on 3 steps"])


@pytest.mark.parametrize(
    ("app", "version"),
    [("sse", "2025-06-18"), ("sse", "2025-11-25"), ("sse", MODERN), ("json", MODERN)],
)
async def test_sampling_and_elicitation_callbacks(sdk: SdkServer, app: str, version: str) -> None:
    with trio.fail_after(10):
        async with open_http_client(sdk.url(app)) as channel:
            async with open_client(
                channel, versions=[version], sampling=sampling, elicitation=elicitation
            ) as client:
                assert text_of(await client.call_tool("ask")) == "ok=True model=4"


async def test_concurrent_calls(sdk: SdkServer) -> None:
    results: dict[int, str] = {}
    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse"), max_connections=4) as channel:
            async with open_client(channel, versions=["2025-11-25"]) as client:

                async def call(i: int) -> None:
                    results[i] = text_of(await client.call_tool("echo", {"text": str(i)}))

                async with trio.open_nursery() as nursery:
                    for i in range(20):
                        nursery.start_soon(call, i)
            assert channel._pool.opened <= 5  # four for calls, one for the GET stream
    assert results == {i: str(i) for i in range(20)}


# ------------------------------------------------------------ cancellation


@pytest.mark.parametrize("version", ["2025-11-25", MODERN])
async def test_a_timed_out_call_is_cancelled_at_the_server(sdk: SdkServer, version: str) -> None:
    mark = sdk.mark()
    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse")) as channel:
            async with open_client(channel, versions=[version]) as client:
                t0 = trio.current_time()
                with pytest.raises(RequestTimeout):
                    await client.call_tool("slow", {"seconds": 30}, timeout=0.3)
                assert trio.current_time() - t0 < 2
                await sdk.wait_for(lambda: "slow cancelled" in sdk.lines()[mark:])
                # the session goes on
                assert text_of(await client.call_tool("echo", {"text": "after"})) == "after"
    cancels = [r for r in sdk.requests(mark) if r["rpc"] == "notifications/cancelled"]
    if version == MODERN:
        assert cancels == []  # closing the response stream is the cancellation
    else:
        assert len(cancels) == 1 and cancels[0]["status"] == 202


# ------------------------------------------------------------ resumability and sessions


async def test_a_stream_closed_by_the_server_is_resumed(sdk: SdkServer) -> None:
    mark = sdk.mark()
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse")) as channel:
            async with open_client(channel, versions=["2025-11-25"]) as client:
                result = await client.call_tool("poll", on_progress=on_progress)
    assert text_of(result) == "polled"
    assert progress == [1, 2]
    resumed = [r for r in sdk.requests(mark, "sse") if "last-event-id" in r["headers"]]
    assert len(resumed) >= 1 and resumed[0]["method"] == "GET" and resumed[0]["status"] == 200


async def test_a_session_ended_at_the_server_is_renewed(sdk: SdkServer) -> None:
    """The SDK server forgets the session (404): the client starts a new one, as the
    spec requires, and the call goes through; with renewal off the session ends."""
    with trio.fail_after(10):
        async with open_http_client(sdk.url("sse")) as channel:
            async with open_client(channel, versions=["2025-11-25"]) as client:
                await client.call_tool("echo", {"text": "x"})
                first = channel.session_id
                # someone else ends the session (here: a DELETE of our own, on the side)
                await channel._delete_session()
                assert text_of(await client.call_tool("echo", {"text": "again"})) == "again"
                assert channel.renewals == 1 and channel.session_id not in (None, first)
                assert not channel.session_expired
        # (no GET stream here: its own 404 could end the session before the call is sent)
        async with open_http_client(sdk.url("sse"), renew_sessions=False, listen=False) as channel:
            async with open_client(channel, versions=["2025-11-25"]) as client:
                await client.call_tool("echo", {"text": "x"})  # notifications/initialized went first
                await channel._delete_session()
                with pytest.raises(McpError) as info:
                    await client.call_tool("echo", {"text": "x"})
                await client.session.closed.wait()
                with pytest.raises(ConnectionClosed):
                    await client.call_tool("echo", {"text": "x"})
            assert channel.session_expired
    assert info.value.code == TRANSPORT_ERROR and info.value.data["reason"] == "session_expired"


async def test_a_stateless_server(sdk: SdkServer) -> None:
    mark = sdk.mark()
    with trio.fail_after(10):
        async with open_http_client(sdk.url("stateless"), listen=False) as channel:
            async with open_client(channel, versions=["2025-11-25"]) as client:
                assert text_of(await client.call_tool("echo", {"text": "x"})) == "x"
                assert channel.session_id is None
    rpcs = [(r["method"], r["rpc"]) for r in sdk.requests(mark, "stateless")]
    assert rpcs == [
        ("POST", "initialize"),
        ("POST", "notifications/initialized"),
        ("POST", "tools/call"),
    ]


# ------------------------------------------------------------ legacy HTTP+SSE


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25"])
async def test_legacy_sse_transport(sdk: SdkServer, version: str) -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with trio.fail_after(10):
        async with open_legacy_sse_client(sdk.url("legacy")) as channel:
            async with open_client(
                channel, versions=[version], sampling=sampling, elicitation=elicitation
            ) as client:
                assert client.protocol_version == version
                assert text_of(await client.call_tool("echo", {"text": "old"})) == "old"
                assert (
                    text_of(await client.call_tool("progress", {"steps": 2}, on_progress=on_progress))
                    == "done"
                )
                if version != "2024-11-05":
                    assert text_of(await client.call_tool("ask")) == "ok=True model=4"
    assert progress == [1, 2]


async def test_legacy_fallback(sdk: SdkServer) -> None:
    mark = sdk.mark()
    with trio.fail_after(10):
        async with open_http_client(sdk.url("legacy"), legacy_fallback=True) as channel:
            async with open_client(channel) as client:
                assert text_of(await client.call_tool("echo", {"text": "old"})) == "old"
            assert channel.transport == "sse"
    first = sdk.requests(mark, "legacy")[:3]
    assert [(r["method"], r["path"], r["status"]) for r in first] == [
        ("POST", "/sse", 405),  # the server/discover probe
        ("POST", "/sse", 405),  # initialize: refused, so fall back
        ("GET", "/sse", 200),
    ]
