"""Interoperability with the official Python SDK (PyPI ``mcp`` 2.3.0) over stdio.

The SDK runs on anyio/asyncio, so its code only ever runs in subprocesses:
``tests/programs/sdk_server.py`` (a server written with the SDK) and
``tests/programs/sdk_client.py`` (the SDK's stdio client, printing one JSON line).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from mcp_trio import LocalProtocolError, open_session, open_stdio_client
from tests._support.paths import ROOT

pytestmark = pytest.mark.interop

PROGRAMS = Path(__file__).resolve().parent.parent / "programs"
ENV = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
SDK_SERVER = [sys.executable, str(PROGRAMS / "sdk_server.py")]
OUR_SERVER = [sys.executable, str(PROGRAMS / "lowlevel_server.py")]
SDK_CLIENT = [sys.executable, str(PROGRAMS / "sdk_client.py")]

# mcp_types.version in mcp 2.3.0 (checked against the installed SDK below).
SDK_HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
SDK_MODERN_VERSIONS = ("2026-07-28",)
SDK_VERSIONS = SDK_HANDSHAKE_VERSIONS + SDK_MODERN_VERSIONS

CANCEL_AFTER = 0.3
PROMPT = 1.0  # a cancelled call must return within CANCEL_AFTER + PROMPT seconds


async def test_sdk_version_table_matches_the_installed_sdk() -> None:
    code = (
        "import json, mcp_types.version as v; "
        "print(json.dumps([v.HANDSHAKE_PROTOCOL_VERSIONS, v.MODERN_PROTOCOL_VERSIONS]))"
    )
    with trio.fail_after(20):
        done = await trio.run_process([sys.executable, "-c", code], capture_stdout=True)
    handshake, modern = json.loads(done.stdout)
    assert (tuple(handshake), tuple(modern)) == (SDK_HANDSHAKE_VERSIONS, SDK_MODERN_VERSIONS)


# ------------------------------------------------- our client -> SDK server


def _inbound(stderr: str) -> list[dict[str, Any]]:
    """The messages the SDK server logged as received (see sdk_server.py)."""
    prefix = "sdk_server: <- "
    lines = stderr.splitlines()
    return [json.loads(line[len(prefix) :]) for line in lines if line.startswith(prefix)]


async def _exercise_sdk_server(versions: list[str] | None) -> dict[str, Any]:
    """Run the whole scenario against a fresh SDK server process; return what was observed."""
    seen: dict[str, Any] = {}
    err = b""
    t0 = trio.current_time()
    async with open_stdio_client(SDK_SERVER, env=ENV, stderr=subprocess.PIPE) as proc:
        assert proc.stderr is not None
        options: dict[str, Any] = {} if versions is None else {"versions": versions}
        info = {"name": "mcp-trio-interop", "version": "1"}
        async with open_session(proc.channel, role="client", info=info, **options) as cli:
            version = await cli.connect()
            seen["connect_s"] = trio.current_time() - t0
            assert version == cli.protocol_version
            seen["version"] = version
            assert cli.peer_info["name"] == "sdk-test-server"
            assert cli.peer_info["version"] == "2.3.0-interop"

            if version in SDK_MODERN_VERSIONS:
                # ping is not a client request any more from 2026-07-28 on: refused locally.
                with pytest.raises(LocalProtocolError):
                    await cli.request("ping")
            else:
                await cli.request("ping", timeout=5)

            tools = await cli.request("tools/list", timeout=5)
            assert sorted(t.name for t in tools.tools) == ["echo", "progress", "sleep"]

            r = await cli.request("tools/call", {"name": "echo", "arguments": {"text": "héllo ☃"}}, timeout=5)
            assert type(r.content[0]).__name__ == "TextContent"
            assert r.content[0].text == "héllo ☃"
            assert not r.isError
            if version >= "2025-06-18":  # structuredContent exists from 2025-06-18 on
                assert r.structuredContent == {"result": "héllo ☃"}

            progress: list[tuple[float, float | None, str | None]] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                progress.append((p, total, message))

            r = await cli.request(
                "tools/call",
                {"name": "progress", "arguments": {"steps": 4}},
                on_progress=on_progress,
                timeout=5,
            )
            assert r.content[0].text == "done"
            assert [p for p, _, _ in progress] == [1.0, 2.0, 3.0, 4.0]
            assert {total for _, total, _ in progress} == {4.0}
            if version >= "2025-03-26":  # the progress message exists from 2025-03-26 on
                assert [m for _, _, m in progress] == [f"step {i}" for i in (1, 2, 3, 4)]
            seen["progress"] = progress

            start = trio.current_time()
            with trio.move_on_after(CANCEL_AFTER) as scope:
                await cli.request("tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
            seen["cancel_s"] = trio.current_time() - start
            assert scope.cancelled_caught
            assert seen["cancel_s"] < CANCEL_AFTER + PROMPT

            r = await cli.request("tools/call", {"name": "echo", "arguments": {"text": "after"}}, timeout=5)
            assert r.content[0].text == "after"
        # Leaving the session closed the server's stdin; the SDK server should exit by itself.
        # If it does not, leaving this block makes our shutdown SIGTERM (then SIGKILL) it.
        closing = trio.current_time()
        with trio.move_on_after(30):  # immediate normally; generous for a loaded machine
            await proc.process.wait()
        seen["shutdown_s"] = trio.current_time() - closing
        if proc.process.returncode is not None:
            # Exited: its stderr (a few KB, far below a pipe buffer) is complete, read to EOF.
            while chunk := await proc.stderr.receive_some(65536):
                err += chunk
    seen["returncode"] = proc.process.returncode
    seen["total_s"] = trio.current_time() - t0
    seen["stderr"] = err.decode("utf-8", "replace")
    return seen


def _check_server_side(seen: dict[str, Any]) -> None:
    stderr = seen["stderr"]
    inbound = _inbound(stderr)
    methods = [m["method"] for m in inbound]
    probes = {m["id"] for m in inbound if m["method"] == "server/discover"}
    # A server slow to start (a loaded machine) may miss the probe's deadline: the
    # client cancels the probe, falls back to initialize, is told the server is
    # modern and discovers again.  Either way the outcome below is the same.
    late_probe = any(
        m["method"] == "notifications/cancelled" and m["params"]["requestId"] in probes for m in inbound
    )
    if seen["version"] in SDK_MODERN_VERSIONS:
        assert methods[0] == "server/discover" and ("initialize" not in methods or late_probe)
    else:
        assert methods[:2] == ["initialize", "notifications/initialized"]
        assert inbound[0]["params"]["protocolVersion"] == seen["version"]
    # The server got notifications/cancelled for exactly the sleep call, and its handler stopped.
    sleeps = [m for m in inbound if m["method"] == "tools/call" and m["params"]["name"] == "sleep"]
    cancels = [
        m
        for m in inbound
        if m["method"] == "notifications/cancelled" and m["params"]["requestId"] not in probes
    ]
    assert len(sleeps) == 1 and len(cancels) == 1, stderr
    assert cancels[0]["params"]["requestId"] == sleeps[0]["id"]
    assert "sdk_server: sleep cancelled" in stderr
    # Clean shutdown: closing stdin made the SDK server exit 0 on its own (no signal needed).
    assert seen["returncode"] == 0, (seen["returncode"], stderr)
    assert "sdk_server: exiting" in stderr


def _report(label: str, seen: dict[str, Any]) -> None:
    how = "exited 0 on stdin EOF" if seen["returncode"] == 0 else f"returncode {seen['returncode']}"
    print(
        f"[{label}] negotiated {seen['version']}; connect {seen['connect_s']:.2f}s, "
        f"cancel {seen['cancel_s']:.3f}s, shutdown {seen['shutdown_s']:.2f}s ({how}), "
        f"total {seen['total_s']:.2f}s"
    )


async def test_our_client_against_the_sdk_server() -> None:
    with trio.fail_after(20):
        seen = await _exercise_sdk_server(None)
    _report("default versions", seen)
    # Both sides speak every revision, so the newest one (the stateless era) wins.
    assert seen["version"] in SDK_VERSIONS
    assert seen["version"] == "2026-07-28"
    _check_server_side(seen)


@pytest.mark.parametrize("version", ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"])
async def test_our_client_limited_to_a_legacy_revision(version: str) -> None:
    assert version in SDK_HANDSHAKE_VERSIONS
    with trio.fail_after(20):
        seen = await _exercise_sdk_server([version])
    _report(f"versions=[{version}]", seen)
    assert seen["version"] == version
    _check_server_side(seen)


# ------------------------------------------------- SDK client -> our server


async def _run_sdk_client(mode: str) -> dict[str, Any]:
    argv = [*SDK_CLIENT, "--mode", mode, "--cancel-after", str(CANCEL_AFTER), "--sleep", "1.0"]
    with trio.fail_after(25):
        done = await trio.run_process(
            [*argv, "--", *OUR_SERVER],
            env=ENV,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    lines = done.stdout.decode().splitlines()
    assert len(lines) == 1, (lines, stderr)
    out: dict[str, Any] = json.loads(lines[0])
    version, timings = out["protocol_version"], out["timings"]
    print(f"[sdk client, mode={mode}] negotiated {version}; timings {timings}")
    return out


def _check_sdk_client_output(out: dict[str, Any]) -> None:
    assert out["server_info"] == {"name": "lowlevel-test-server", "version": "1.0"}
    assert out["server_capabilities"]["tools"] == {}
    assert out["tools"] == ["echo", "sleep", "progress", "crash", "print"]
    assert out["echo"] == "héllo ☃ from the SDK"
    assert out["progress_result"] == "done"
    assert [p[0] for p in out["progress"]] == [1.0, 2.0, 3.0, 4.0]
    assert {p[1] for p in out["progress"]} == {4.0}
    # Cancelling the calling scope returned promptly, the session went on, and our server
    # honoured notifications/cancelled: no late answer for the sleep ever arrived.
    assert out["cancel_caught"] is True and out["cancelled_promptly"] is True
    assert out["cancel_elapsed"] < CANCEL_AFTER + PROMPT
    assert out["echo_after_cancel"] == "after"
    assert out["echo_after_wait"] == "still here"
    assert out["late_responses"] == 0
    # The SDK closed stdin and our server exited by itself.
    assert "lowlevel_server exiting" in out["server_stderr"]


async def test_sdk_client_against_our_server_legacy_handshake() -> None:
    out = await _run_sdk_client("legacy")
    assert out["protocol_version"] == "2025-11-25"  # the SDK's initialize offer, accepted as is
    assert out["ping"] == "ok"
    _check_sdk_client_output(out)


async def test_sdk_client_against_our_server_auto_negotiation() -> None:
    out = await _run_sdk_client("auto")
    # The SDK probes server/discover; our server answers, so the stateless era is chosen.
    assert out["protocol_version"] == "2026-07-28"
    # ping was removed in 2026-07-28; the SDK client still sends it and our server refuses it.
    assert out["ping"].startswith("MCPError") and "ping" in out["ping"]
    _check_sdk_client_output(out)
