"""Tasks: 2025-11-25 ``tasks/*`` and the 2026-07-28 Tasks extension, server side,
driven by the low-level client over the in-memory transport (and once over stdio)."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import msgspec
import pytest
import trio
import trio.testing

from mcp_trio import (
    LocalProtocolError,
    McpError,
    Session,
    open_memory_transport_pair,
    open_session,
    open_stdio_client,
)
from mcp_trio.server import Context, Server
from mcp_trio.server._shared_tasks import TaskSharing
from mcp_trio.server._task_context import RELATED_TASK
from mcp_trio.server._tasks import TaskManager
from mcp_trio.store import Store
from mcp_trio.transports._base import Authorizing
from mcp_trio.types import ext_tasks
from tests._support.paths import PROGRAMS, ROOT

LEGACY = "2025-11-25"
MODERN = "2026-07-28"
EXT = ext_tasks.EXTENSION_ID
LEGACY_CAPS: dict[str, Any] = {"elicitation": {}}
MODERN_CAPS: dict[str, Any] = {"elicitation": {"form": {}}, "extensions": {EXT: {}}}


class Probe:
    """Gates and flags the test tools share with the test."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.step = trio.Event()
        self.release = trio.Event()
        self.cancelled = trio.Event()


def make_server(probe: Probe, tasks: TaskManager | None = None) -> Server:
    server = Server("tasks-test", "1.0", tasks=tasks)

    @server.tool(task_support="optional")
    async def wait(label: str = "done") -> str:
        probe.started.set()
        try:
            await probe.release.wait()
        except BaseException:
            probe.cancelled.set()
            raise
        return label

    @server.tool(task_support="optional")
    async def steps(ctx: Context) -> str:
        await probe.step.wait()
        await ctx.report_progress(1, 2, "halfway")
        await ctx.info("half done")
        await probe.release.wait()
        return "stepped"

    @server.tool(task_support="optional")
    def quick(x: int) -> int:
        return 2 * x

    @server.tool(task_support="optional")
    async def instant(x: int) -> int:
        # (quick's twin in the event loop: on a virtual clock, the time a worker thread takes
        # to answer is time that clock jumps through)
        return 2 * x

    @server.tool(task_support="required")
    def only_task(x: int) -> int:
        return x + 1

    @server.tool
    def plain() -> str:
        return "plain"

    @server.tool(task_support="forbidden")
    def never() -> str:
        return "never"

    @server.tool(task_support="optional")
    def protocol_error() -> str:
        raise McpError(-32001, "backend unavailable", {"retry": True})

    @server.tool(task_support="optional")
    def tool_error() -> str:
        raise RuntimeError("it broke")

    @server.tool(task_support="optional")
    async def ask(ctx: Context) -> str:
        name = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
        color = await ctx.elicit(
            "Your color?", {"type": "object", "properties": {"color": {"type": "string"}}}
        )
        return f"Hello, {name.content['name']} ({color.content['color']})"

    return server


@asynccontextmanager
async def connected(
    server: Server,
    version: str,
    *,
    capabilities: dict[str, Any] | None = None,
    notifications: Callable[..., Any] | None = None,
    request_handlers: dict[str, Any] | None = None,
    name: str = "c",
    extra_methods: tuple[str, ...] = (),
) -> AsyncIterator[Session]:
    """A client session on a fresh connection to ``server``."""
    if capabilities is None:
        capabilities = MODERN_CAPS if version == MODERN else LEGACY_CAPS
    handlers: dict[str, Any] = {}
    if notifications is not None:
        handlers = {
            m: notifications
            for m in (
                "notifications/tasks/status",
                "notifications/progress",
                "notifications/message",
            )
        }
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(
            b,
            role="client",
            info={"name": name, "version": "1"},
            versions=[version],
            capabilities=capabilities,
            notification_handlers=handlers,
            request_handlers=request_handlers or {},
            extra_methods=extra_methods,
        ) as client:
            await client.connect()
            yield client
        nursery.cancel_scope.cancel()


def task_id(result: Any) -> str:
    return result.task.taskId if hasattr(result, "task") else result.taskId


async def call_task(c: Session, tool: str, arguments: dict[str, Any] | None = None, **task: Any) -> str:
    params: dict[str, Any] = {"name": tool, "arguments": arguments or {}}
    if c.protocol_version == LEGACY:
        params["task"] = task
    return task_id(await c.request("tools/call", params))


async def until_status(c: Session, tid: str, *statuses: str) -> Any:
    with trio.fail_after(5):
        while True:
            got = await c.request("tasks/get", {"taskId": tid})
            if got.status in statuses:
                return got
            await trio.sleep(0.01)


async def error_of(c: Session, method: str, params: dict[str, Any]) -> McpError:
    with pytest.raises(McpError) as info:
        await c.request(method, params)
    return info.value


HANDED_TASK = {
    "resultType": "task",
    "taskId": "t",
    "status": "working",
    "createdAt": "2026-01-01T00:00:00Z",
    "lastUpdatedAt": "2026-01-01T00:00:00Z",
    "ttlMs": None,
}


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --------------------------------------------------------------- 2025-11-25


async def test_capabilities_and_tool_listing() -> None:
    server = make_server(Probe())
    async with connected(server, LEGACY) as c:
        assert c.peer_capabilities["tasks"] == {
            "list": {},
            "cancel": {},
            "requests": {"tools": {"call": {}}},
        }
        tools = {t.name: t for t in (await c.request("tools/list")).tools}
        assert tools["wait"].execution.taskSupport == "optional"
        assert tools["only_task"].execution.taskSupport == "required"
        assert tools["never"].execution.taskSupport == "forbidden"
        assert tools["plain"].execution is msgspec.UNSET
    for version in ("2025-06-18", MODERN):
        async with connected(server, version) as c:
            raw = msgspec.to_builtins((await c.request("tools/list")).tools)
            assert all("execution" not in t for t in raw)
    plain = Server("no-tasks")
    plain.tool(lambda: "x", name="x")
    async with connected(plain, LEGACY) as c:
        assert "tasks" not in c.peer_capabilities
    async with connected(plain, MODERN) as c:
        assert "extensions" not in c.peer_capabilities
    with pytest.raises(ValueError):
        plain.tool(lambda: "y", name="y", task_support="sometimes")


async def test_create_poll_and_result() -> None:
    probe = Probe()
    async with connected(make_server(probe), LEGACY) as c:
        created = await c.request(
            "tools/call",
            {"name": "wait", "arguments": {"label": "finished"}, "task": {"ttl": 60000}},
        )
        task = created.task
        assert task.status == "working" and task.ttl == 60000 and task.pollInterval == 1000
        assert len(task.taskId) >= 32
        parse_time(task.createdAt)
        got = await c.request("tasks/get", {"taskId": task.taskId})
        assert got.status == "working" and got.taskId == task.taskId and got.createdAt == task.createdAt
        with trio.fail_after(5):
            await probe.started.wait()
        async with trio.open_nursery() as nursery:
            results: list[Any] = []

            async def wait_result() -> None:
                results.append(await c.request("tasks/result", {"taskId": task.taskId}))

            nursery.start_soon(wait_result)
            await trio.sleep(0.05)
            assert not results  # tasks/result blocks until the task is terminal
            probe.release.set()
        result = results[0]
        assert result["content"] == [{"type": "text", "text": "finished"}]
        assert result["_meta"][RELATED_TASK] == {"taskId": task.taskId}
        done = await c.request("tasks/get", {"taskId": task.taskId})
        assert done.status == "completed"
        # a finished task still answers tasks/result, at once
        again = await c.request("tasks/result", {"taskId": task.taskId})
        assert again["content"] == result["content"]


async def test_status_notifications_and_input_required() -> None:
    probe = Probe()
    statuses: list[tuple[str, str]] = []
    elicited: list[Any] = []
    answer = trio.Event()

    async def on_note(session: Any, method: str, params: Any) -> None:
        if method == "notifications/tasks/status":
            statuses.append((params.taskId, params.status))

    async def on_elicit(ctx: Any, params: Any) -> Any:
        elicited.append(params)
        await answer.wait()
        field = "name" if "name" in params.requestedSchema["properties"] else "color"
        return {"action": "accept", "content": {field: {"name": "Ann", "color": "teal"}[field]}}

    async with connected(
        make_server(probe),
        LEGACY,
        notifications=on_note,
        request_handlers={"elicitation/create": on_elicit},
    ) as c:
        tid = await call_task(c, "ask")
        got = await until_status(c, tid, "input_required")
        assert got.status == "input_required"
        assert elicited[0].meta[RELATED_TASK] == {"taskId": tid}
        answer.set()
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "Hello, Ann (teal)"
        with trio.fail_after(5):
            while (tid, "completed") not in statuses:
                await trio.sleep(0.01)
    mine = [s for t, s in statuses if t == tid]
    assert mine[0] == "input_required" and mine[-1] == "completed"
    assert mine == ["input_required", "working", "input_required", "working", "completed"]
    assert len(elicited) == 2


async def test_progress_and_logs_of_a_task() -> None:
    probe = Probe()
    seen: list[tuple[str, Any]] = []
    on_progress_calls: list[float] = []

    async def on_note(session: Any, method: str, params: Any) -> None:
        seen.append((method, params))

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        on_progress_calls.append(progress)

    async with connected(make_server(probe), LEGACY, notifications=on_note) as c:
        await c.request("logging/setLevel", {"level": "info"})
        created = await c.request("tools/call", {"name": "steps", "task": {}}, on_progress=on_progress)
        tid = created.task.taskId
        probe.step.set()  # the tool reports only after the task was created
        with trio.fail_after(5):
            while len([m for m, _ in seen if m != "notifications/tasks/status"]) < 2:
                await trio.sleep(0.01)
        probe.release.set()
        await c.request("tasks/result", {"taskId": tid})
    progress = next(p for m, p in seen if m == "notifications/progress")
    assert progress.progress == 1 and progress.total == 2 and progress.message == "halfway"
    assert progress.meta[RELATED_TASK] == {"taskId": tid}
    log = next(p for m, p in seen if m == "notifications/message")
    assert log.data == "half done" and log.meta[RELATED_TASK] == {"taskId": tid}
    assert on_progress_calls == []  # the request was answered: progress comes as notifications


async def test_list_is_paginated_and_rejects_bad_cursors() -> None:
    async with connected(make_server(Probe(), TaskManager(page_size=2)), LEGACY) as c:
        created = [await call_task(c, "quick", {"x": i}) for i in range(5)]
        listed: list[str] = []
        cursor = None
        pages = 0
        while True:
            page = await c.request("tasks/list", {"cursor": cursor} if cursor else {})
            pages += 1
            assert len(page.tasks) <= 2
            listed += [t.taskId for t in page.tasks]
            cursor = page.nextCursor if page.nextCursor is not msgspec.UNSET else None
            if cursor is None:
                break
        assert listed == created and pages == 3
        for bad in ("garbage!", "dDo5OTk="):  # not ours; a position we never issued
            assert (await error_of(c, "tasks/list", {"cursor": bad})).code == -32602


async def test_cancel() -> None:
    probe = Probe()
    statuses: list[str] = []

    async def on_note(session: Any, method: str, params: Any) -> None:
        if method == "notifications/tasks/status":
            statuses.append(params.status)

    async with connected(make_server(probe), LEGACY, notifications=on_note) as c:
        tid = await call_task(c, "wait")
        with trio.fail_after(5):
            await probe.started.wait()
        cancelled = await c.request("tasks/cancel", {"taskId": tid})
        assert cancelled.status == "cancelled" and cancelled.taskId == tid
        with trio.fail_after(5):
            await probe.cancelled.wait()  # the running tool was cancelled
        assert (await c.request("tasks/get", {"taskId": tid})).status == "cancelled"
        err = await error_of(c, "tasks/cancel", {"taskId": tid})
        assert err.code == -32602 and "terminal" in err.message
        assert (await error_of(c, "tasks/result", {"taskId": tid})).code == -32602
        done = await call_task(c, "quick", {"x": 1})
        await c.request("tasks/result", {"taskId": done})
        assert (await error_of(c, "tasks/cancel", {"taskId": done})).code == -32602
        with trio.fail_after(5):
            while "cancelled" not in statuses:
                await trio.sleep(0.01)


async def test_protocol_errors() -> None:
    probe = Probe()
    async with connected(make_server(probe), LEGACY) as c:
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            err = await error_of(c, method, {"taskId": "no-such-task"})
            assert err.code == -32602 and "not found" in err.message
        # a task for a tool that does not support tasks, or none for one that needs it
        for tool in ("plain", "never"):
            err = await error_of(c, "tools/call", {"name": tool, "task": {}})
            assert err.code == -32601
        assert (await error_of(c, "tools/call", {"name": "only_task", "arguments": {"x": 1}})).code == -32601
        tid = await call_task(c, "only_task", {"x": 1})
        assert (await c.request("tasks/result", {"taskId": tid}))["content"][0]["text"] == "2"
        # a JSON-RPC error of the tool: the task fails and tasks/result gives the same error
        tid = await call_task(c, "protocol_error")
        err = await error_of(c, "tasks/result", {"taskId": tid})
        assert (err.code, err.message, err.data) == (-32001, "backend unavailable", {"retry": True})
        got = await c.request("tasks/get", {"taskId": tid})
        assert got.status == "failed" and got.statusMessage == "backend unavailable"
        # isError: true makes a 2025-11-25 task fail; tasks/result is still the tool result
        tid = await call_task(c, "tool_error")
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["isError"] is True and "it broke" in result["content"][0]["text"]
        got = await c.request("tasks/get", {"taskId": tid})
        assert got.status == "failed" and "it broke" in got.statusMessage
        # without a task the tools answer as usual
        r = await c.request("tools/call", {"name": "quick", "arguments": {"x": 4}})
        assert r.content[0].text == "8"


async def test_required_tool_runs_inline_before_tasks_existed() -> None:
    async with connected(make_server(Probe()), "2025-06-18") as c:
        r = await c.request("tools/call", {"name": "only_task", "arguments": {"x": 1}})
        assert r.content[0].text == "2"


async def test_task_is_ignored_by_a_server_without_the_capability() -> None:
    server = Server("no-tasks")

    @server.tool
    def hello() -> str:
        return "hi"

    async with connected(server, LEGACY) as c:
        r = await c.request("tools/call", {"name": "hello", "task": {"ttl": 1000}})
        assert r.content[0].text == "hi"  # the client core decodes the plain answer
        assert (await error_of(c, "tasks/get", {"taskId": "x"})).code == -32602
        with pytest.raises(LocalProtocolError):  # not advertised: the core will not send it
            await c.request("tasks/list")


async def test_tasks_are_scoped_to_their_session() -> None:
    probe = Probe()
    server = make_server(probe)
    async with connected(server, LEGACY) as alice, connected(server, LEGACY) as bob:
        tid = await call_task(alice, "wait")
        for method in ("tasks/get", "tasks/result", "tasks/cancel"):
            err = await error_of(bob, method, {"taskId": tid})
            assert err.code == -32602 and "not found" in err.message
        assert (await bob.request("tasks/list")).tasks == []
        assert [t.taskId for t in (await alice.request("tasks/list")).tasks] == [tid]
        assert (await alice.request("tasks/get", {"taskId": tid})).status == "working"


async def test_ending_the_session_cancels_its_tasks() -> None:
    probe = Probe()
    server = make_server(probe)
    async with connected(server, LEGACY) as c:
        await call_task(c, "wait")
        with trio.fail_after(5):
            await probe.started.wait()
    with trio.fail_after(5):
        await probe.cancelled.wait()
    assert server.tasks._tasks == {}  # nothing kept for a session that is gone


async def test_ttl(autojump_clock: trio.testing.MockClock) -> None:
    probe = Probe()
    manager = TaskManager(default_ttl_ms=30_000, max_ttl_ms=60_000)
    async with connected(make_server(probe, manager), LEGACY) as c:
        created = (await c.request("tools/call", {"name": "quick", "arguments": {"x": 1}, "task": {}})).task
        assert created.ttl == 30_000  # the default
        capped = (
            await c.request("tools/call", {"name": "quick", "arguments": {"x": 1}, "task": {"ttl": 10**9}})
        ).task
        assert capped.ttl == 60_000  # capped
        short = await call_task(c, "instant", {"x": 2}, ttl=1000)
        running = await call_task(c, "wait", ttl=2000)
        done = await until_status(c, short, "completed")
        await trio.sleep(0.5)
        assert (await c.request("tasks/get", {"taskId": short})).status == "completed"
        await trio.sleep(0.6)  # 1.1 s after creation: the completed task is gone
        err = await error_of(c, "tasks/get", {"taskId": short})
        assert err.code == -32602
        assert short not in [t.taskId for t in (await c.request("tasks/list")).tasks]
        await trio.sleep(1)  # the running one outlived its ttl: cancelled and gone
        with trio.fail_after(1):
            await probe.cancelled.wait()
        assert (await error_of(c, "tasks/result", {"taskId": running})).code == -32602
        # timestamps follow the trio clock
        assert (parse_time(done.lastUpdatedAt) - parse_time(done.createdAt)).total_seconds() < 1
        assert created.taskId in [t.taskId for t in (await c.request("tasks/list")).tasks]


async def test_limit_on_running_tasks() -> None:
    probe = Probe()
    async with connected(make_server(probe, TaskManager(max_tasks=2)), LEGACY) as c:
        await call_task(c, "wait")
        await call_task(c, "wait")
        err = await error_of(c, "tools/call", {"name": "wait", "task": {}})
        assert err.code == -32600 and "Too many tasks" in err.message
        probe.release.set()
        for t in (await c.request("tasks/list")).tasks:
            await c.request("tasks/result", {"taskId": t.taskId})
        await call_task(c, "quick", {"x": 1})  # room again


# ------------------------------------------------------ 2026-07-28 extension


async def test_extension_create_poll_complete() -> None:
    probe = Probe()
    async with connected(make_server(probe), MODERN) as c:
        assert c.peer_capabilities["extensions"] == {EXT: {}}
        created = await c.request("tools/call", {"name": "wait", "arguments": {"label": "later"}})
        assert isinstance(created, ext_tasks.CreateTaskResult)
        assert created.resultType == "task" and created.status == "working"
        assert created.ttlMs == 3_600_000 and created.pollIntervalMs == 1000
        got = await c.request("tasks/get", {"taskId": created.taskId})
        assert got.resultType == "complete" and got.status == "working" and got.result is msgspec.UNSET
        probe.release.set()
        done = await until_status(c, created.taskId, "completed")
        assert done.result["content"] == [{"type": "text", "text": "later"}]
        # a required tool too; a forbidden or undeclared one answers inline
        tid = task_id(await c.request("tools/call", {"name": "only_task", "arguments": {"x": 1}}))
        assert (await until_status(c, tid, "completed")).result["content"][0]["text"] == "2"
        r = await c.request("tools/call", {"name": "never"})
        assert r.content[0].text == "never"
        r = await c.request("tools/call", {"name": "plain"})
        assert r.content[0].text == "plain"


async def test_extension_never_gives_a_task_to_a_client_without_it() -> None:
    probe = Probe()
    async with connected(make_server(probe), MODERN, capabilities={}, extra_methods=("tasks/get",)) as c:
        r = await c.request("tools/call", {"name": "quick", "arguments": {"x": 3}})
        assert r.content[0].text == "6"  # optional: runs inline
        err = await error_of(c, "tools/call", {"name": "only_task", "arguments": {"x": 1}})
        assert err.code == -32021
        assert err.data == {"requiredCapabilities": {"extensions": {EXT: {}}}}
        err = await error_of(c, "tasks/get", {"taskId": "whatever"})
        assert err.code == -32021 and err.data["requiredCapabilities"]["extensions"] == {EXT: {}}


async def test_extension_input_requests_and_update() -> None:
    probe = Probe()
    async with connected(make_server(probe), MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "ask"}))
        got = await until_status(c, tid, "input_required")
        [(first, request)] = got.inputRequests.items()
        assert request.params.message == "Your name?"
        assert msgspec.to_builtins(request)["method"] == "elicitation/create"
        again = await c.request("tasks/get", {"taskId": tid})
        assert list(again.inputRequests) == [first]  # the same request until answered
        # a response that does not fit the request's result type is refused
        err = await error_of(c, "tasks/update", {"taskId": tid, "inputResponses": {first: {"action": 7}}})
        assert err.code == -32602
        # unknown keys are ignored; the right one is accepted
        ack = await c.request(
            "tasks/update",
            {
                "taskId": tid,
                "inputResponses": {
                    "nope": {"action": "decline"},
                    first: {"action": "accept", "content": {"name": "Bo"}},
                },
            },
        )
        assert ack.resultType == "complete"
        got = await until_status(c, tid, "input_required")
        while first in got.inputRequests:  # eventually consistent: the next request replaces it
            got = await until_status(c, tid, "input_required")
        [(second, request)] = got.inputRequests.items()
        assert second != first and request.params.message == "Your color?"
        await c.request(
            "tasks/update",
            {
                "taskId": tid,
                "inputResponses": {
                    first: {"action": "accept", "content": {"name": "ignored"}},  # already answered
                    second: {"action": "accept", "content": {"color": "red"}},
                },
            },
        )
        done = await until_status(c, tid, "completed")
        assert done.result["content"][0]["text"] == "Hello, Bo (red)"
        assert done.inputRequests is msgspec.UNSET
        assert (await error_of(c, "tasks/update", {"taskId": "nope", "inputResponses": {}})).code == -32602


async def test_extension_cancel() -> None:
    probe = Probe()
    async with connected(make_server(probe), MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "wait"}))
        with trio.fail_after(5):
            await probe.started.wait()
        ack = await c.request("tasks/cancel", {"taskId": tid})
        assert ack.resultType == "complete"
        with trio.fail_after(5):
            await probe.cancelled.wait()
        got = await c.request("tasks/get", {"taskId": tid})
        assert got.status == "cancelled"
        await c.request("tasks/cancel", {"taskId": tid})  # terminal: still acknowledged
        assert (await c.request("tasks/get", {"taskId": tid})).status == "cancelled"
        assert (await error_of(c, "tasks/cancel", {"taskId": "nope"})).code == -32602
        assert (await error_of(c, "tasks/get", {"taskId": "nope"})).code == -32602


async def test_extension_failed_and_tool_errors() -> None:
    async with connected(make_server(Probe()), MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "protocol_error"}))
        got = await until_status(c, tid, "failed")
        assert got.error.code == -32001 and got.error.message == "backend unavailable"
        assert got.error.data == {"retry": True} and got.statusMessage == "backend unavailable"
        # a tool error is a completed task whose result has isError: true
        tid = task_id(await c.request("tools/call", {"name": "tool_error"}))
        got = await until_status(c, tid, "completed", "failed")
        assert got.status == "completed" and got.result["isError"] is True


async def test_extension_progress_is_the_status_message_and_logs_are_not_sent() -> None:
    probe = Probe()
    seen: list[str] = []

    async def on_note(session: Any, method: str, params: Any) -> None:
        seen.append(method)

    async with connected(make_server(probe), MODERN, notifications=on_note) as c:
        tid = task_id(
            await c.request(
                "tools/call",
                {"name": "steps", "_meta": {"io.modelcontextprotocol/logLevel": "debug"}},
            )
        )
        probe.step.set()
        with trio.fail_after(5):
            while (await c.request("tasks/get", {"taskId": tid})).statusMessage != "halfway":
                await trio.sleep(0.01)
        probe.release.set()
        await until_status(c, tid, "completed")
        await trio.sleep(0.05)
    assert seen == []


async def test_extension_tasks_are_scoped_by_owner() -> None:
    probe = Probe()

    def owner(ctx: Any) -> Any:
        return ctx.meta.get("io.modelcontextprotocol/clientInfo", {}).get("name")

    server = make_server(probe, TaskManager(owner=owner))
    async with connected(server, MODERN, name="alice") as alice:
        tid = task_id(await alice.request("tools/call", {"name": "wait"}))
        async with connected(server, MODERN, name="bob") as bob:
            for method in ("tasks/get", "tasks/cancel"):
                assert (await error_of(bob, method, {"taskId": tid})).code == -32602
            err = await error_of(bob, "tasks/update", {"taskId": tid, "inputResponses": {}})
            assert err.code == -32602
        async with connected(server, MODERN, name="alice") as alice_again:
            # not tied to a session: the same owner on another connection sees it
            assert (await alice_again.request("tasks/get", {"taskId": tid})).status == "working"
        # and a 2025-11-25 session of the same owner does not (another protocol)
        async with connected(server, LEGACY, name="alice") as legacy:
            assert (await error_of(legacy, "tasks/get", {"taskId": tid})).code == -32602


class _Authenticated(trio.abc.Channel[Any], Authorizing):
    """The server's end of a connection whose requests all carry ``auth`` (what an
    authorization layer in front of a transport provides as ``ctx.auth``)."""

    def __init__(self, inner: Any, auth: Any) -> None:
        self.inner, self.auth = inner, auth

    def auth_for(self, request_id: Any) -> Any:
        return self.auth

    async def send(self, value: Any) -> None:
        await self.inner.send(value)

    async def receive(self) -> Any:
        return await self.inner.receive()

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def connected_as(server: Server, version: str, auth: Any) -> AsyncIterator[Session]:
    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, _Authenticated(a, auth))
        caps = MODERN_CAPS if version == MODERN else LEGACY_CAPS
        info = {"name": "c", "version": "1"}
        async with open_session(b, role="client", info=info, versions=[version], capabilities=caps) as client:
            await client.connect()
            yield client
        nursery.cancel_scope.cancel()


async def test_extension_tasks_are_bound_to_the_authorization_context() -> None:
    """ "When an authorization context is provided, receivers MUST bind tasks to said context":
    with no owner callback, the verified token's issuer, subject and client own the task."""
    from mcp_trio.auth.server import AccessToken

    probe = Probe()
    server = make_server(probe)
    alice = AccessToken(subject="alice", client_id="app", issuer="https://as.example")
    async with connected_as(server, MODERN, alice) as first:
        tid = task_id(await first.request("tools/call", {"name": "wait"}))
        others = [
            AccessToken(subject="bob", client_id="app", issuer="https://as.example"),
            AccessToken(subject="alice", client_id="other-app", issuer="https://as.example"),
        ]
        for other in others:
            async with connected_as(server, MODERN, other) as stranger:
                for method in ("tasks/get", "tasks/cancel"):
                    assert (await error_of(stranger, method, {"taskId": tid})).code == -32602
                err = await error_of(stranger, "tasks/update", {"taskId": tid, "inputResponses": {}})
                assert err.code == -32602
        async with connected_as(server, MODERN, alice) as again:  # another connection, same context
            assert (await again.request("tasks/get", {"taskId": tid})).status == "working"


async def test_extension_without_owner_task_ids_are_bearer_tokens() -> None:
    probe = Probe()
    server = make_server(probe)
    async with connected(server, MODERN, name="alice") as alice:
        tid = task_id(await alice.request("tools/call", {"name": "wait"}))
        async with connected(server, MODERN, name="bob") as bob:
            assert (await bob.request("tasks/get", {"taskId": tid})).status == "working"


async def test_extension_task_dies_with_its_connection_unless_the_manager_runs() -> None:
    probe = Probe()
    server = make_server(probe)
    async with connected(server, MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "wait"}))
    with trio.fail_after(5):
        await probe.cancelled.wait()
    async with connected(server, MODERN) as c:
        got = await c.request("tasks/get", {"taskId": tid})
        assert got.status == "cancelled" and got.statusMessage

    probe = Probe()
    server = make_server(probe)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.tasks.run)
        async with connected(server, MODERN) as c:
            tid = task_id(await c.request("tools/call", {"name": "wait", "arguments": {"label": "kept"}}))
        async with connected(server, MODERN) as c:
            assert (await c.request("tasks/get", {"taskId": tid})).status == "working"
            probe.release.set()
            assert (await until_status(c, tid, "completed")).result["content"][0]["text"] == "kept"
        nursery.cancel_scope.cancel()
    assert not probe.cancelled.is_set()


async def test_extension_ttl(autojump_clock: trio.testing.MockClock) -> None:
    probe = Probe()
    async with connected(make_server(probe, TaskManager(default_ttl_ms=5000)), MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "wait"}))
        await trio.sleep(4)
        assert (await c.request("tasks/get", {"taskId": tid})).status == "working"
        await trio.sleep(2)
        err = await error_of(c, "tasks/get", {"taskId": tid})
        assert err.code == -32602
        with trio.fail_after(1):
            await probe.cancelled.wait()


async def test_core_never_sends_a_task_to_a_client_without_the_extension() -> None:
    """Even a low-level handler cannot answer with a task the client did not ask to receive."""

    async def call_tool(ctx: Any, params: Any) -> Any:
        return HANDED_TASK

    a, b = open_memory_transport_pair()
    async with (
        trio.open_nursery() as nursery,
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}, "extensions": {EXT: {}}},
            request_handlers={"tools/call": call_tool},
        ),
        open_session(b, role="client", info={"name": "c", "version": "1"}, versions=[MODERN]) as c,
    ):
        await c.connect()
        err = await error_of(c, "tools/call", {"name": "x"})
        assert err.code == -32603 and EXT in err.message
        nursery.cancel_scope.cancel()


async def test_core_decodes_a_task_for_a_client_with_the_extension() -> None:
    async def call_tool(ctx: Any, params: Any) -> Any:
        return HANDED_TASK

    a, b = open_memory_transport_pair()
    async with (
        trio.open_nursery() as nursery,
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}, "extensions": {EXT: {}}},
            request_handlers={"tools/call": call_tool},
        ),
        open_session(
            b,
            role="client",
            info={"name": "c", "version": "1"},
            versions=[MODERN],
            capabilities={"extensions": {EXT: {}}},
        ) as c,
    ):
        await c.connect()
        r = await c.request("tools/call", {"name": "x"})
        assert isinstance(r, ext_tasks.CreateTaskResult) and r.ttlMs is None
        nursery.cancel_scope.cancel()


# ------------------------------------ asking first, then a task (deferred)

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}}
SEAT_FORM = {"type": "object", "properties": {"seat": {"type": "string"}}}


def deferring_server(runs: list[Any]) -> Server:
    server = Server("deferring", "1.0")

    @server.tool(task_support="required", defer_task=True)
    async def book(city: str, ctx: Context) -> str:
        runs.append("start")
        who = await ctx.elicit("Who travels?", NAME_FORM, input_key="who")
        as_task = await ctx.start_task()
        runs.append(("task", as_task))
        seat = await ctx.elicit("Which seat?", SEAT_FORM, input_key="seat")
        return f"{who.content['name']} to {city}, seat {seat.content['seat']}"

    @server.tool(task_support="optional", defer_task=True)
    async def maybe(ctx: Context) -> str:
        who = await ctx.elicit("Who?", NAME_FORM, input_key="who")
        as_task = await ctx.start_task()
        return f"{who.content['name']}: {'task' if as_task else 'inline'}"

    @server.tool(task_support="optional", defer_task=True)
    async def quick_answer(ctx: Context) -> str:
        return "answered before any task"

    @server.tool(task_support="optional")
    async def not_deferred(ctx: Context) -> str:
        return f"in a task: {await ctx.start_task()}"

    return server


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


async def test_extension_deferred_tool_asks_first_then_runs_as_a_task() -> None:
    runs: list[Any] = []
    async with connected(deferring_server(runs), MODERN) as c:
        params: dict[str, Any] = {"name": "book", "arguments": {"city": "Oslo"}}
        first = await c.request("tools/call", params)
        assert first.resultType == "input_required" and list(first.inputRequests) == ["who"]
        assert runs == ["start"]
        created = await c.request(
            "tools/call",
            {**params, "inputResponses": {"who": accept(name="Ada")}, "requestState": first.requestState},
        )
        assert isinstance(created, ext_tasks.CreateTaskResult) and created.resultType == "task"
        assert "requestState" not in msgspec.to_builtins(created)
        # in the task the tool starts over: "who" is answered at once, "seat" is new
        got = await until_status(c, created.taskId, "input_required")
        assert list(got.inputRequests) == ["seat"]
        assert runs == ["start", "start", "start", ("task", True)]
        await c.request(
            "tasks/update",
            {"taskId": created.taskId, "inputResponses": {"seat": accept(seat="12A")}},
        )
        done = await until_status(c, created.taskId, "completed")
        assert done.result["content"][0]["text"] == "Ada to Oslo, seat 12A"


async def test_deferred_tool_without_a_task() -> None:
    runs: list[Any] = []
    server = deferring_server(runs)
    # the client does not declare the extension: an optional tool stays inline
    async with connected(server, MODERN, capabilities={"elicitation": {}}) as c:
        first = await c.request("tools/call", {"name": "maybe"})
        assert list(first.inputRequests) == ["who"]
        r = await c.request(
            "tools/call",
            {
                "name": "maybe",
                "inputResponses": {"who": accept(name="Bo")},
                "requestState": first.requestState,
            },
        )
        assert r.content[0].text == "Bo: inline"
        err = await error_of(c, "tools/call", {"name": "book", "arguments": {"city": "x"}})
        assert err.code == -32021
    async with connected(server, MODERN) as c:
        # a deferred tool that never calls start_task answers inline
        r = await c.request("tools/call", {"name": "quick_answer"})
        assert r.content[0].text == "answered before any task"
        # start_task in a tool that is not deferred: it already runs as a task
        tid = task_id(await c.request("tools/call", {"name": "not_deferred"}))
        done = await until_status(c, tid, "completed")
        assert done.result["content"][0]["text"] == "in a task: True"
    with pytest.raises(ValueError, match="defer_task"):
        server.tool(lambda: "x", name="bad", defer_task=True)


async def test_deferred_tool_in_2025_11_25_runs_wholly_as_the_requested_task() -> None:
    runs: list[Any] = []

    async def answer(ctx: Any, params: Any) -> Any:
        return accept(name="Cy")

    async with connected(
        deferring_server(runs), LEGACY, request_handlers={"elicitation/create": answer}
    ) as c:
        tid = await call_task(c, "maybe")
        result = await c.request("tasks/result", {"taskId": tid})
        assert result["content"][0]["text"] == "Cy: task"
        r = await c.request("tools/call", {"name": "maybe"})  # no task asked for: inline
        assert r.content[0].text == "Cy: inline"


async def test_extension_task_input_keys_named_by_the_tool() -> None:
    server = Server("keys", "1.0")

    @server.tool(task_support="optional")
    async def twice(ctx: Context) -> str:
        a = await ctx.elicit("one?", NAME_FORM, input_key="name")
        b = await ctx.elicit("two?", NAME_FORM, input_key="name")
        return f"{a.content['name']} {b.content['name']}"

    async with connected(server, MODERN) as c:
        tid = task_id(await c.request("tools/call", {"name": "twice"}))
        got = await until_status(c, tid, "input_required")
        assert list(got.inputRequests) == ["name"]
        await c.request("tasks/update", {"taskId": tid, "inputResponses": {"name": accept(name="a")}})
        got = await until_status(c, tid, "input_required")
        while "name" in got.inputRequests:
            got = await until_status(c, tid, "input_required")
        (second,) = got.inputRequests
        assert second == "name#2"  # keys never repeat within a task
        await c.request("tasks/update", {"taskId": tid, "inputResponses": {second: accept(name="b")}})
        done = await until_status(c, tid, "completed")
        assert done.result["content"][0]["text"] == "a b"


# ------------------------------------------------------- routing headers


def test_mcp_name_of_task_requests_is_checked() -> None:
    from mcp_trio.transports.http._headers import check_request_headers

    base = {"mcp-protocol-version": MODERN}
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        params = {"taskId": "abc"}
        headers = {**base, "mcp-method": method}
        assert check_request_headers({**headers, "mcp-name": "abc"}, method, params, MODERN) is None
        problem = check_request_headers({**headers, "mcp-name": "xyz"}, method, params, MODERN)
        assert problem is not None and "Mcp-Name" in problem
        # the routing header is checked when it is sent, not yet required
        assert check_request_headers(headers, method, params, MODERN) is None
    # still required where the core specification asks for it
    problem = check_request_headers({**base, "mcp-method": "tools/call"}, "tools/call", {"name": "t"}, MODERN)
    assert problem == "the Mcp-Name header is missing"


# -------------------------------------------------------------------- stdio


@pytest.mark.parametrize("version", [LEGACY, MODERN])
async def test_tasks_over_stdio(version: str) -> None:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    command = [sys.executable, str(PROGRAMS / "tasks_server.py")]
    caps = MODERN_CAPS if version == MODERN else LEGACY_CAPS
    with trio.fail_after(20):
        async with (
            open_stdio_client(command, env=env, stderr=subprocess.DEVNULL) as proc,
            open_session(
                proc.channel,
                role="client",
                info={"name": "t", "version": "1"},
                versions=[version],
                capabilities=caps,
            ) as c,
        ):
            await c.connect()
            tid = await call_task(c, "count", {"n": 3})
            if version == LEGACY:
                result = await c.request("tasks/result", {"taskId": tid})
                assert result["content"][0]["text"] == "counted to 3"
                assert [t.taskId for t in (await c.request("tasks/list")).tasks] == [tid]
            else:
                done = await until_status(c, tid, "completed")
                assert done.result["content"][0]["text"] == "counted to 3"


# ---------------------------------------------------------- Streamable HTTP


async def test_extension_tasks_over_http_outlive_each_request() -> None:
    """Each stateless POST is served by a session of its own: the manager hosts the task."""
    import httpx2 as httpx

    from mcp_trio.transports.http.server import ASGIApp, StreamableHTTP, serve_hypercorn

    probe = Probe()
    server = make_server(probe)
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": MODERN,
    }

    def routing(method: str, params: dict[str, Any]) -> dict[str, str]:
        name = params.get("name", params.get("taskId"))
        return {"mcp-method": method, **({"mcp-name": name} if name else {})}

    async def post(client: Any, url: str, id: int, method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": id, "method": method, "params": {**params, "_meta": meta}}
        r = await client.post(url, headers={**headers, **routing(method, params)}, json=body)
        assert r.status_code == 200, r.text
        return r.json()["result"]

    endpoint = StreamableHTTP(server.serve_session)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            await nursery.start(server.tasks.run)
            await nursery.start(endpoint.run)
            urls = await nursery.start(serve_hypercorn, ASGIApp(endpoint), "127.0.0.1", 0)
            url = urls[0] + "/mcp"
            async with httpx.AsyncClient() as client:
                created = await post(
                    client, url, 1, "tools/call", {"name": "wait", "arguments": {"label": "http"}}
                )
                assert created["resultType"] == "task"
                got = await post(client, url, 2, "tasks/get", {"taskId": created["taskId"]})
                assert got["status"] == "working"
                # Mcp-Name must name the task the body names
                body = {
                    "jsonrpc": "2.0",
                    "id": 9,
                    "method": "tasks/get",
                    "params": {"taskId": created["taskId"], "_meta": meta},
                }
                wrong = {**headers, "mcp-method": "tasks/get", "mcp-name": "another-task"}
                r = await client.post(url, headers=wrong, json=body)
                assert r.status_code == 400 and r.json()["error"]["code"] == -32020
                probe.release.set()
                while got["status"] == "working":
                    await trio.sleep(0.01)
                    got = await post(client, url, 3, "tasks/get", {"taskId": created["taskId"]})
                assert got["status"] == "completed" and got["result"]["content"][0]["text"] == "http"
            nursery.cancel_scope.cancel()
    assert not probe.cancelled.is_set()


async def test_a_stateless_http_server_offers_no_session_tasks() -> None:
    """Stateless Streamable HTTP keeps no session, so no 2025-11-25 task could be
    found again: the capability is not advertised and ``task`` is ignored (the
    call answers normally).  Extension tasks (held by the manager) still work."""
    import httpx2 as httpx

    from mcp_trio.transports.http.server import StreamableHTTP, serve_h11

    server = make_server(Probe())
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    info = {"name": "raw", "version": "1"}

    async def send(client: Any, url: str, body: dict[str, Any], **extra: str) -> Any:
        return await client.post(url, headers={**headers, **extra}, json=body)

    async def post(client: Any, url: str, method: str, params: dict[str, Any], **extra: str) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        r = await send(client, url, body, **extra)
        assert r.status_code == 200, r.text
        return r.json()["result"]

    async def start(endpoint: StreamableHTTP) -> str:
        await nursery.start(endpoint.run)
        return str((await nursery.start(serve_h11, endpoint, "127.0.0.1", 0))[0]) + "/mcp"

    init = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": info}
    legacy = {"mcp-protocol-version": LEGACY}
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {EXT: {}}},
        "io.modelcontextprotocol/clientInfo": info,
    }

    def modern(method: str, name: str | None = None) -> dict[str, str]:
        routing = {"mcp-protocol-version": MODERN, "mcp-method": method}
        return {**routing, "mcp-name": name} if name else routing

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery, httpx.AsyncClient() as client:
            await nursery.start(server.tasks.run)
            url = await start(StreamableHTTP(server.serve_session, stateless=True))
            result = await post(client, url, "initialize", init)
            assert "tasks" not in result["capabilities"]
            for name, want in (("quick", "4"), ("only_task", "3")):
                params = {"name": name, "arguments": {"x": 2}, "task": {"ttl": 60_000}}
                result = await post(client, url, "tools/call", params, **legacy)
                assert "task" not in result and result["content"][0]["text"] == want
            # 2026-07-28: the Tasks extension is served (the manager holds its tasks)
            discover = modern("server/discover")
            found = await post(client, url, "server/discover", {"_meta": meta}, **discover)
            assert EXT in found["capabilities"]["extensions"]
            call = {"name": "quick", "arguments": {"x": 5}, "_meta": meta}
            created = await post(client, url, "tools/call", call, **modern("tools/call", "quick"))
            assert created["resultType"] == "task"
            task = {"taskId": created["taskId"], "_meta": meta}
            got = {"status": "working"}
            while got["status"] == "working":
                routing = modern("tasks/get", task["taskId"])
                got = await post(client, url, "tasks/get", task, **routing)
            assert got["status"] == "completed" and got["result"]["content"][0]["text"] == "10"
            # a server that keeps sessions still offers them
            url = await start(StreamableHTTP(server.serve_session))
            opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}
            r = await send(client, url, opening)
            assert "requests" in r.json()["result"]["capabilities"]["tasks"]
            session = {**legacy, "mcp-session-id": r.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await send(client, url, initialized, **session)
            params = {"name": "quick", "arguments": {"x": 2}, "task": {"ttl": 60_000}}
            assert "taskId" in (await post(client, url, "tools/call", params, **session))["task"]
            nursery.cancel_scope.cancel()


class _Leased:
    """A task of another worker's kind as the lease renewal sees it."""

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.shared_owner = "w0"
        self.terminal = False


async def test_the_lease_renewal_keeps_no_task_alive_between_rounds(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The renewal goes over the worker's tasks every lease / 3; a task gone between two
    # rounds is freed at once, not a round later with its result.
    manager = TaskManager()
    sharing = TaskSharing(manager, Store.in_memory(), "w0", lease=3.0)
    task = _Leased("t1")
    manager._tasks["t1"] = task  # type: ignore[assignment]
    gone = weakref.ref(task)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sharing._renew)
        await trio.sleep(1.5)  # (one round went over it; the next is due at 2 s)
        del manager._tasks["t1"], task
        gc.collect()
        assert gone() is None
        nursery.cancel_scope.cancel()
