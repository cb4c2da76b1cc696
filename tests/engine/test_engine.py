"""The trio engine over the in-memory transport."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from mcp_trio import (
    ConnectionClosed,
    LocalProtocolError,
    McpError,
    RemoteProtocolError,
    RequestContext,
    RequestTimeout,
    Session,
    open_memory_transport_pair,
    open_session,
)
from mcp_trio.types import _versions
from tests._support.engine import SERVER_CAPS, tool_result

LEGACY = [v for v in _versions.SUPPORTED_VERSIONS if not _versions.is_stateless(v)]
MODERN = [v for v in _versions.SUPPORTED_VERSIONS if _versions.is_stateless(v)]

CLIENT_CAPS = {"sampling": {}, "roots": {"listChanged": True}}


class Probe:
    """Records what handlers saw."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.cancelled = trio.Event()
        self.finished: list[Any] = []
        self.notifications: list[tuple[str, Any]] = []


def server_handlers(probe: Probe) -> dict[str, Any]:
    async def call_tool(ctx: RequestContext, params: Any) -> Any:
        name = params.name
        args = params.arguments if isinstance(params.arguments, dict) else {}
        if name == "echo":
            return tool_result(args.get("text", ""))
        if name == "sleep":
            probe.started.set()
            try:
                await trio.sleep(args.get("seconds", 1000))
            except trio.Cancelled:
                probe.cancelled.set()
                raise
            probe.finished.append(ctx.id)
            return tool_result("slept")
        if name == "progress":
            steps = args.get("steps", 3)
            for i in range(steps):
                await ctx.report_progress(i + 1, steps, f"step {i + 1}")
                await trio.sleep(args.get("delay", 0))
            return tool_result("done")
        if name == "fail":
            raise ValueError("kaput")
        if name == "mcp_error":
            raise McpError(-32602, "Unknown thing", {"thing": 1})
        if name == "bad_result":
            return {"content": "not a list"}
        if name == "sample":
            result = await ctx.request(
                "sampling/createMessage",
                {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5},
            )
            return tool_result(result.content.text)
        if name == "log":
            await ctx.notify("notifications/message", {"level": "info", "data": "hello"})
            return tool_result("logged")
        raise McpError(-32602, f"Unknown tool: {name}")

    async def list_tools(ctx: RequestContext, params: Any) -> Any:
        result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        if _versions.is_stateless(ctx.version):
            result.update(ttlMs=0, cacheScope="public")
        return result

    return {"tools/call": call_tool, "tools/list": list_tools}


def client_handlers(probe: Probe) -> dict[str, Any]:
    async def create_message(ctx: RequestContext, params: Any) -> Any:
        text = params.messages[0].content.text
        return {"role": "assistant", "content": {"type": "text", "text": text.upper()}, "model": "m"}

    return {"sampling/createMessage": create_message}


@asynccontextmanager
async def connected(
    *,
    server_versions: Any = None,
    client_versions: Any = None,
    server_options: dict[str, Any] | None = None,
    client_options: dict[str, Any] | None = None,
    probe: Probe | None = None,
    connect: bool = True,
) -> AsyncIterator[tuple[Session, Session, Probe]]:
    probe = probe or Probe()
    a, b = open_memory_transport_pair()

    async def on_note(session: Session, method: str, params: Any) -> None:
        probe.notifications.append((method, params))

    async with (
        open_session(
            a,
            role="server",
            info={"name": "srv", "version": "1"},
            capabilities=SERVER_CAPS,
            versions=server_versions,
            request_handlers=server_handlers(probe),
            **(server_options or {}),
        ) as srv,
        open_session(
            b,
            role="client",
            info={"name": "cli", "version": "1"},
            capabilities=CLIENT_CAPS,
            versions=client_versions,
            request_handlers=client_handlers(probe),
            notification_handlers={"notifications/message": on_note},
            **(client_options or {}),
        ) as cli,
    ):
        if connect:
            await cli.connect()
        yield srv, cli, probe


async def test_connect_negotiates_the_newest_version() -> None:
    async with connected() as (srv, cli, _):
        assert cli.protocol_version == _versions.SUPPORTED_VERSIONS[0]
        assert cli.peer_capabilities == SERVER_CAPS
        assert cli.peer_info["name"] == "srv"


@pytest.mark.parametrize("version", LEGACY)
async def test_legacy_handshake_and_tool_call(version: str) -> None:
    async with connected(client_versions=[version]) as (srv, cli, _):
        assert cli.protocol_version == version
        assert srv.protocol_version == version
        with trio.fail_after(5):
            await srv.initialized.wait()
        result = await cli.request("tools/call", {"name": "echo", "arguments": {"text": "hi"}})
        assert result.content[0].text == "hi"
        await cli.ping()


async def test_client_falls_back_to_initialize_with_a_legacy_server() -> None:
    async with connected(server_versions=LEGACY) as (srv, cli, _):
        assert cli.protocol_version == LEGACY[0]
        result = await cli.request("tools/list")
        assert result.tools[0].name == "echo"


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_modern_only_client_against_legacy_server_fails_clearly() -> None:
    async with connected(server_versions=LEGACY, client_versions=MODERN, connect=False) as (srv, cli, _):
        with pytest.raises(LocalProtocolError, match="protocol version"):
            await cli.connect()


async def test_client_rejects_unsupported_server_version() -> None:
    async with connected(server_versions=[LEGACY[0]], client_versions=[LEGACY[-1]], connect=False) as (
        srv,
        cli,
        _,
    ):
        with pytest.raises(RemoteProtocolError, match="does not support"):
            await cli.connect()
        # The client disconnected before raising: its session is over, and the
        # server saw the connection end.
        assert cli.closed.is_set()
        with pytest.raises(ConnectionClosed, match="handshake failed"):
            await cli.request("ping")
        with trio.fail_after(5):
            await srv.closed.wait()


async def test_errors_from_handlers() -> None:
    async with connected() as (srv, cli, _):
        with pytest.raises(McpError) as info:
            await cli.request("tools/call", {"name": "mcp_error"})
        assert (info.value.code, info.value.data) == (-32602, {"thing": 1})
        with pytest.raises(McpError) as info:
            await cli.request("tools/call", {"name": "fail"})
        assert info.value.code == -32603 and "kaput" in info.value.message
        with pytest.raises(McpError) as info:
            await cli.request("tools/call", {"name": "bad_result"})
        assert info.value.code == -32603 and "invalid result" in info.value.message
        with pytest.raises(McpError) as info:
            await cli.request("prompts/list")  # advertised but no handler
        assert info.value.code == -32601
        # the session goes on
        assert (await cli.request("tools/call", {"name": "echo", "arguments": {"text": "ok"}})).content[
            0
        ].text == "ok"


async def test_concurrent_requests() -> None:
    async with connected() as (srv, cli, _):
        results: dict[int, str] = {}

        async def one(i: int) -> None:
            r = await cli.request("tools/call", {"name": "echo", "arguments": {"text": str(i)}})
            results[i] = r.content[0].text

        async with trio.open_nursery() as n:
            for i in range(50):
                n.start_soon(one, i)
        assert results == {i: str(i) for i in range(50)}


async def test_timeout_sends_cancelled_and_handler_is_cancelled() -> None:
    async with connected() as (srv, cli, probe):
        with pytest.raises(RequestTimeout, match="within 0.2 s"):
            await cli.request("tools/call", {"name": "sleep"}, timeout=0.2)
        with trio.fail_after(5):
            await probe.cancelled.wait()
        assert probe.finished == []
        assert cli.statistics()["pending_requests"] == 0
        with trio.fail_after(5):
            while srv.statistics()["requests_in_progress"]:
                await trio.sleep(0.01)


async def test_caller_cancellation_cancels_the_handler() -> None:
    async with connected() as (srv, cli, probe):
        async with trio.open_nursery() as n:
            n.start_soon(cli.request, "tools/call", {"name": "sleep"})
            await probe.started.wait()
            n.cancel_scope.cancel()
        with trio.fail_after(5):
            await probe.cancelled.wait()
        assert srv.core.in_flight_ids == [] or True  # handler finishing is checked below
        with trio.fail_after(5):
            while srv.core.in_flight_ids:
                await trio.sleep(0.01)


async def test_session_default_timeout_applies_without_a_per_call_timeout(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async with connected(client_options={"default_timeout": 1}) as (srv, cli, probe):
        assert cli.default_timeout == 1
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match="within 1 s"):
            await cli.request("tools/call", {"name": "sleep"})
        assert trio.current_time() - start == pytest.approx(1)
        # it was cancelled like any other timeout
        with trio.fail_after(5):
            await probe.cancelled.wait()
        # a per-call timeout still wins over the session's
        start = trio.current_time()
        with pytest.raises(RequestTimeout, match="within 3 s"):
            await cli.request("tools/call", {"name": "sleep"}, timeout=3)
        assert trio.current_time() - start == pytest.approx(3)


async def test_progress_callback_runs_in_callers_task() -> None:
    async with connected() as (srv, cli, _):
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            seen.append((p, total, message))

        result = await cli.request(
            "tools/call", {"name": "progress", "arguments": {"steps": 3}}, on_progress=on_progress
        )
        assert result.content[0].text == "done"
        assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_progress_resets_the_timeout(autojump_clock: trio.testing.MockClock) -> None:
    async with connected() as (srv, cli, _):
        calls = 0

        async def on_progress(*_: Any) -> None:
            nonlocal calls
            calls += 1

        # 5 steps of 0.6 s each take 3 s in total, but each step comes within the 1 s timeout.
        result = await cli.request(
            "tools/call",
            {"name": "progress", "arguments": {"steps": 5, "delay": 0.6}},
            timeout=1.0,
            on_progress=on_progress,
        )
        assert result.content[0].text == "done" and calls == 5
        with pytest.raises(RequestTimeout, match="in total"):
            await cli.request(
                "tools/call",
                {"name": "progress", "arguments": {"steps": 5, "delay": 0.6}},
                timeout=1.0,
                max_total_timeout=2.0,
                on_progress=on_progress,
            )
        with pytest.raises(RequestTimeout):
            await cli.request(
                "tools/call",
                {"name": "progress", "arguments": {"steps": 5, "delay": 0.6}},
                timeout=1.0,
                reset_timeout_on_progress=False,
                on_progress=on_progress,
            )


async def test_server_calls_back_to_the_client_during_a_tool_call() -> None:
    async with connected(client_versions=LEGACY) as (srv, cli, _):
        result = await cli.request("tools/call", {"name": "sample"})
        assert result.content[0].text == "HI"


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_stateless_sessions_have_no_server_requests() -> None:
    async with connected(client_versions=MODERN) as (srv, cli, _):
        with pytest.raises(McpError, match="InputRequiredResult"):
            await cli.request("tools/call", {"name": "sample"})


async def test_notifications_reach_the_client_handler() -> None:
    async with connected() as (srv, cli, probe):
        await cli.request("tools/call", {"name": "log"})
        with trio.fail_after(5):
            while not probe.notifications:
                await trio.sleep(0.01)
        method, params = probe.notifications[0]
        assert method == "notifications/message" and params.data == "hello"


async def test_peer_going_away_fails_pending_requests_at_once() -> None:
    probe = Probe()
    a, b = open_memory_transport_pair()
    async with open_session(b, role="client", info={"name": "c", "version": "1"}, versions=LEGACY) as cli:
        async with open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities=SERVER_CAPS,
            request_handlers=server_handlers(probe),
        ) as srv:
            await cli.connect()

            async def kill_server() -> None:
                await probe.started.wait()
                await srv.aclose()

            async with trio.open_nursery() as n:
                n.start_soon(kill_server)
                with trio.fail_after(5), pytest.raises(ConnectionClosed):
                    await cli.request("tools/call", {"name": "sleep"}, timeout=None)
            assert probe.cancelled.is_set()
        with pytest.raises(ConnectionClosed):
            await cli.request("tools/list")


async def test_handlers_are_cancelled_when_the_peer_goes_away() -> None:
    """The client side closes while a server handler sleeps: the server sees
    the end of the connection and cancels the handler; nothing is left."""
    probe = Probe()
    a, b = open_memory_transport_pair()
    async with open_session(
        a,
        role="server",
        info={"name": "s", "version": "1"},
        capabilities=SERVER_CAPS,
        request_handlers=server_handlers(probe),
    ) as srv:
        async with open_session(b, role="client", info={"name": "c", "version": "1"}) as cli:
            await cli.connect()
            outcome: list[str] = []

            async def call() -> None:
                try:
                    await cli.request("tools/call", {"name": "sleep"}, timeout=None)
                except ConnectionClosed:
                    outcome.append("connection closed")

            async with trio.open_nursery() as n:
                n.start_soon(call)
                with trio.fail_after(5):
                    await probe.started.wait()
                assert srv.statistics()["requests_in_progress"] == 1
                # The client's end of the connection goes away with its call
                # still running on the server (nothing more can be sent).
                await b.aclose()
            assert outcome == ["connection closed"]
            with trio.fail_after(5):
                await probe.cancelled.wait()
                await srv.closed.wait()
        assert probe.finished == []
        assert srv.statistics()["requests_in_progress"] == 0 and srv.core.in_flight_ids == []


@pytest.mark.parametrize("ending", ["result", "error", "exception"])
async def test_a_handler_finishing_after_the_peer_left_ends_quietly(
    ending: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The peer closes (e.g. a stdio client closing stdin) while a handler is past its
    last checkpoint: its answer has nobody to go to and is dropped, without an error
    that would end the session's owner with a traceback."""
    release = trio.Event()
    started = trio.Event()

    async def call_tool(ctx: RequestContext, params: Any) -> Any:
        started.set()
        with trio.CancelScope(shield=True):  # finishes whatever the session does
            await release.wait()
        if ending == "error":
            raise McpError(-32602, "too late")
        if ending == "exception":
            raise RuntimeError("too late")
        return tool_result("too late")

    a, b = open_memory_transport_pair()
    async with open_session(
        a,
        role="server",
        info={"name": "s", "version": "1"},
        capabilities=SERVER_CAPS,
        request_handlers={"tools/call": call_tool},
    ) as srv:
        async with open_session(b, role="client", info={"name": "c", "version": "1"}) as cli:
            await cli.connect()
            async with trio.open_nursery() as n:

                async def call() -> None:
                    with pytest.raises(ConnectionClosed):
                        await cli.request("tools/call", {"name": "x"}, timeout=None)

                n.start_soon(call)
                with trio.fail_after(5):
                    await started.wait()
                await b.aclose()
            with trio.fail_after(5):
                while not srv.core.closed:
                    await trio.sleep(0.01)
            release.set()
            with trio.fail_after(5):
                await srv.closed.wait()
    assert srv.core.in_flight_ids == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text


async def test_backpressure_bounds_requests_in_flight() -> None:
    gate = trio.Event()
    running = 0
    peak = 0

    async def slow(ctx: RequestContext, params: Any) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await gate.wait()
        running -= 1
        return tool_result("x")

    a, b = open_memory_transport_pair()
    async with (
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities=SERVER_CAPS,
            request_handlers={"tools/call": slow},
            max_in_flight=3,
        ) as srv,
        open_session(b, role="client", info={"name": "c", "version": "1"}) as cli,
    ):
        await cli.connect()
        async with trio.open_nursery() as n:
            for _ in range(10):
                n.start_soon(cli.request, "tools/call", {"name": "x"})
            await trio.testing.wait_all_tasks_blocked()  # everything that can run has run
            stats = srv.statistics()
            assert peak == 3 and stats["requests_in_progress"] == 3
            # 3 more wait in the queue; the reader stopped at the 7th (backpressure)
            assert stats["requests_queued"] == 3
            gate.set()
        assert peak == 3


async def test_handlers_waiting_on_the_peer_do_not_deadlock_a_full_session() -> None:
    """Every slot is held by a handler that calls back to the client; the reader
    must still read the client's answers (queued requests do not block it)."""

    async def ask_back(ctx: RequestContext, params: Any) -> Any:
        answer = await ctx.request("roots/list", timeout=5)
        return tool_result(str(len(answer.roots)))

    async def roots(ctx: RequestContext, params: Any) -> Any:
        return {"roots": [{"uri": "file:///a"}]}

    a, b = open_memory_transport_pair()
    async with (
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities=SERVER_CAPS,
            request_handlers={"tools/call": ask_back},
            max_in_flight=1,
        ) as srv,
        open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            capabilities={"roots": {}},
            versions=LEGACY,
            request_handlers={"roots/list": roots},
        ) as cli,
    ):
        await cli.connect()
        results: list[str] = []

        async def call() -> None:
            result = await cli.request("tools/call", {"name": "x"}, timeout=10)
            results.append(result.content[0].text)

        with trio.fail_after(2):
            async with trio.open_nursery() as n:
                for _ in range(2):
                    n.start_soon(call)
        assert results == ["1", "1"]
        assert srv.statistics()["requests_queued"] == 0


async def test_exceptions_in_the_block_are_not_wrapped() -> None:
    a, b = open_memory_transport_pair()
    with pytest.raises(KeyError):
        async with open_session(a, role="server", info={"name": "s", "version": "1"}):
            raise KeyError("x")


async def test_nothing_outlives_the_block() -> None:
    async with connected() as (srv, cli, probe):
        pass
    assert srv.closed.is_set() and cli.closed.is_set()
    assert srv.statistics()["requests_in_progress"] == 0


async def test_keepalive_closes_a_silent_peer(autojump_clock: trio.testing.MockClock) -> None:
    a, b = open_memory_transport_pair()
    async with open_session(
        b,
        role="client",
        info={"name": "c", "version": "1"},
        versions=LEGACY,
        keepalive_interval=5,
        keepalive_timeout=1,
    ) as cli:
        # A "server" that answers initialize and then goes silent (but keeps the pipe open).
        async def fake_server() -> None:
            frame = await a.receive()
            import json

            req = json.loads(frame.data)
            await a.send(
                type(frame)(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": req["id"],
                            "result": {
                                "protocolVersion": LEGACY[0],
                                "capabilities": {},
                                "serverInfo": {"name": "s", "version": "1"},
                            },
                        }
                    ).encode()
                )
            )
            try:
                while True:
                    await a.receive()  # read pings, never answer
            except trio.EndOfChannel:
                pass  # the client gave up on us: what this test expects

        async with trio.open_nursery() as n:
            n.start_soon(fake_server)
            await cli.connect()
            with trio.fail_after(30):
                await cli.closed.wait()
            n.cancel_scope.cancel()


async def test_ping_both_ways() -> None:
    async with connected(client_versions=LEGACY) as (srv, cli, _):
        with trio.fail_after(5):
            await srv.initialized.wait()
            while srv.state.value != "ready":
                await trio.sleep(0.01)
            await srv.ping()
            await cli.ping()


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_probe_answered_late_then_initialize_refused_goes_modern(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A modern server slow to start: the probe times out, the fallback
    ``initialize`` is refused with UnsupportedProtocolVersionError, and the
    client adopts the modern version instead of failing."""
    import msgspec

    a, b = open_memory_transport_pair()
    seen: list[str] = []

    async def modern_server() -> None:
        from mcp_trio.transports import Frame

        async for frame in a:
            msg = msgspec.json.decode(frame.data)
            method = msg.get("method")
            seen.append(method)
            if "id" not in msg:
                continue
            if method == "server/discover" and seen.count("server/discover") == 1:
                await trio.sleep(10)  # longer than the probe timeout
                continue  # (its answer would arrive after the client gave up)
            if method == "initialize":
                error = {"code": -32022, "message": "modern", "data": {"supported": MODERN, "requested": "x"}}
                reply = {"jsonrpc": "2.0", "id": msg["id"], "error": error}
            else:
                result = {
                    "supportedVersions": MODERN,
                    "capabilities": {"tools": {}},
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "slow", "version": "1"}},
                    "resultType": "complete",
                    "ttlMs": 0,
                    "cacheScope": "public",
                }
                reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
            await a.send(Frame(msgspec.json.encode(reply)))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(modern_server)
        async with open_session(b, role="client", info={"name": "cli", "version": "1"}) as cli:
            version = await cli.connect(probe_timeout=5)
            assert version == MODERN[0]
            assert cli.protocol_version == MODERN[0]
            assert cli.peer_info["name"] == "slow"
            assert cli.peer_capabilities == {"tools": {}}
        nursery.cancel_scope.cancel()
    assert seen[0] == "server/discover" and "initialize" in seen and seen[-1] == "server/discover"


@pytest.mark.skipif(not MODERN, reason="no stateless revision")
async def test_probe_answered_with_an_invalid_result_falls_back_to_initialize() -> None:
    """Some legacy servers answer every method they do not know with ``{}``: that is
    not a DiscoverResult, so the client treats the server as legacy and initializes."""
    import msgspec

    from mcp_trio.transports import Frame

    a, b = open_memory_transport_pair()
    seen: list[str] = []

    async def lenient_legacy_server() -> None:
        async for frame in a:
            msg = msgspec.json.decode(frame.data)
            seen.append(msg.get("method"))
            if "id" not in msg:
                continue
            result: dict[str, object] = {}
            if msg["method"] == "initialize":
                result = {
                    "protocolVersion": LEGACY[0],
                    "capabilities": {},
                    "serverInfo": {"name": "lenient", "version": "1"},
                }
            await a.send(Frame(msgspec.json.encode({"jsonrpc": "2.0", "id": msg["id"], "result": result})))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(lenient_legacy_server)
        async with open_session(b, role="client", info={"name": "cli", "version": "1"}) as cli:
            with trio.fail_after(5):
                version = await cli.connect()
            assert version == LEGACY[0]
            assert cli.peer_info["name"] == "lenient"
        nursery.cancel_scope.cancel()
    assert seen[:3] == ["server/discover", "initialize", "notifications/initialized"]
