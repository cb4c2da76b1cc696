"""Session.spawn: background work that lives exactly as long as the session."""

from __future__ import annotations

import logging

import pytest
import trio

from mcp_trio import ConnectionClosed, open_memory_transport_pair, open_session


async def test_spawned_work_runs_and_is_cancelled_when_the_session_ends() -> None:
    a, _b = open_memory_transport_pair()
    ran = trio.Event()
    cancelled = trio.Event()

    async def background(tag: str) -> None:
        assert tag == "x"
        ran.set()
        try:
            await trio.sleep_forever()
        except BaseException:
            cancelled.set()
            raise

    with trio.fail_after(5):
        async with open_session(a, role="server", info={"name": "s", "version": "1"}) as session:
            session.spawn(background, "x", name="probe")
            await ran.wait()
            assert not cancelled.is_set()
        assert cancelled.is_set()  # nothing outlives the session
        with pytest.raises(ConnectionClosed):
            session.spawn(background, "x")


async def test_a_failing_background_task_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    a, _b = open_memory_transport_pair()
    failed = trio.Event()

    async def broken() -> None:
        failed.set()
        raise RuntimeError("boom")

    with trio.fail_after(5), caplog.at_level(logging.ERROR, logger="mcp_trio"):
        async with open_session(a, role="server", info={"name": "s", "version": "1"}) as session:
            session.spawn(broken, name="broken-work")
            await failed.wait()
            await trio.sleep(0.01)
            assert not session.closed.is_set()
    assert any("broken-work" in r.getMessage() for r in caplog.records)
