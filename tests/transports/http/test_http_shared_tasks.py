"""Tasks of servers sharing one store: created on one worker, seen, awaited,
listed and cancelled from another; a task whose worker stopped is failed."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
import trio

from mcp_trio.server import Server
from mcp_trio.store import LEASE_LOST_MESSAGE
from mcp_trio.types._versions import TASKS_EXTENSION
from tests._support.http_server import MODERN_META, rpc
from tests._support.http_shared import initialize, modern_headers, workers

pytestmark = pytest.mark.trio


RELATED_TASK = "io.modelcontextprotocol/related-task"


def add_slow_tool(servers: list[Server], state: dict[str, Any]) -> None:
    """A task-capable tool on every worker; it runs until ``state["go"]`` is set."""
    state["go"] = trio.Event()
    state["ran_on"] = []
    for i, server in enumerate(servers):

        @server.tool(name="slow", task_support="optional")
        async def slow(label: str, i: int = i) -> str:
            state["ran_on"].append(i)
            try:
                await state["go"].wait()
            finally:
                state.setdefault("ended", trio.Event()).set()
            return label


async def start_slow_task(client: httpx.AsyncClient, url: str) -> tuple[dict[str, str], str]:
    """A session opened on ``url``, and the id of a ``slow`` task it started there."""
    headers = await initialize(client, url)
    params = {"name": "slow", "arguments": {"label": "x"}, "task": {}}
    r = await client.post(url, headers=headers, json=rpc(1, "tools/call", params))
    return headers, r.json()["result"]["task"]["taskId"]


async def test_a_task_created_on_one_worker_is_seen_and_awaited_on_another(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, state):
        add_slow_tool(servers, state)
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            await client.post(urls[1], headers=headers, json=rpc(None, "notifications/initialized"))
            params = {"name": "slow", "arguments": {"label": "done"}, "task": {"ttl": 60000}}
            r = await client.post(urls[0], headers=headers, json=rpc(1, "tools/call", params))
            task = r.json()["result"]["task"]
            assert task["status"] == "working" and state["ran_on"] == [0]
            r = await client.post(
                urls[1], headers=headers, json=rpc(2, "tasks/get", {"taskId": task["taskId"]})
            )
            got = r.json()["result"]
            assert got["status"] == "working" and got["ttl"] == 60000 and got["createdAt"]
            r = await client.post(urls[1], headers=headers, json=rpc(3, "tasks/list"))
            assert [t["taskId"] for t in r.json()["result"]["tasks"]] == [task["taskId"]]
            async with trio.open_nursery() as nursery:
                results: list[Any] = []

                async def wait_result() -> None:
                    r = await client.post(
                        urls[1], headers=headers, json=rpc(4, "tasks/result", {"taskId": task["taskId"]})
                    )
                    results.append(r.json())

                nursery.start_soon(wait_result)
                await trio.sleep(0.1)
                assert not results  # it waits for the task, which runs on the first worker
                state["go"].set()
            result = results[0]["result"]
            assert result["content"] == [{"type": "text", "text": "done"}]
            assert result["_meta"][RELATED_TASK] == {"taskId": task["taskId"]}
            r = await client.post(
                urls[1], headers=headers, json=rpc(5, "tasks/get", {"taskId": task["taskId"]})
            )
            assert r.json()["result"]["status"] == "completed"
            # another session does not see it, on any worker
            other = await initialize(client, urls[1])
            for url in urls:
                r = await client.post(
                    url, headers=other, json=rpc(6, "tasks/get", {"taskId": task["taskId"]})
                )
                assert r.json()["error"]["code"] == -32602


async def test_a_task_is_cancelled_from_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, state):
        add_slow_tool(servers, state)
        async with httpx.AsyncClient(timeout=5) as client:
            headers, task_id = await start_slow_task(client, urls[0])
            r = await client.post(urls[1], headers=headers, json=rpc(2, "tasks/cancel", {"taskId": task_id}))
            assert r.json()["result"]["status"] == "cancelled"
            with trio.fail_after(5):
                await state["ended"].wait()  # the tool was cancelled where it ran
            r = await client.post(urls[1], headers=headers, json=rpc(3, "tasks/cancel", {"taskId": task_id}))
            assert r.json()["error"]["code"] == -32602  # already terminal
            r = await client.post(urls[0], headers=headers, json=rpc(4, "tasks/result", {"taskId": task_id}))
            assert r.json()["error"]["code"] == -32602  # a cancelled task has no result


async def test_a_task_whose_worker_stopped_is_reported_failed(store_url: str | None) -> None:
    async with workers(2, task_lease=0.3, store_url=store_url) as (
        urls,
        servers,
        _,
        state,
    ):  # (renewed every 0.1 s)
        add_slow_tool(servers, state)
        async with httpx.AsyncClient(timeout=5) as client:
            headers, task_id = await start_slow_task(client, urls[0])
            await trio.sleep(0.5)  # the lease is renewed while the worker runs
            r = await client.post(urls[1], headers=headers, json=rpc(2, "tasks/get", {"taskId": task_id}))
            assert r.json()["result"]["status"] == "working"
            state["stop"][0]()  # the first worker stops
            with trio.fail_after(5):
                while True:
                    r = await client.post(
                        urls[1], headers=headers, json=rpc(3, "tasks/get", {"taskId": task_id})
                    )
                    if r.json()["result"]["status"] != "working":
                        break
                    await trio.sleep(0.05)
            got = r.json()["result"]
            assert got["status"] == "failed" and got["statusMessage"] == LEASE_LOST_MESSAGE


def modern(id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    meta = {
        **MODERN_META,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}},
    }
    return rpc(id, method, {**params, "_meta": meta})


async def test_extension_tasks_are_shared_by_the_workers(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, state):
        add_slow_tool(servers, state)
        async with httpx.AsyncClient(timeout=5) as client:
            body = modern(1, "tools/call", {"name": "slow", "arguments": {"label": "ext"}})
            r = await client.post(urls[0], headers=modern_headers("tools/call", "slow"), json=body)
            created = r.json()["result"]
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            get = modern(2, "tasks/get", {"taskId": task_id})
            r = await client.post(urls[1], headers=modern_headers("tasks/get"), json=get)
            assert r.json()["result"]["status"] == "working"
            state["go"].set()
            with trio.fail_after(5):
                while True:
                    r = await client.post(urls[1], headers=modern_headers("tasks/get"), json=get)
                    if r.json()["result"]["status"] == "completed":
                        break
                    await trio.sleep(0.02)
            assert r.json()["result"]["result"]["content"] == [{"type": "text", "text": "ext"}]
            # cancelling a terminal extension task is acknowledged, from any worker
            cancel = modern(3, "tasks/cancel", {"taskId": task_id})
            r = await client.post(urls[1], headers=modern_headers("tasks/cancel"), json=cancel)
            assert r.json()["result"] in ({}, {"resultType": "complete"})
