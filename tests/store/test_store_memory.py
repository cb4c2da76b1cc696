"""What only the in-memory store does: its times to live run on the trio clock
(a mock clock drives them), expired entries are swept so the store stays
bounded by what is alive, and a bus subscription's end."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from mcp_trio.store import (
    InMemoryBus,
    InMemorySessionStore,
    InMemoryTaskStore,
    SessionRecord,
    Store,
    StoreError,
    TaskRecord,
    open_store,
)


async def test_open_store_gives_the_in_memory_store_by_default() -> None:
    for url in (None, "", "memory:", "memory://"):
        async with open_store(url) as store:
            assert isinstance(store, Store) and not store.shared and store.url == "memory:"
            assert isinstance(store.sessions, InMemorySessionStore)
            assert isinstance(store.tasks, InMemoryTaskStore)
            assert isinstance(store.bus, InMemoryBus)


async def test_expired_records_and_tasks_are_swept(autojump_clock: trio.testing.MockClock) -> None:
    sessions = InMemorySessionStore()
    tasks = InMemoryTaskStore()
    for i in range(5000):
        await sessions.put(SessionRecord(session_id=f"s{i}", protocol_version="2025-11-25"), ttl=10)
        await tasks.create(TaskRecord(task_id=f"t{i}", owner=f"o{i % 10}", ttl=10))
        if i % 1000 == 999:
            await trio.sleep(11)  # what was stored so far expires
    # never read again, yet not all kept: each sweep drops what expired
    assert len(sessions) <= 2048 and len(tasks) <= 2048
    await trio.sleep(11)
    assert await sessions.get("s4999") is None and await tasks.list("o9") == []
    assert len(sessions) < 2048


async def test_leases_run_on_the_trio_clock(autojump_clock: trio.testing.MockClock) -> None:
    tasks = InMemoryTaskStore()
    await tasks.create(TaskRecord(task_id="t", owner="o", ttl=3600), lease=30)
    for _ in range(10):
        await trio.sleep(29)
        assert await tasks.renew("t", 30)
    await trio.sleep(31)
    lost = await tasks.get("t")
    assert lost is not None and lost.status == "failed"


async def test_a_subscription_left_is_closed() -> None:
    bus = InMemoryBus(max_queued=2)
    async with bus.subscribe("c") as subscription:
        await bus.publish("c", b"kept")
    assert [m.data async for m in subscription] == [b"kept"]  # what was queued, then the end
    with pytest.raises(StoreError, match="the subscription to c is closed"):
        await subscription.receive()
    await bus.publish("c", b"nobody listens")  # no subscriber left: nothing kept
    assert not bus._subscribers
    with pytest.raises(ValueError, match="at least one message"):
        async with InMemoryBus(max_queued=0).subscribe("c"):
            pass
