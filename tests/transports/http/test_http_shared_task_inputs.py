"""An extension task asking the client questions, followed from another worker: its
``tasks/get`` there lists the outstanding ``inputRequests`` (from the shared record), and
answers given there with ``tasks/update`` reach it."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest
import trio

from mcp_trio.server import Context, Server
from mcp_trio.types._versions import TASKS_EXTENSION
from tests._support.http_server import MODERN_META, rpc
from tests._support.http_shared import modern_headers, workers

pytestmark = pytest.mark.trio


SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


def add_asking_tool(servers: list[Server]) -> None:
    """A task-capable tool on every worker asking two questions at once."""
    for server in servers:

        @server.tool(name="two_questions", task_support="optional")
        async def two_questions(ctx: Context) -> str:
            answers: dict[str, Any] = {}

            async def ask(key: str) -> None:
                answers[key] = (await ctx.elicit(f"{key}?", SCHEMA, input_key=key)).content["ok"]

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ask, "first")
                nursery.start_soon(ask, "second")
            return f"first={answers['first']} second={answers['second']}"


def modern(id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    capabilities = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
    meta = {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": capabilities}
    return rpc(id, method, {**params, "_meta": meta})


async def poll(client: httpx.AsyncClient, url: str, task_id: str, until: Any) -> dict[str, Any]:
    """``tasks/get`` on ``url`` until ``until(task)``: the task."""
    body = modern(2, "tasks/get", {"taskId": task_id})
    with trio.fail_after(5):
        while True:
            r = await client.post(url, headers=modern_headers("tasks/get", task_id), json=body)
            task: dict[str, Any] = r.json()["result"]
            if until(task):
                return task
            await trio.sleep(0.02)


async def test_another_worker_lists_and_takes_the_input_requests(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        add_asking_tool(servers)
        async with httpx.AsyncClient(timeout=5) as client:
            body = modern(1, "tools/call", {"name": "two_questions", "arguments": {}})
            r = await client.post(urls[0], headers=modern_headers("tools/call", "two_questions"), json=body)
            task_id = r.json()["result"]["taskId"]
            task = await poll(client, urls[1], task_id, lambda t: len(t.get("inputRequests", ())) == 2)
            assert task["status"] == "input_required"
            asks = task["inputRequests"]
            assert {key: ask["method"] for key, ask in asks.items()} == {
                "first": "elicitation/create",
                "second": "elicitation/create",
            }
            assert asks["first"]["params"]["message"] == "first?"
            # one answered on the other worker: the other one is still asked for, there
            answer = {"first": {"action": "accept", "content": {"ok": True}}}
            update = modern(3, "tasks/update", {"taskId": task_id, "inputResponses": answer})
            r = await client.post(urls[1], headers=modern_headers("tasks/update", task_id), json=update)
            assert "error" not in r.json()
            task = await poll(
                client, urls[1], task_id, lambda t: set(t.get("inputRequests", ())) == {"second"}
            )
            assert task["status"] == "input_required"
            answer = {"second": {"action": "accept", "content": {"ok": False}}}
            update = modern(4, "tasks/update", {"taskId": task_id, "inputResponses": answer})
            r = await client.post(urls[1], headers=modern_headers("tasks/update", task_id), json=update)
            task = await poll(client, urls[1], task_id, lambda t: t["status"] == "completed")
            assert task["result"]["content"] == [{"type": "text", "text": "first=True second=False"}]
            assert "inputRequests" not in task


class SlowTaskWrites:
    """A store whose task records take 0.2 s to write (the rest as the store it wraps)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.tasks = _SlowTasks(store.tasks)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _SlowTasks:
    def __init__(self, tasks: Any) -> None:
        self._tasks = tasks

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tasks, name)

    async def update(self, record: Any) -> bool:
        await trio.sleep(0.2)
        return bool(await self._tasks.update(record))


async def get_task(client: httpx.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    body = modern(5, "tasks/get", {"taskId": task_id})
    r = await client.post(url, headers=modern_headers("tasks/get", task_id), json=body)
    task: dict[str, Any] = r.json()["result"]
    return task


@pytest.mark.parametrize("answered_on", [0, 1])
async def test_once_tasks_update_is_answered_every_worker_sees_the_key_taken(
    store_url: str | None, answered_on: int
) -> None:
    """The answer to ``tasks/update`` comes once the record no longer lists the answered key,
    whichever worker took it: the next ``tasks/get``, on any worker, does not ask for it again."""
    async with workers(3, store_url=store_url) as (urls, servers, _, _state):
        add_asking_tool(servers)
        async with httpx.AsyncClient(timeout=5) as client:
            body = modern(1, "tools/call", {"name": "two_questions", "arguments": {}})
            r = await client.post(urls[0], headers=modern_headers("tools/call", "two_questions"), json=body)
            task_id = r.json()["result"]["taskId"]
            await poll(client, urls[2], task_id, lambda t: len(t.get("inputRequests", ())) == 2)
            sharing = servers[0].tasks.sharing
            assert sharing is not None
            sharing.store = SlowTaskWrites(sharing.store)  # (a store as slow to write as a far one)
            answer = {"first": {"action": "accept", "content": {"ok": True}}}
            update = modern(3, "tasks/update", {"taskId": task_id, "inputResponses": answer})
            url = urls[answered_on]
            r = await client.post(url, headers=modern_headers("tasks/update", task_id), json=update)
            assert "error" not in r.json()
            task = await get_task(client, urls[2], task_id)  # (at once: no polling)
            assert task["status"] == "input_required" and set(task["inputRequests"]) == {"second"}
