"""Property tests (hypothesis) of the core and the engine.

* batching: any mix of requests and notifications in a batch gets exactly one
  answer per request and none for notifications, whatever order the handlers
  finish in and whichever of them are cancelled;
* id uniqueness: the ids a session sends never repeat, under concurrency and
  cancellation;
* no input crashes the core: arbitrary bytes give events or errors, never an
  exception.
"""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio import Frame, open_memory_transport_pair, open_session
from mcp_trio._core import Outgoing, RequestReceived, SessionCore
from mcp_trio.types import _versions
from tests._support.engine import pipe_pair

BATCH_VERSION = next(v for v in _versions.SUPPORTED_VERSIONS if _versions.supports_batching(v))
CAPS = {"tools": {}, "prompts": {}, "resources": {}}


def ready_server(version: str) -> SessionCore:
    srv = SessionCore("server", info={"name": "s", "version": "1"}, capabilities=CAPS, versions=[version])
    srv.receive(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": version,
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            }
        ).encode()
    )
    srv.receive(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    return srv


REQUESTS = [
    ("tools/list", None),
    ("prompts/list", {}),
    ("ping", None),
    ("resources/read", {"uri": "file:///x"}),
    ("tools/call", {"name": 1}),  # invalid params: answered by the core
    ("nope/nope", None),  # unknown: answered by the core
]
NOTIFICATIONS = [
    ("notifications/roots/list_changed", None),
    ("notifications/cancelled", {"requestId": 12345}),
    ("notifications/unknown", None),
]

batch_items = st.lists(
    st.one_of(
        st.tuples(st.just("request"), st.sampled_from(REQUESTS)),
        st.tuples(st.just("notification"), st.sampled_from(NOTIFICATIONS)),
    ),
    min_size=1,
    max_size=12,
)


@given(batch_items, st.randoms(use_true_random=False), st.data())
@settings(max_examples=300, deadline=None)
def test_batch_gets_one_answer_per_request(items: list[Any], rnd: Any, data: st.DataObject) -> None:
    srv = ready_server(BATCH_VERSION)
    batch = []
    request_ids = []
    for i, (kind, (method, params)) in enumerate(items):
        msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        if kind == "request":
            msg["id"] = i if i % 2 else f"s{i}"
            request_ids.append(msg["id"])
        batch.append(msg)
    events = srv.receive(json.dumps(batch).encode())
    received = [e for e in events if isinstance(e, RequestReceived)]
    replies = [e.data for e in events if isinstance(e, Outgoing)]
    rnd.shuffle(received)
    cancelled = set()
    for event in received:
        if data.draw(st.booleans(), label="cancel?"):
            cancelled.add(event.id)
            srv.receive(
                json.dumps(
                    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": event.id}}
                ).encode()
            )
            out = srv.drop(event.id)
        elif event.method == "resources/read":
            out = srv.error(event.id, -32002, "Resource not found")
        else:
            out = srv.respond(event.id, {"tools": []} if event.method == "tools/list" else {"prompts": []})
        if out is not None:
            replies.append(out)
    expected = [i for i in request_ids if i not in cancelled]
    if not expected:
        assert replies == []
        return
    assert len(replies) == 1, "a batch is answered by one array"
    answers = json.loads(replies[0])
    assert isinstance(answers, list)
    assert sorted(map(str, (a["id"] for a in answers))) == sorted(map(str, expected))
    assert len({json.dumps(a["id"]) for a in answers}) == len(answers)


@given(st.binary(max_size=300))
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_no_bytes_crash_the_core(data: bytes) -> None:
    for srv in (ready_server(BATCH_VERSION), ready_server(_versions.SUPPORTED_VERSIONS[1])):
        events = srv.receive(data)
        for event in events:
            if isinstance(event, Outgoing):
                json.loads(event.data)  # every reply is valid JSON


json_values = st.recursive(
    # JSON has no NaN or infinities (json.dumps would write the non-JSON `Infinity`)
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@given(
    st.dictionaries(st.sampled_from(["jsonrpc", "id", "method", "params", "result", "error"]), json_values)
)
@settings(max_examples=500, deadline=None)
def test_any_json_object_gets_a_valid_reaction(message: dict[str, Any]) -> None:
    srv = ready_server(_versions.SUPPORTED_VERSIONS[1])
    events = srv.receive(json.dumps(message).encode())
    outgoing = [json.loads(e.data) for e in events if isinstance(e, Outgoing)]
    looks_like_notification = isinstance(message.get("method"), str) and "id" not in message
    if looks_like_notification:
        assert outgoing == [], "a notification is never answered"
    for reply in outgoing:
        assert reply["jsonrpc"] == "2.0" and ("result" in reply) != ("error" in reply)
        if "error" in reply:
            assert isinstance(reply["error"]["code"], int)


def test_ids_never_repeat_under_concurrency_and_cancellation() -> None:
    """Requests start after a random number of checkpoints and some are cancelled
    after another random number, mostly once they are on the wire."""
    on_the_wire_then_cancelled = 0

    @given(
        st.lists(st.tuples(st.integers(0, 30), st.none() | st.integers(0, 30)), min_size=1, max_size=25),
    )
    @settings(max_examples=40, deadline=None)
    def check(plan: list[tuple[int, int | None]]) -> None:
        nonlocal on_the_wire_then_cancelled
        sent_ids: list[Any] = []
        cancelled_ids: list[Any] = []

        class Tap(trio.abc.Channel[Frame]):
            def __init__(self, inner: trio.abc.Channel[Frame]) -> None:
                self.inner = inner

            async def send(self, value: Frame) -> None:
                msg = json.loads(value.data)
                if "method" in msg and "id" in msg:
                    sent_ids.append(msg["id"])
                elif msg.get("method") == "notifications/cancelled":
                    cancelled_ids.append(msg["params"]["requestId"])
                await self.inner.send(value)

            async def receive(self) -> Frame:
                return await self.inner.receive()

            async def aclose(self) -> None:
                await self.inner.aclose()

        async def handler(ctx: Any, params: Any) -> Any:
            await trio.sleep(0.001 * (len(params.name) % 3))
            return {"content": []}

        async def cancel_after(scope: trio.CancelScope, checkpoints: int) -> None:
            for _ in range(checkpoints):
                await trio.lowlevel.checkpoint()
            scope.cancel()

        async def main() -> None:
            a, b = open_memory_transport_pair()
            async with (
                open_session(
                    a,
                    role="server",
                    info={"name": "s", "version": "1"},
                    capabilities={"tools": {}},
                    request_handlers={"tools/call": handler},
                ) as _srv,
                open_session(Tap(b), role="client", info={"name": "c", "version": "1"}) as cli,
            ):
                await cli.connect()

                async def one(delay_checkpoints: int, cancel_at: int | None) -> None:
                    for _ in range(delay_checkpoints):
                        await trio.lowlevel.checkpoint()
                    async with trio.open_nursery() as canceller:
                        scope = trio.CancelScope()
                        if cancel_at is not None:
                            canceller.start_soon(cancel_after, scope, cancel_at)
                        with scope:
                            await cli.request("tools/call", {"name": "x" * delay_checkpoints})
                        canceller.cancel_scope.cancel()  # answered first

                async with trio.open_nursery() as n:
                    for delay, cancel_at in plan:
                        n.start_soon(one, delay, cancel_at)
                await cli.request("tools/call", {"name": "final"})

        trio.run(main)
        assert len(sent_ids) == len(set(sent_ids))
        # a request is cancelled on the wire only after it was sent there
        assert set(cancelled_ids) <= set(sent_ids)
        on_the_wire_then_cancelled += len(set(cancelled_ids))

    check()
    assert on_the_wire_then_cancelled > 0


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["never waits", "checkpoints", "sleeps", "fails"]),
            st.booleans(),  # starts a new burst
            st.booleans(),  # cancelled after it is sent
        ),
        min_size=1,
        max_size=30,
    ),
    st.integers(1, 4),
)
@settings(max_examples=150, deadline=None)
def test_every_request_is_answered_once_however_it_arrives_and_runs(
    plan: list[tuple[str, bool, bool]], max_in_flight: int
) -> None:
    """Handlers that never wait (answered by the reader), that wait (the reading
    moves on to a successor), that fail; requests alone or in bursts, some
    cancelled, with few slots: each request not cancelled gets exactly one
    answer, the right one, and a cancelled one at most one."""

    async def handler(ctx: Any, params: Any) -> Any:
        kind = params.name
        if kind == "checkpoints":
            await trio.lowlevel.checkpoint()
            await trio.lowlevel.checkpoint()
        elif kind == "sleeps":
            await trio.sleep(0.0005)
        elif kind == "fails":
            raise ValueError("as planned")
        return {"content": [{"type": "text", "text": f"{kind} {ctx.id}"}]}

    async def main() -> None:
        # Frames sent before the server reads reach it together, and its end
        # says how many it holds (as one read of a pipe brings several lines).
        channel, peer = pipe_pair(relay=True)

        def push(messages: list[dict[str, Any]]) -> None:
            for message in messages:
                peer._send.send_nowait(Frame(json.dumps(message).encode()))

        init = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }
        async with open_session(
            channel,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}},
            request_handlers={"tools/call": handler},
            max_in_flight=max_in_flight,
        ) as srv:
            push([{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}])
            push([{"jsonrpc": "2.0", "method": "notifications/initialized"}])
            burst: list[dict[str, Any]] = []
            for id, (kind, new_burst, cancel) in enumerate(plan, start=1):
                if new_burst and burst:
                    push(burst)
                    burst = []
                    await trio.lowlevel.checkpoint()
                burst.append({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": kind}})
                if cancel:
                    burst.append(
                        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}}
                    )
            push(burst)

            def busy() -> bool:
                counts = srv.statistics()
                unread = channel.buffered() + channel._receive.statistics().current_buffer_used
                return bool(counts["requests_in_progress"] or counts["requests_queued"] or unread)

            with trio.fail_after(10):
                # (all blocked first: a frame handed to a waiting reader is in no count)
                await trio.testing.wait_all_tasks_blocked()
                while busy():  # then the input ends (stdin closed): the session ends
                    await trio.sleep(0.001)
                    await trio.testing.wait_all_tasks_blocked()
            await peer.aclose()
        answers: dict[Any, list[dict[str, Any]]] = {}
        for direction, message in channel.log:
            if direction == "out":
                answers.setdefault(message.get("id"), []).append(message)
        assert len(answers.pop(0)) == 1  # initialize
        for id, (kind, _, cancel) in enumerate(plan, start=1):
            got = answers.pop(id, [])
            if cancel:
                assert len(got) <= 1
            else:
                assert len(got) == 1, (id, kind, got)
            for answer in got:
                if kind == "fails":
                    assert answer["error"]["code"] == -32603
                else:
                    assert answer["result"]["content"][0]["text"] == f"{kind} {id}"
        assert answers == {}

    trio.run(main)
