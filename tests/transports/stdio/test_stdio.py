"""stdio framing (sans-IO) and real subprocess tests."""

from __future__ import annotations

import inspect
import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_trio import ConnectionClosed, McpError, open_session, open_stdio_client
from mcp_trio.transports.stdio import LineFramer, StreamChannel
from tests._support.paths import PROGRAMS, ROOT

SERVER = [sys.executable, str(PROGRAMS / "lowlevel_server.py")]
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}


# ------------------------------------------------------------------ framing


def test_framer_splits_lines_and_tolerates_crlf() -> None:
    f = LineFramer()
    frames = f.feed(b'{"a":1}\r\n\n{"b"')
    assert [fr.data for fr in frames] == [b'{"a":1}']
    frames = f.feed(b":2}\n   \n")
    assert [fr.data for fr in frames] == [b'{"b":2}']
    assert f.pending == 0


def test_framer_rejects_oversize_lines_and_goes_on() -> None:
    f = LineFramer(max_message_size=10)
    frames = f.feed(b"x" * 25)  # no newline yet, already too long
    assert frames == []
    frames = f.feed(b"yyyy\n" + b'{"ok":1}\n')
    assert frames[0].error is not None and "exceeds the limit of 10 bytes" in frames[0].error
    assert frames[1].data == b'{"ok":1}' and frames[1].error is None
    frames = f.feed(b"z" * 11 + b"\n" + b"1234567890\n")
    assert frames[0].error is not None and frames[1].data == b"1234567890"


messages = st.lists(
    st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=20)), max_size=4),
    min_size=1,
    max_size=8,
)


@given(messages, st.data())
@settings(max_examples=200, deadline=None)
def test_any_chunking_yields_the_same_messages(msgs: list[Any], data: st.DataObject) -> None:
    stream = b"".join(json.dumps(m).encode() + (b"\r\n" if i % 2 else b"\n") for i, m in enumerate(msgs))
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=20)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    f = LineFramer()
    out = []
    for chunk in chunks:
        out.extend(f.feed(chunk))
    assert [json.loads(fr.data) for fr in out] == msgs


async def test_stream_channel_over_memory_streams() -> None:
    from trio.testing import memory_stream_pair

    left, right = memory_stream_pair()
    a = StreamChannel(left, left)
    b = StreamChannel(right, right)
    from mcp_trio import Frame

    await a.send(Frame(b'{"x":1}'))
    await a.send(Frame(b'{"y":2}'))
    assert (await b.receive()).data == b'{"x":1}'
    assert (await b.receive()).data == b'{"y":2}'
    await a.aclose()
    with pytest.raises(trio.EndOfChannel):
        await b.receive()


async def test_default_max_message_size_is_at_least_32_mib() -> None:
    from trio.testing import memory_stream_pair

    from mcp_trio import Frame, open_stdio_server_channel

    mib32 = 32 * 1024 * 1024
    for api in (LineFramer, StreamChannel, open_stdio_client, open_stdio_server_channel):
        assert inspect.signature(api).parameters["max_message_size"].default >= mib32, api
    # A 32 MiB message gets through a channel built with the defaults, whole.
    message = b'"' + b"x" * (mib32 - 2) + b'"'
    left, right = memory_stream_pair()
    sender, receiver = StreamChannel(left, left), StreamChannel(right, right)
    async with trio.open_nursery() as n:
        n.start_soon(sender.send, Frame(message))
        with trio.fail_after(30):
            frame = await receiver.receive()
    assert frame.error is None and frame.data == message


# -------------------------------------------------------- real subprocesses


async def test_client_against_a_stdio_server_process() -> None:
    async with open_stdio_client(SERVER, env=ENV, stderr=subprocess.PIPE) as proc:
        async with open_session(proc.channel, role="client", info={"name": "t", "version": "1"}) as cli:
            version = await cli.connect()
            assert cli.peer_info["name"] == "lowlevel-test-server"
            assert version == cli.protocol_version
            tools = await cli.request("tools/list")
            assert [t.name for t in tools.tools][0] == "echo"
            r = await cli.request("tools/call", {"name": "echo", "arguments": {"text": "héllo ☃"}})
            assert r.content[0].text == "héllo ☃"
            # A stray print in the server goes to stderr, not into the protocol stream.
            r = await cli.request("tools/call", {"name": "print", "arguments": {"text": "NOISE"}})
            assert r.content[0].text == "printed"
            seen = []

            async def on_progress(p: float, total: float | None, msg: str | None) -> None:
                seen.append(p)

            r = await cli.request(
                "tools/call", {"name": "progress", "arguments": {"steps": 4}}, on_progress=on_progress
            )
            assert seen == [1.0, 2.0, 3.0, 4.0]
            with pytest.raises(McpError) as info:
                await cli.request("tools/call", {"name": "nope"})
            assert info.value.code == -32602
            # cancellation of a slow call, then the session goes on
            with trio.move_on_after(0.3):
                await cli.request("tools/call", {"name": "sleep"})
            r = await cli.request("tools/call", {"name": "echo", "arguments": {"text": "after"}})
            assert r.content[0].text == "after"
        assert proc.stderr is not None
        err = b""
        with trio.fail_after(10):
            await proc.process.wait()
            while chunk := await proc.stderr.receive_some(65536):
                err += chunk
    assert proc.process.returncode == 0
    assert b"NOISE" in err and b"lowlevel_server exiting" in err


async def test_server_that_dies_fails_pending_requests_promptly() -> None:
    async with open_stdio_client(SERVER, env=ENV, stderr=subprocess.DEVNULL) as proc:
        async with open_session(proc.channel, role="client", info={"name": "t", "version": "1"}) as cli:
            await cli.connect()
            background_failed = trio.Event()

            async def slow_call() -> None:
                with pytest.raises(ConnectionClosed):
                    await cli.request("tools/call", {"name": "sleep"}, timeout=None)
                background_failed.set()

            async with trio.open_nursery() as n:
                n.start_soon(slow_call)
                await trio.sleep(0.2)
                with trio.fail_after(5), pytest.raises(ConnectionClosed):
                    await cli.request("tools/call", {"name": "crash", "arguments": {"code": 3}}, timeout=None)
                with trio.fail_after(5):
                    await background_failed.wait()
    assert proc.process.returncode == 3


async def test_raw_bytes_get_spec_errors_and_the_server_goes_on() -> None:
    async with open_stdio_client(
        SERVER, env={**ENV, "MAX_MESSAGE_SIZE": "1000"}, stderr=subprocess.DEVNULL
    ) as proc:
        ch = proc.channel
        from mcp_trio import Frame

        async def exchange(data: bytes) -> Any:
            await ch.send(Frame(data))
            with trio.fail_after(10):
                return json.loads((await ch.receive()).data)

        reply = await exchange(b"this is not json")
        assert reply["error"]["code"] == -32700 and reply["id"] is None
        reply = await exchange(b"\xff\xfe\xfd")
        assert reply["error"]["code"] == -32700
        reply = await exchange(
            b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' + b"a" * 2000 + b'"}}'
        )
        assert reply["error"]["code"] == -32600 and "too large" in reply["error"]["message"]
        reply = await exchange(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        assert reply["id"] == 2 and reply["error"]["code"] == -32600  # not initialized yet
        reply = await exchange(b'{"jsonrpc":"2.0","id":3,"method":"ping"}')
        assert reply == {"jsonrpc": "2.0", "id": 3, "result": {}}


async def test_shutdown_escalates_to_kill() -> None:
    with trio.fail_after(15):
        async with open_stdio_client(
            [sys.executable, str(PROGRAMS / "stubborn.py")],
            stderr=subprocess.PIPE,
            shutdown_grace=0.3,
        ) as proc:
            assert proc.stderr is not None
            await proc.stderr.receive_some(100)
    assert proc.process.returncode == -9


async def test_shutdown_terminates_after_closing_stdin(capfd: pytest.CaptureFixture[str]) -> None:
    """A server that outlives the end of its stdin gets SIGTERM after the grace
    period (and not SIGKILL: it dies of SIGTERM).  Its stderr is passed through
    (``stderr=None``): it lands on our own stderr."""
    grace = 0.5
    with trio.fail_after(15):
        async with open_stdio_client(
            [sys.executable, str(PROGRAMS / "outlives_stdin.py")], stderr=None, shutdown_grace=grace
        ) as proc:
            ready = json.loads((await proc.channel.receive()).data)
            assert ready["params"]["data"] == "ready"
            assert proc.stderr is None
            closed_at = trio.current_time()
        elapsed = trio.current_time() - closed_at
    assert proc.process.returncode == -signal.SIGTERM
    assert elapsed >= grace  # it waited for the server to exit by itself first
    # The server saw its stdin end, and lived on until SIGTERM.
    assert "outlives_stdin: stdin closed, still running" in capfd.readouterr().err


async def test_server_exits_cleanly_on_eof() -> None:
    async with open_stdio_client(SERVER, env=ENV, stderr=subprocess.DEVNULL, shutdown_grace=5) as proc:
        pass
    assert proc.process.returncode == 0


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process its new parent has not reaped yet does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups, and /proc to see them")
@pytest.mark.parametrize(
    "launcher",
    [
        "{python} {program} {pidfile}; true",  # a shell that waits for the server it started
        "{python} {program} {pidfile} & wait",  # one that started it in the background
        "{python} {program} {pidfile} <&0 & sleep 0.3; exit 0",  # one that exits first
    ],
)
async def test_what_a_launcher_started_ends_with_the_client(launcher: str, tmp_path: Path) -> None:
    """A server launched through ``sh -c`` (as through ``npx`` or ``uvx``) leaves nothing behind:
    the server's process group ends with the client, the launcher's children with it."""
    pidfile = tmp_path / "pid"
    script = launcher.format(python=sys.executable, program=PROGRAMS / "grandchild.py", pidfile=pidfile)
    with trio.fail_after(20):
        async with open_stdio_client(["sh", "-c", script], shutdown_grace=0.5) as proc:
            ready = json.loads((await proc.channel.receive()).data)
            assert ready["params"]["data"] == "ready"
            pid = int(pidfile.read_text())
            assert _alive(pid) and pid != proc.process.pid
    assert not _alive(pid), "the launched server outlived the client"
