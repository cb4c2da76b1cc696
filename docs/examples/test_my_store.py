"""A store of your own (what the workers of a server share), checked against the contract the
Streamable HTTP endpoint and the task manager rely on: check_store takes a function that opens
two stores over the same data, as two workers see it. Here the in-memory store, on a virtual
clock (its times to live are trio's time)."""

from contextlib import asynccontextmanager

from mcp_trio.store import Store
from mcp_trio.testing import check_store


@asynccontextmanager
async def two_workers(**options):
    store = Store.in_memory(**options)  # (yours: two connections to one backend)
    yield store, store


async def test_my_store_keeps_the_contract(autojump_clock):
    await check_store(two_workers)
