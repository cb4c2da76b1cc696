"""What only the Redis store does: keys under its prefix, each with a time to
live or deleted at the end of what it belongs to; failures of Redis turned into
the store's errors within its timeout, and recovery once Redis is back.  On a
real redis-server (see tools/redis_server.py)."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import sys
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import coredis
import pytest
import trio
import trio.testing

from mcp_trio.store import SessionRecord, Store, StoreError, StoreUnavailable, TaskRecord, open_store
from tests._support.examples import example_env
from tests._support.store import fresh_prefix
from tools.redis_server import RedisServer, RedisUnavailable, redis_server_path

pytestmark = pytest.mark.interop

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "store.py"
EXPECTED = EXAMPLE.with_suffix(".out").read_text()


@asynccontextmanager
async def _raw(server: RedisServer) -> AsyncIterator[coredis.Redis[bytes]]:
    client: coredis.Redis[bytes] = coredis.Redis(host="127.0.0.1", port=server.port)
    async with client:
        yield client


async def _keys(client: coredis.Redis[bytes], prefix: str) -> list[bytes]:
    return sorted([key async for key in client.scan_iter(match=prefix + "*")])  # type: ignore[misc]


async def _session_life(store: Store, i: int) -> None:
    sid = f"session-{i}"
    await store.sessions.put(SessionRecord(session_id=sid, protocol_version="2025-11-25"), ttl=600)
    await store.sessions.touch(sid, ttl=600)
    for n in range(2):
        await store.events.store(sid, "get", f"{n}", b"event")
    task = TaskRecord(task_id=f"task-{i}", owner=f"owner-{i % 7}", session_id=sid, ttl=600)
    await store.tasks.create(task, lease=60)
    if i % 50 == 0:  # the bus leaves no key either (its channels are not keys)
        async with store.bus.subscribe(f"worker-{i % 3}") as subscription:
            await store.bus.publish(f"worker-{i % 3}", b"x")
            assert (await subscription.receive()).data == b"x"


@pytest.mark.slow
async def test_every_key_has_a_ttl_and_1000_ended_sessions_leave_no_key(redis_server: RedisServer) -> None:
    prefix = fresh_prefix()
    async with open_store(redis_server.url, prefix=prefix) as store, _raw(redis_server) as raw:
        with trio.fail_after(60):
            for i in range(1000):
                await _session_life(store, i)
            keys = await _keys(raw, prefix)
            kinds = {key[len(prefix) :].split(b":")[0] for key in keys}
            assert kinds == {b"s", b"e", b"eb", b"t", b"tl", b"to"}
            for key in keys:
                assert await raw.pttl(key) > 0, key  # none lives forever
            # the end of each session: what a server does when a session ends
            for i in range(1000):
                sid = f"session-{i}"
                assert await store.tasks.delete(f"task-{i}")
                await store.events.forget(sid)
                assert await store.sessions.delete(sid)
            assert await _keys(raw, prefix) == []


async def test_event_streams_are_bounded_and_expire(redis_server: RedisServer) -> None:
    prefix = fresh_prefix()
    async with (
        open_store(redis_server.url, prefix=prefix, max_events=5, event_ttl=30) as store,
        _raw(redis_server) as raw,
    ):
        for i in range(50):
            await store.events.store("s", "get", str(i), b"data")
        assert await raw.xlen(f"{prefix}e:s") == 5
        assert int(await raw.get(f"{prefix}eb:s") or 0) == 5 * (4 + 64)
        for key in (f"{prefix}e:s", f"{prefix}eb:s"):
            assert 29_000 < await raw.pttl(key) <= 30_000
        await store.events.forget("s")
        assert await _keys(raw, prefix) == []


async def test_an_unreachable_redis_is_a_clear_error_naming_the_url(redis_server: RedisServer) -> None:
    port = RedisServer(Path("."), None).port  # a free port: nothing listens there
    with trio.fail_after(10):
        with pytest.raises(StoreUnavailable, match=rf"redis://:\*\*\*@127\.0\.0\.1:{port}/0") as caught:
            async with open_store(f"redis://:hunter2@127.0.0.1:{port}/0", timeout=2):
                pass
    assert "hunter2" not in str(caught.value)


async def test_other_urls_are_refused() -> None:
    with pytest.raises(ValueError, match="expected 'memory:', 'redis://HOST:PORT/DB'"):
        async with open_store("postgres://localhost/x"):
            pass


async def test_without_coredis_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [
        m for m in sys.modules if m == "coredis" or m.startswith(("coredis.", "mcp_trio.store._redis"))
    ]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "coredis", None)
    with pytest.raises(StoreError, match=r"needs coredis: pip install 'mcp-trio\[redis\]'"):
        async with open_store("redis://127.0.0.1:6379/0"):
            pass


@pytest.fixture
def own_redis(tmp_path: Path) -> RedisServer:
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server  # type: ignore[misc]
    server.stop()


async def test_redis_restarted_mid_run_gives_errors_not_hangs_then_recovers(own_redis: RedisServer) -> None:
    record = SessionRecord(session_id="s", protocol_version="2025-11-25")
    async with open_store(own_redis.url, timeout=2) as one, open_store(own_redis.url, timeout=2) as two:
        with trio.fail_after(60):
            await one.sessions.put(record, ttl=60)
            async with two.bus.subscribe("w2") as subscription:
                await one.bus.publish("w2", b"before")
                assert (await subscription.receive()).data == b"before"
                own_redis.stop()
                # every call fails promptly with the store's error; the subscription is cut off
                for call in (
                    one.sessions.get("s"),
                    one.sessions.put(record, ttl=60),
                    one.events.store("s", "get", "1", b"x"),
                    one.events.replay_after("s", "1"),
                    one.tasks.create(TaskRecord(task_id="t", owner="o", ttl=60), lease=5),
                    one.tasks.list("o"),
                    one.bus.publish("w2", b"lost"),
                ):
                    with trio.fail_after(10):
                        with pytest.raises(StoreUnavailable, match=own_redis.url):
                            await call
                with trio.fail_after(10), pytest.raises(StoreUnavailable):
                    async for _ in subscription:
                        pass
            own_redis.start()  # same port, empty (nothing is saved)
            # recovered: every part works again, on both connections
            assert await one.sessions.get("s") is None
            await one.sessions.put(record, ttl=60)
            assert await two.sessions.get("s") is not None
            await one.events.store("s", "get", "1", b"x")
            await one.events.store("s", "get", "2", b"y")
            assert await two.events.replay_after("s", "1") == ("get", [("2", b"y")])
            await one.tasks.create(TaskRecord(task_id="t", owner="o", ttl=60), lease=5)
            assert [t.task_id for t in await two.tasks.list("o")] == ["t"]
            async with two.bus.subscribe("w2") as again:
                await one.bus.publish("w2", b"after")
                assert (await again.receive()).data == b"after"


async def test_a_redis_that_stops_answering_gives_an_error_within_the_timeout(own_redis: RedisServer) -> None:
    async with open_store(own_redis.url, timeout=0.5) as store:
        await store.sessions.put(SessionRecord(session_id="s", protocol_version="2025-11-25"), ttl=60)
        assert own_redis.process is not None
        os.kill(own_redis.process.pid, signal.SIGSTOP)
        try:
            with trio.fail_after(10):
                with pytest.raises(StoreUnavailable, match=r"did not answer reading a session within 0\.5 s"):
                    await store.sessions.get("s")
        finally:
            os.kill(own_redis.process.pid, signal.SIGCONT)
        with trio.fail_after(10):
            while True:  # the connection that timed out is dropped; a fresh one answers
                try:
                    found = await store.sessions.get("s")
                    break
                except StoreUnavailable:
                    await trio.sleep(0.05)
        assert found is not None


async def test_the_guide_example_prints_the_same_on_redis_and_leaves_no_key(
    redis_server: RedisServer,
) -> None:
    example = EXAMPLE
    env = {**example_env(), "MCP_TRIO_STORE": redis_server.url}
    done = await trio.run_process(
        [sys.executable, str(example)], env=env, capture_stdout=True, capture_stderr=True, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == EXPECTED
    async with _raw(redis_server) as raw:
        assert await _keys(raw, "example:") == []


async def test_errors_inside_the_store_block_come_out_as_raised(redis_server: RedisServer) -> None:
    with pytest.raises(KeyError, match="mine"):
        async with open_store(redis_server.url, prefix=fresh_prefix()):
            raise KeyError("mine")
    with pytest.raises(StoreError, match="already exists"):
        async with open_store(redis_server.url, prefix=fresh_prefix()) as store:
            await store.tasks.create(TaskRecord(task_id="t", owner="o", ttl=5))
            await store.tasks.create(TaskRecord(task_id="t", owner="o", ttl=5))


def test_without_redis_server_and_root_the_fixture_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, **where: None)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(RedisUnavailable, match=r"need redis-server .* apt-get install redis-server"):
        redis_server_path()


async def test_subscriptions_come_and_go_concurrently_and_leave_no_channel(redis_server: RedisServer) -> None:
    prefix = fresh_prefix()
    received = 0

    async def churn(store: Store, n: int) -> None:
        nonlocal received
        for i in range(10):
            async with store.bus.subscribe("shared", f"own-{n}") as subscription:
                await store.bus.publish(f"own-{n}", b"%d" % i)
                async for message in subscription:
                    if message.channel == f"own-{n}":  # "shared" ones may come first
                        assert message.data == b"%d" % i
                        received += 1
                        break

    async with open_store(redis_server.url, prefix=prefix) as store, _raw(redis_server) as raw:
        with trio.fail_after(30):
            async with trio.open_nursery() as nursery:
                for n in range(10):
                    nursery.start_soon(churn, store, n)
                for _ in range(20):
                    await store.bus.publish("shared", b"noise")
                    await trio.sleep(0.005)
            assert received == 100
            assert await raw.pubsub_channels(prefix + "*") == set()


async def test_a_bucket_is_a_key_under_the_prefix_gone_once_it_would_be_full(
    redis_server: RedisServer,
) -> None:
    prefix = fresh_prefix()
    async with open_store(redis_server.url, prefix=prefix) as store, _raw(redis_server) as raw:
        assert store.buckets is not None
        with trio.fail_after(10):
            for _ in range(3):
                assert await store.buckets.take("who", rate=10, burst=3) == 0.0
            assert await _keys(raw, prefix) == [f"{prefix}rl:who".encode()]
            pttl = await raw.pttl(f"{prefix}rl:who")
            assert 200 < pttl <= 300  # (3 tokens missing at 10 a second: full in 0.3 s)
            await trio.sleep(0.35)
            assert await _keys(raw, prefix) == []


async def test_a_subscription_left_is_not_kept_until_the_next_message(redis_server: RedisServer) -> None:
    # The subscriber connection's task hands each message to the subscriptions of its
    # channel; one left afterwards is freed at once, not kept (with its queue) by that
    # task until the next message comes, however long that is.
    async with open_store(redis_server.url, prefix=fresh_prefix()) as store:
        async with store.bus.subscribe("other"):  # (the subscriber connection stays open)
            async with store.bus.subscribe("c") as subscription:
                await store.bus.publish("c", b"x")
                assert (await subscription.receive()).data == b"x"
            left = weakref.ref(subscription)
            del subscription
            await trio.testing.wait_all_tasks_blocked()
            gc.collect()
            assert left() is None
