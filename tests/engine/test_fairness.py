"""A big batch of quick requests shares the scheduler with other sessions' requests, and a batch
of slow ones still runs ``max_in_flight`` members at once (docs/engine.md, "Fairness").

Driven through a Streamable HTTP endpoint in one trio run, as the lean-session tests do: one
session sends a 2025-03-26 batch, another a single call while the batch is being worked on.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec
import trio

from mcp_trio._engine._handlers import STARTING
from mcp_trio.server import Server
from mcp_trio.transports.http.server import HttpRequest, StreamableHTTP
from tests._support.http_server import _Sink

ACCEPT = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "host": "127.0.0.1",
}
_HANDLER = "mcp_trio._engine._handlers.HandlerRunner.handle_request"  # the name of request handler tasks


class _Work:
    """What the tools saw: members finished, and members asleep at once (the most)."""

    def __init__(self) -> None:
        self.done = 0
        self.asleep = 0
        self.most_asleep = 0


def _endpoint(work: _Work) -> StreamableHTTP:
    server = Server("fair", "1")

    @server.tool(structured_output=False)
    async def burn(us: float) -> str:
        """Busy for ``us`` microseconds, never yielding: a quick, CPU-bound member."""
        end = time.perf_counter() + us / 1e6
        while time.perf_counter() < end:
            pass
        work.done += 1
        return "burnt"

    @server.tool(structured_output=False)
    async def nap(seconds: float) -> str:
        work.asleep += 1
        work.most_asleep = max(work.most_asleep, work.asleep)
        try:
            await trio.sleep(seconds)
        finally:
            work.asleep -= 1
        work.done += 1
        return "rested"

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        return text

    return StreamableHTTP(server.serve_session)


def _message(id: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}


async def _open(endpoint: StreamableHTTP) -> dict[str, str]:
    """A 2025-03-26 session (a revision with batches): its request headers."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        },
    }
    sink = _Sink()
    await endpoint.handle(HttpRequest("POST", ACCEPT, msgspec.json.encode(init)), sink)
    assert sink.status == 200, sink.body
    headers = {**ACCEPT, "mcp-session-id": sink.headers["mcp-session-id"]}
    done = _Sink()
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    await endpoint.handle(HttpRequest("POST", headers, initialized), done)
    assert done.status == 202
    return headers


async def _post(endpoint: StreamableHTTP, headers: dict[str, str], body: Any) -> Any:
    sink = _Sink()
    await endpoint.handle(HttpRequest("POST", headers, msgspec.json.encode(body)), sink)
    assert sink.status == 200, sink.body
    return _decode(sink)


def _decode(sink: _Sink) -> Any:
    body = sink.body
    if sink.headers.get("content-type", "").startswith("text/event-stream"):
        [data] = [line[5:] for line in body.split(b"\n") if line.startswith(b"data:")]
        body = data
    return msgspec.json.decode(body)


class _Pending(trio.abc.Instrument):
    """Request handler tasks spawned and not yet run: the most at once."""

    def __init__(self) -> None:
        self.waiting: set[trio.lowlevel.Task] = set()
        self.most = 0

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        if task.name == _HANDLER:
            self.waiting.add(task)
            self.most = max(self.most, len(self.waiting))

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.waiting.discard(task)


async def test_another_sessions_call_is_answered_while_a_big_batch_of_quick_calls_runs() -> None:
    work = _Work()
    endpoint = _endpoint(work)
    members = 600  # (each 0.3 ms: a longer step than ``STEP``)
    pending = _Pending()
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        batcher, other = await _open(endpoint), await _open(endpoint)
        batch = [_message(i, "burn", us=300) for i in range(1, members + 1)]
        replies: list[Any] = []

        async def send_batch() -> None:
            replies.extend(await _post(endpoint, batcher, batch))

        trio.lowlevel.add_instrument(pending)
        try:
            with trio.fail_after(60):
                nursery.start_soon(send_batch)
                while work.done < 50:  # (the batch is under way)
                    await trio.lowlevel.checkpoint()
                asked_at = work.done
                answer = await _post(endpoint, other, _message(1, "echo", text="me too"))
                answered_at = work.done
                while len(replies) < members:
                    await trio.sleep(0.01)
        finally:
            trio.lowlevel.remove_instrument(pending)
        nursery.cancel_scope.cancel()
    assert answer["result"]["content"][0]["text"] == "me too"
    # Before, 64 of the batch's tasks could be ready to run ahead of the call, at each of its
    # trips through the scheduler (82-215 members finished while it waited, over three runs);
    # now at most ``STARTING`` are, and a task's step stops after ``STEP`` seconds (28-34).
    assert answered_at - asked_at < 64, (asked_at, answered_at)
    assert pending.most <= STARTING + 1  # (and the other session's own)
    assert sorted(reply["id"] for reply in replies) == list(range(1, members + 1))
    assert all(reply["result"]["content"][0]["text"] == "burnt" for reply in replies)


async def test_a_batch_of_slow_calls_still_runs_max_in_flight_members_at_once() -> None:
    # Fairness bounds the tasks waiting to run, not those waiting for something: members
    # that sleep each hold a slot, all 64 of them at once, as before.
    work = _Work()
    endpoint = _endpoint(work)
    members = 200
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        headers = await _open(endpoint)
        started = trio.current_time()
        with trio.fail_after(30):
            naps = [_message(i, "nap", seconds=0.3) for i in range(members)]
            replies = await _post(endpoint, headers, naps)
        took = trio.current_time() - started
        nursery.cancel_scope.cancel()
    assert len(replies) == members
    assert all(reply["result"]["content"][0]["text"] == "rested" for reply in replies)
    assert work.most_asleep == 64
    assert took < 4 * 0.3 + 2.0  # (four rounds of 64; eight at a time would take 25)
