"""``mcp_trio.testing.check_store``: the in-memory store passes it whole; a store that breaks one
rule fails it, naming the check."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio.testing

from mcp_trio.store import InMemoryBuckets, InMemorySessionStore, SessionRecord, Store
from mcp_trio.testing import check_store


@asynccontextmanager
async def in_memory(**options: Any) -> AsyncIterator[tuple[Store, Store]]:
    store = Store.in_memory(**options)
    yield store, store


class _Forgetful(InMemorySessionStore):
    """Says it kept a record alive, and does not."""

    async def touch(self, session_id: str, *, ttl: float) -> bool:
        return await self.get(session_id) is not None


class _Careless(InMemorySessionStore):
    """Puts a record as given, but forgets its subscriptions."""

    async def put(self, record: SessionRecord, *, ttl: float) -> SessionRecord:
        import msgspec

        return await super().put(msgspec.structs.replace(record, subscriptions=[]), ttl=ttl)


def _with_sessions(kind: type[InMemorySessionStore]) -> Any:
    @asynccontextmanager
    async def opened(**options: Any) -> AsyncIterator[tuple[Store, Store]]:
        base = Store.in_memory(**options)
        store = Store(sessions=kind(), events=base.events, tasks=base.tasks, bus=base.bus)
        yield store, store

    return opened


async def test_the_in_memory_store_passes(autojump_clock: trio.testing.MockClock) -> None:
    await check_store(in_memory)


@pytest.mark.parametrize(
    ("kind", "check"),
    [
        (_Forgetful, "a session record expires unless touched"),
        (_Careless, "changes of different fields by two workers at once are all kept"),
    ],
)
async def test_a_store_that_breaks_a_rule_fails_and_the_check_is_named(
    kind: type[InMemorySessionStore], check: str, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(AssertionError, match=f"^{re.escape(check)}: `assert .+` failed$"):
        await check_store(_with_sessions(kind))


async def test_buckets_that_each_worker_keeps_apart_fail_the_burst_check(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Two workers each with buckets of their own give twice the burst: the check says so."""

    @asynccontextmanager
    async def apart(**options: Any) -> AsyncIterator[tuple[Store, Store]]:
        base = Store.in_memory(**options)
        yield base, dataclasses.replace(base, buckets=InMemoryBuckets())

    check = "two workers taking at once never get more than the burst"
    with pytest.raises(AssertionError, match=f"^{re.escape(check)}: 10 tokens taken from a bucket of 5"):
        await check_store(apart)


async def test_a_store_without_buckets_passes(autojump_clock: trio.testing.MockClock) -> None:
    """Buckets are optional (``None``: each worker limits with its own)."""

    @asynccontextmanager
    async def without(**options: Any) -> AsyncIterator[tuple[Store, Store]]:
        store = dataclasses.replace(Store.in_memory(**options), buckets=None)
        yield store, store

    await check_store(without)
