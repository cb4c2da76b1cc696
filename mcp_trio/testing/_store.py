"""``check_store``: the contract of ``mcp_trio.store``, checked on a store of your own (what the
in-memory store and the one on Redis pass)."""

from __future__ import annotations

import re
import traceback
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from functools import partial
from typing import Any, TypeAlias

import msgspec
import trio

from ..store import (
    LEASE_LOST_MESSAGE,
    BusMessage,
    BusOverflow,
    SessionRecord,
    Store,
    StoreError,
    TaskRecord,
)

__all__ = ["STORE_CHECKS", "OpenPair", "check_store"]

#: Opens two stores over the same data (two workers of one server), with the store options given
#: (``max_events``, ``max_event_bytes``, ``max_queued``), closed when the context ends.
OpenPair: TypeAlias = Callable[..., AbstractAsyncContextManager[tuple[Store, Store]]]


#: Every check of the contract, by name (what the check says, in its words): ``await
#: STORE_CHECKS[name](open_pair)``.
STORE_CHECKS: dict[str, Callable[[OpenPair], Awaitable[None]]] = {}


def _check(check: Callable[[OpenPair], Awaitable[None]]) -> Callable[[OpenPair], Awaitable[None]]:
    STORE_CHECKS[check.__name__.removeprefix("check_")] = check
    return check


@contextmanager
def _raises(kind: type[BaseException], match: str) -> Iterator[None]:
    try:
        yield
    except kind as exc:
        assert re.search(match, str(exc)), f"{kind.__name__} said {exc!r}, not {match!r}"
        return
    raise AssertionError(f"no {kind.__name__} ({match!r})")


TTL = 0.6  # seconds: long enough to read a record back, short enough to wait out
BEAT = TTL / 4  # how often what must stay alive is touched or renewed (slack for a loaded machine)
BEATS = 6  # BEATS * BEAT > TTL: what is not touched has expired by then


def _session(sid: str = "s1") -> SessionRecord:
    return SessionRecord(
        session_id=sid,
        protocol_version="2025-11-25",
        client_info=b'{"name":"c","version":"1"}',
        client_capabilities=b'{"sampling":{}}',
        log_level="info",
        subscriptions=["file:///a"],
        stream_worker="w1",
        principal="alice",
        data={"k": b"\x00v"},
    )


# --- session records ------------------------------------------------------------------------


@_check
async def check_a_session_record_round_trips_between_workers(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        kept = await one.sessions.put(_session(), ttl=60)
        assert kept.created_at > 0 and abs(kept.expires_at - (kept.created_at + 60)) <= 1, kept
        seen = await two.sessions.get("s1")
        assert seen is not None
        assert msgspec.structs.replace(seen, expires_at=0.0) == msgspec.structs.replace(kept, expires_at=0.0)
        assert abs(seen.expires_at - kept.expires_at) <= 1, (seen, kept)
        assert await two.sessions.get("unknown") is None


@_check
async def check_changes_of_different_fields_by_two_workers_at_once_are_all_kept(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        # (a worker taking the GET stream while another sets the log level: neither change lost)
        one, two = pair
        await one.sessions.put(_session(), ttl=60)
        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(partial(one.sessions.change, "s1", {"log_level": f"level-{n}"}, ttl=60))
                nursery.start_soon(
                    partial(two.sessions.change, "s1", {"stream_worker": f"worker-{n}"}, ttl=60)
                )
        seen = await one.sessions.get("s1")
        assert seen is not None
        assert seen.log_level is not None and seen.log_level.startswith("level-")
        assert seen.stream_worker is not None and seen.stream_worker.startswith("worker-")
        assert seen.subscriptions == ["file:///a"]  # (fields nobody changed stay)
        last = await two.sessions.change("s1", {"log_level": "debug"}, ttl=60)
        assert last is not None and last.log_level == "debug" and last.stream_worker == seen.stream_worker
        assert await one.sessions.change("unknown", {"log_level": "debug"}, ttl=60) is None


@_check
async def check_a_change_computed_from_the_record_adds_without_losing_another(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        # (workers naming themselves among a session's replicas at once: every name kept)
        one, two = pair
        await one.sessions.put(_session(), ttl=60)

        def adding(name: str) -> Callable[[SessionRecord], dict[str, Any]]:
            return lambda record: {"replicas": [*record.replicas, name]}

        async with trio.open_nursery() as nursery:
            for n in range(10):
                nursery.start_soon(partial(one.sessions.change, "s1", adding(f"a{n}"), ttl=60))
                nursery.start_soon(partial(two.sessions.change, "s1", adding(f"b{n}"), ttl=60))
        seen = await two.sessions.get("s1")
        assert seen is not None
        assert sorted(seen.replicas) == sorted([f"a{n}" for n in range(10)] + [f"b{n}" for n in range(10)])
        assert await one.sessions.change("unknown", adding("x"), ttl=60) is None


@_check
async def check_take_forgets_the_record_and_returns_it(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        await one.sessions.put(msgspec.structs.replace(_session(), replicas=["w1", "w2"]), ttl=60)
        taken = await two.sessions.take("s1")
        assert (
            taken is not None and taken.replicas == ["w1", "w2"] and taken.log_level == _session().log_level
        )
        assert await one.sessions.get("s1") is None
        assert await one.sessions.take("s1") is None
        # a change after it finds the record gone
        assert await one.sessions.change("s1", {"log_level": "debug"}, ttl=60) is None


@_check
async def check_a_session_record_expires_unless_touched(open_pair: OpenPair) -> None:
    async with open_pair() as (store, _):
        await store.sessions.put(_session("gone"), ttl=TTL)
        await store.sessions.put(_session("kept"), ttl=TTL)
        for _ in range(BEATS):
            await trio.sleep(BEAT)
            assert await store.sessions.touch("kept", ttl=TTL)
        assert await store.sessions.get("gone") is None
        assert not await store.sessions.touch("gone", ttl=TTL)
        kept = await store.sessions.get("kept")
        assert kept is not None and kept.subscriptions == ["file:///a"]


@_check
async def check_put_replaces_and_delete_forgets(open_pair: OpenPair) -> None:
    async with open_pair() as (store, _):
        await store.sessions.put(_session(), ttl=60)
        changed = msgspec.structs.replace(_session(), log_level="debug", stream_worker=None)
        await store.sessions.put(changed, ttl=60)
        seen = await store.sessions.get("s1")
        assert seen is not None and seen.log_level == "debug" and seen.stream_worker is None
        assert await store.sessions.delete("s1")
        assert not await store.sessions.delete("s1")
        assert await store.sessions.get("s1") is None


@_check
async def check_a_time_to_live_must_be_positive(open_pair: OpenPair) -> None:
    async with open_pair() as (store, _):
        with _raises(ValueError, match="ttl must be a positive number of seconds"):
            await store.sessions.put(_session(), ttl=0)
        with _raises(ValueError, match="lease must be a positive"):
            await store.tasks.create(TaskRecord(task_id="t", owner="o", ttl=1), lease=-1)


# --- events ---------------------------------------------------------------------------------


@_check
async def check_events_resume_after_an_id_in_order_on_their_stream(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        for i in range(6):
            await one.events.store("s1", "get" if i % 2 else "post-1", f"e{i}", f"data {i}".encode())
        assert await two.events.replay_after("s1", "e1") == ("get", [("e3", b"data 3"), ("e5", b"data 5")])
        assert await two.events.replay_after("s1", "e4") == ("post-1", [])
        assert await two.events.replay_after("s1", "nope") is None
        assert await two.events.replay_after("other", "e1") is None
        await two.events.forget("s1")
        assert await one.events.replay_after("s1", "e1") is None


@_check
async def check_events_are_bounded_by_count(open_pair: OpenPair) -> None:
    async with open_pair(max_events=3) as (store, _):
        for i in range(10):
            await store.events.store("s", "get", str(i), b"x")
        assert await store.events.replay_after("s", "6") is None  # dropped
        assert await store.events.replay_after("s", "7") == ("get", [("8", b"x"), ("9", b"x")])


@_check
async def check_events_are_bounded_by_bytes(open_pair: OpenPair) -> None:
    # each event counts its data plus 64 bytes: 3 events of 100 bytes fit in 500, not 4
    async with open_pair(max_event_bytes=500) as (store, _):
        for i in range(6):
            await store.events.store("s", "get", str(i), bytes(100))
        assert await store.events.replay_after("s", "2") is None
        assert await store.events.replay_after("s", "3") == ("get", [("4", bytes(100)), ("5", bytes(100))])
        # an event larger than the bound is not kept, nor those before it (resuming would skip it)
        await store.events.store("s", "get", "big", bytes(600))
        assert await store.events.replay_after("s", "5") is None
        await store.events.store("s", "get", "after", b"y")
        await store.events.store("s", "get", "last", b"z")
        assert await store.events.replay_after("s", "after") == ("get", [("last", b"z")])


# --- tasks ----------------------------------------------------------------------------------


def _task(task_id: str, owner: str = "alice", ttl: float = 60) -> TaskRecord:
    return TaskRecord(task_id=task_id, owner=owner, session_id="s1", ttl=ttl, worker="w1")


@_check
async def check_tasks_are_created_read_updated_listed_and_deleted(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        created = await one.tasks.create(_task("t1"))
        assert created.created_at > 0 and not created.leased and created.status == "working"
        with _raises(StoreError, match="already exists"):
            await two.tasks.create(_task("t1"))
        await trio.sleep(0.01)
        await one.tasks.create(_task("t2"))
        await one.tasks.create(_task("t3", owner="bob"))
        assert [t.task_id for t in await two.tasks.list("alice")] == ["t1", "t2"]
        assert [t.task_id for t in await two.tasks.list("nobody")] == []
        done = msgspec.structs.replace(created, status="completed", result=b'{"content":[]}', ttl=1.0)
        assert await two.tasks.update(done)
        seen = await one.tasks.get("t1")
        assert seen is not None and seen.status == "completed" and seen.result == b'{"content":[]}'
        assert seen.ttl == 60 and seen.created_at == created.created_at  # kept from creation
        with _raises(ValueError, match="owner cannot change"):
            await one.tasks.update(msgspec.structs.replace(done, owner="mallory"))
        assert await two.tasks.delete("t1")
        assert not await two.tasks.delete("t1")
        assert await one.tasks.get("t1") is None
        assert not await one.tasks.update(done)
        assert [t.task_id for t in await one.tasks.list("alice")] == ["t2"]


@_check
async def check_a_task_expires_with_its_ttl(open_pair: OpenPair) -> None:
    async with open_pair() as (store, _):
        await store.tasks.create(_task("short", ttl=TTL))
        await store.tasks.create(_task("long"))
        await trio.sleep(TTL * 1.5)
        assert await store.tasks.get("short") is None
        assert [t.task_id for t in await store.tasks.list("alice")] == ["long"]


@_check
async def check_a_task_whose_lease_expires_is_reported_failed(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        await one.tasks.create(_task("renewed"), lease=TTL)
        await one.tasks.create(_task("abandoned"), lease=TTL)
        for _ in range(BEATS):
            await trio.sleep(BEAT)
            assert await one.tasks.renew("renewed", TTL)
        renewed = await two.tasks.get("renewed")
        assert renewed is not None and renewed.status == "working" and renewed.leased
        lost = await two.tasks.get("abandoned")
        assert lost is not None and lost.status == "failed" and lost.status_message == LEASE_LOST_MESSAGE
        assert {t.task_id: t.status for t in await two.tasks.list("alice")} == {
            "renewed": "working",
            "abandoned": "failed",
        }
        # the worker that lost the lease can neither renew nor finish it
        assert not await one.tasks.renew("abandoned", TTL)
        assert not await one.tasks.update(msgspec.structs.replace(_task("abandoned"), status="completed"))
        # a task finished in time keeps its status after the lease runs out
        finished = await one.tasks.get("renewed")
        assert finished is not None
        assert await one.tasks.update(msgspec.structs.replace(finished, status="completed"))
        await trio.sleep(TTL * 1.5)
        after = await two.tasks.get("renewed")
        assert after is not None and after.status == "completed"
        assert not await one.tasks.renew("unknown", TTL)


@_check
async def check_a_task_without_a_lease_never_fails_by_itself(open_pair: OpenPair) -> None:
    async with open_pair() as (store, _):
        await store.tasks.create(_task("free"))
        assert not await store.tasks.renew("free", TTL)  # nothing to renew
        await trio.sleep(TTL)
        free = await store.tasks.get("free")
        assert free is not None and free.status == "working"


# --- the bus --------------------------------------------------------------------------------


@_check
async def check_the_bus_delivers_between_workers_in_order(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        with trio.fail_after(10):
            async with (
                two.bus.subscribe("worker-2", "broadcast") as mine,
                one.bus.subscribe("broadcast") as theirs,
            ):
                assert await one.bus.publish("nobody", b"lost") == 0  # (nobody listens: told so)
                for i in range(20):
                    assert await one.bus.publish("worker-2", b"%d" % i) == 1
                assert await one.bus.publish("broadcast", b"all") == 2
                got = [await mine.receive() for _ in range(21)]
                assert got == [BusMessage("worker-2", b"%d" % i) for i in range(20)] + [
                    BusMessage("broadcast", b"all")
                ]
                assert await theirs.receive() == BusMessage("broadcast", b"all")
            # after leaving, nothing arrives; a new subscription gets only what follows
            async with two.bus.subscribe("worker-2") as again:
                await one.bus.publish("worker-2", b"new")
                async for message in again:
                    assert message == BusMessage("worker-2", b"new")
                    break


@_check
async def check_two_subscriptions_of_a_channel_both_get_it_and_one_leaving_keeps_the_other(
    open_pair: OpenPair,
) -> None:
    async with open_pair() as pair:
        one, two = pair
        with trio.fail_after(10):
            async with two.bus.subscribe("c") as first:
                async with two.bus.subscribe("c") as second:
                    await one.bus.publish("c", b"1")
                    assert (await first.receive()).data == (await second.receive()).data == b"1"
                await one.bus.publish("c", b"2")
                assert (await first.receive()).data == b"2"


@_check
async def check_a_subscription_that_falls_behind_is_cut_off(open_pair: OpenPair) -> None:
    async with open_pair(max_queued=4) as (store, _):
        with trio.fail_after(10):
            async with store.bus.subscribe("c") as slow, store.bus.subscribe("done") as done:
                for i in range(10):
                    await store.bus.publish("c", b"%d" % i)
                await store.bus.publish("done", b"")
                await done.receive()  # so every message of "c" reached the subscription (one order)
                received = []
                with _raises(BusOverflow, match="more than 4 messages"):
                    async for message in slow:
                        received.append(message.data)
                assert received == [b"0", b"1", b"2", b"3"]


# --- the buckets of rate limits -------------------------------------------------------------


@_check
async def check_two_workers_taking_at_once_never_get_more_than_the_burst(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        if one.buckets is None or two.buckets is None:
            return  # (buckets are optional: without them each worker keeps its own)
        buckets = (one.buckets, two.buckets)
        waits: list[float] = []

        async def take(i: int) -> None:
            waits.append(await buckets[i % 2].take("k", rate=0.01, burst=5))

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                for i in range(60):
                    nursery.start_soon(take, i)
            taken = [w for w in waits if w == 0.0]
            assert len(taken) == 5, f"{len(taken)} tokens taken from a bucket of 5 by two workers at once"
            # a refusal says when the next token is there: within 1 / rate, and after some time
            assert all(0 < w <= 100 for w in waits if w), sorted(waits)[-1]
            assert await buckets[0].take("other", rate=0.01, burst=5) == 0.0  # (one bucket per key)


@_check
async def check_a_bucket_refills_at_its_rate(open_pair: OpenPair) -> None:
    async with open_pair() as pair:
        one, two = pair
        if one.buckets is None or two.buckets is None:
            return  # (buckets are optional: without them each worker keeps its own)
        with trio.fail_after(10):
            assert await one.buckets.take("r", rate=1 / TTL, burst=2) == 0.0
            assert await two.buckets.take("r", rate=1 / TTL, burst=2) == 0.0
            wait = await one.buckets.take("r", rate=1 / TTL, burst=2)
            assert 0 < wait <= TTL, wait
            await trio.sleep(wait + BEAT / 4)  # one token back, not two
            assert await two.buckets.take("r", rate=1 / TTL, burst=2) == 0.0
            assert await one.buckets.take("r", rate=1 / TTL, burst=2) > 0
            await trio.sleep(3 * TTL)  # full again (at most the burst): two tokens, then none
            assert await two.buckets.take("r", rate=1 / TTL, burst=2) == 0.0
            assert await one.buckets.take("r", rate=1 / TTL, burst=2) == 0.0
            assert await two.buckets.take("r", rate=1 / TTL, burst=2) > 0
            for rate, burst in ((0, 1), (-1, 1), (float("inf"), 1), (1, 0)):
                with _raises(ValueError, match="rate must be a positive|burst must be at least 1"):
                    await one.buckets.take("r", rate=rate, burst=burst)


async def check_store(open_pair: OpenPair) -> None:
    """Check the stores ``open_pair()`` opens (two over the same data, as two workers of one
    server see it) against the contract the Streamable HTTP endpoint and the task manager rely
    on; raise :class:`AssertionError` saying what broke. Session records (shared, changed by
    two workers at once without a change lost, taken, expiring unless touched), SSE events
    (resumed in order, bounded by count and bytes), tasks (listed by owner, expiring, failed when
    their lease runs out), the bus (in order between workers, a subscription that falls behind
    cut off) and, unless the stores' ``buckets`` are ``None``, the buckets of rate limits (two
    workers at once never take more than the burst, refilled at the rate). Times to live are
    short real times (0.6 s): a store on a server of its own expires keys by its own clock."""
    for name, check in STORE_CHECKS.items():
        try:
            with trio.fail_after(30):
                await check(open_pair)
        except AssertionError as exc:
            said = str(exc) or f"`{traceback.extract_tb(exc.__traceback__)[-1].line}` failed"
            raise AssertionError(f"{name.replace('_', ' ')}: {said}") from exc
