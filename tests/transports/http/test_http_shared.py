"""Streamable HTTP sessions shared by several workers through one store: two
(or three) servers in this process, each on its own port, share one in-memory
store, and a client's requests of one session go to one or the other."""

from __future__ import annotations

import gc
from contextlib import AsyncExitStack, aclosing
from typing import Any

import h11
import httpx2 as httpx
import msgspec
import pytest
import trio

from mcp_trio.client import connect_http
from mcp_trio.server import Context, Server
from mcp_trio.store import Store, open_store
from mcp_trio.transports.http._sse import SSEDecoder
from mcp_trio.transports.http.server._streams import _HttpSession
from tests._support.doors import DOORS
from tests._support.http_server import ACCEPT, RawResponse, init, raw_stream, rpc
from tests._support.http_shared import (
    GET,
    _serving,
    add_tool,
    call,
    initialize,
    initialized_everywhere,
    sse_messages,
    workers,
)
from tools.redis_server import RedisServer

pytestmark = pytest.mark.trio


async def ended_everywhere(
    client: httpx.AsyncClient, urls: list[str], servers: list[Server], store: Store, headers: dict[str, str]
) -> None:
    """The session is gone: from every worker, from the store, and 404 on every worker."""
    with trio.fail_after(5):  # (the last replica forgets the record once it has ended)
        while any(server._sessions for server in servers) or await store.sessions.get(
            headers["mcp-session-id"]
        ):
            await trio.sleep(0.02)
    for url in urls:
        r = await client.post(url, headers=headers, json=call(9, "add", {"a": 1, "b": 1}))
        assert r.status_code == 404


def text(response: Any) -> str:
    return str(response["result"]["content"][0]["text"])


@pytest.mark.parametrize("front_door", DOORS)
async def test_a_session_initialized_on_one_worker_is_served_by_another(
    front_door: str, store_url: str | None
) -> None:
    async with workers(2, front_door, store_url=store_url) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            sid = headers["mcp-session-id"]
            record = await store.sessions.get(sid)
            assert record is not None and record.protocol_version == "2025-11-25"
            assert msgspec.json.decode(record.client_info) == {"name": "raw", "version": "1"}
            r = await client.post(urls[1], headers=headers, json=rpc(None, "notifications/initialized"))
            assert r.status_code == 202
            r = await client.post(urls[1], headers=headers, json=call(1, "add", {"a": 2, "b": 3}))
            assert r.status_code == 200 and text(r.json()) == "5"
            r = await client.post(urls[1], headers=headers, json=call(2, "where"))
            assert text(r.json()) == "w1"
            r = await client.post(urls[0], headers=headers, json=call(3, "where"))
            assert text(r.json()) == "w0"
            # the restored replica knows the client's capabilities: it may elicit
            [replica] = list(servers[1]._sessions)
            assert replica.peer_capabilities == {"elicitation": {}}
            assert replica.protocol_version == "2025-11-25"
            # an unknown id is still 404 on any worker
            unknown = {**headers, "mcp-session-id": "nope"}
            for url in urls:
                r = await client.post(url, headers=unknown, json=call(4, "add", {"a": 1, "b": 1}))
                assert r.status_code == 404


async def test_delete_on_one_worker_ends_the_session_everywhere(store_url: str | None) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            for i, url in enumerate(urls[:2]):
                r = await client.post(url, headers=headers, json=call(i, "add", {"a": 1, "b": i}))
                assert r.status_code == 200
            assert len(servers[0]._sessions) == len(servers[1]._sessions) == 1
            # the third worker never saw the session: it ends it all the same
            r = await client.delete(urls[2], headers=headers)
            assert r.status_code == 200
            await ended_everywhere(client, urls, servers, store, headers)
            for url in urls:
                assert (await client.delete(url, headers=headers)).status_code == 404


async def test_a_request_right_after_a_delete_elsewhere_is_a_404(store_url: str | None) -> None:
    """DELETE answers once every replica has dropped the session: the next request,
    on any worker, is a 404 at once (no worker asks the store on each request)."""
    async with workers(3, store_url=store_url) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            for n in range(10):
                headers = await initialize(client, urls[n % 3])
                for i, url in enumerate(urls):
                    r = await client.post(url, headers=headers, json=call(i, "add", {"a": 1, "b": i}))
                    assert r.status_code == 200
                assert (await client.delete(urls[(n + 1) % 3], headers=headers)).status_code == 200
                for i, url in enumerate(urls):
                    r = await client.post(url, headers=headers, json=call(9, "add", {"a": 1, "b": i}))
                    assert r.status_code == 404, (n, i)


async def test_elicitation_answered_through_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            await client.post(urls[1], headers=headers, json=rpc(None, "notifications/initialized"))
            async with raw_stream(urls[1], "POST", headers, call(7, "ask")) as response:
                assert response.headers["content-type"] == "text/event-stream"
                [(_, asked)] = await sse_messages(response, 1)
                assert asked["method"] == "elicitation/create"
                assert asked["id"] == "w1~1"  # the worker whose handler waits is named in the id
                answer = {
                    "jsonrpc": "2.0",
                    "id": asked["id"],
                    "result": {"action": "accept", "content": {"n": "bo"}},
                }
                r = await client.post(urls[0], headers=headers, json=answer)
                assert r.status_code == 202
                [(_, result)] = await sse_messages(response, 1)
                assert result["id"] == 7 and text(result) == "hi bo from w1"


async def test_answers_in_a_batch_reach_the_workers_whose_handlers_wait(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, _, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            params = {
                "protocolVersion": "2025-03-26",  # (the last revision with batches)
                "capabilities": {"sampling": {}},
                "clientInfo": {"name": "raw", "version": "1"},
            }
            r = await client.post(urls[0], headers=ACCEPT, json=rpc(0, "initialize", params))
            assert r.status_code == 200
            headers = {**ACCEPT, "mcp-session-id": r.headers["mcp-session-id"]}
            headers["mcp-protocol-version"] = "2025-03-26"
            await client.post(urls[0], headers=headers, json=rpc(None, "notifications/initialized"))
            async with (
                raw_stream(urls[0], "POST", headers, call(7, "ask_llm")) as first,
                raw_stream(urls[1], "POST", headers, call(8, "ask_llm")) as second,
            ):
                [(_, asked_here)] = await sse_messages(first, 1)
                [(_, asked_there)] = await sse_messages(second, 1)
                assert asked_here["id"].startswith("w0~") and asked_there["id"].startswith("w1~")
                answer = {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m"}
                batch = [
                    {"jsonrpc": "2.0", "id": asked["id"], "result": answer}
                    for asked in (asked_there, asked_here)
                ]
                batch.append(rpc(None, "notifications/roots/list_changed"))
                r = await client.post(urls[0], headers=headers, json=batch)  # one batch, to the first
                assert r.status_code == 202
                [(_, done_here)] = await sse_messages(first, 1)
                [(_, done_there)] = await sse_messages(second, 1)
            assert done_here["id"] == 7 and text(done_here) == "4 via w0"
            assert done_there["id"] == 8 and text(done_there) == "4 via w1"


async def test_initialized_sent_to_another_worker_holds_at_once_on_the_first(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, _, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            for n in range(10):
                headers = await initialize(client, urls[0])
                r = await client.post(urls[1], headers=headers, json=rpc(None, "notifications/initialized"))
                assert r.status_code == 202
                # at once on the first worker: a call that asks the client (allowed only once initialized)
                async with raw_stream(urls[0], "POST", headers, call(n, "ask")) as response:
                    [(_, asked)] = await sse_messages(response, 1)
                assert asked["method"] == "elicitation/create", (n, asked)


async def test_cancellation_through_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, _, _, state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            async with trio.open_nursery() as nursery:

                async def forever() -> None:
                    async with raw_stream(urls[0], "POST", headers, call(5, "forever")) as response:
                        assert await sse_messages(response, 1) == []  # the stream ends, unanswered

                nursery.start_soon(forever)
                with trio.fail_after(5):
                    await state["started"].wait()
                cancel = rpc(None, "notifications/cancelled", {"requestId": 5, "reason": "enough"})
                r = await client.post(urls[1], headers=headers, json=cancel)
                assert r.status_code == 202
                with trio.fail_after(5):
                    await state["cancelled_event"].wait()
            assert state["cancelled"] == "w0"


async def test_log_level_set_on_one_worker_holds_on_another(
    store_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            # w1 restores the session before the level is set (on w0)
            r = await client.post(urls[1], headers=headers, json=call(1, "add", {"a": 1, "b": 1}))
            assert r.status_code == 200
            sharing = next(iter(servers[1]._sessions)).channel._sharing
            take = sharing._take

            async def slowly(note: Any) -> None:  # (w1 hears of the new level late)
                if note.kind == "update":
                    await trio.sleep(0.2)
                await take(note)

            monkeypatch.setattr(sharing, "_take", slowly)
            r = await client.post(
                urls[0], headers=headers, json=rpc(2, "logging/setLevel", {"level": "error"})
            )
            assert r.status_code == 200  # (answered once w1 has the level too: no wait here)
            async with raw_stream(urls[1], "POST", headers, call(3, "chatty")) as response:
                got = [m for _, m in await sse_messages(response, 3)]  # (or fewer: it ends)
            assert len(got) == 2, got
            assert got[0]["params"]["level"] == "error"
            assert text(got[1]) == "said"


async def test_notifications_reach_the_get_stream_held_by_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            async with raw_stream(urls[1], "GET", {**headers, **GET}) as response:
                assert response.status_code == 200
                record = await store.sessions.get(headers["mcp-session-id"])
                assert record is not None and record.stream_worker == "w1"
                add_tool(servers[0], "extra")  # only the first worker's server changes
                [(event_id, message)] = await sse_messages(response, 1)
            assert message["method"] == "notifications/tools/list_changed"
            assert event_id.startswith("0.") and event_id.endswith("@w1")


async def test_a_subscription_made_on_one_worker_holds_on_another(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            async with raw_stream(urls[1], "GET", {**headers, **GET}) as response:
                subscribe = rpc(1, "resources/subscribe", {"uri": "notes://a"})
                r = await client.post(urls[1], headers=headers, json=subscribe)
                assert r.status_code == 200
                with trio.fail_after(5):  # (the first worker learns it over the bus)
                    while not any("notes://a" in uris for uris in servers[0]._open.subscribed.values()):
                        await trio.sleep(0.01)
                await servers[0].notify_resource_updated("notes://a")  # the change is seen there
                [(_, message)] = await sse_messages(response, 1)
            assert message == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "notes://a"},
            }


async def test_a_resource_update_on_a_worker_without_the_session_reaches_it(store_url: str | None) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            subscribe = rpc(1, "resources/subscribe", {"uri": "notes://b"})
            assert (await client.post(urls[0], headers=headers, json=subscribe)).status_code == 200
            async with raw_stream(urls[0], "GET", {**headers, **GET}) as response:
                assert not servers[2]._sessions  # the third worker never saw the session
                await servers[2].notify_resource_updated("notes://b")
                [(_, message)] = await sse_messages(response, 1)
            assert message["method"] == "notifications/resources/updated"
            assert message["params"] == {"uri": "notes://b"}


async def left_the_bus(store: Store, worker: str) -> None:
    """Until the stopped ``worker`` no longer listens on the bus, as a dead process would not."""
    with trio.fail_after(5):
        while await store.bus.publish(f"mcp-trio:http:{worker}", b"") != 0:
            await trio.sleep(0.01)


async def sse_within(response: RawResponse, seconds: float) -> list[Any]:
    """The messages of an SSE response within ``seconds``."""
    decoder = SSEDecoder()
    got: list[Any] = []
    with trio.move_on_after(seconds):
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                got += [msgspec.json.decode(e.data) for e in decoder.feed(chunk) if e.data]
    return got


async def test_a_list_change_on_a_worker_without_the_session_reaches_it(store_url: str | None) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            async with raw_stream(urls[0], "GET", {**headers, **GET}) as response:
                assert not servers[2]._sessions  # the third worker never saw the session
                add_tool(servers[2], "extra")
                [(_, message)] = await sse_messages(response, 1)
            assert message["method"] == "notifications/tools/list_changed"


async def test_a_session_on_every_worker_hears_each_change_once(store_url: str | None) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            subscribe = rpc(1, "resources/subscribe", {"uri": "notes://c"})
            assert (await client.post(urls[2], headers=headers, json=subscribe)).status_code == 200
            with trio.fail_after(5):  # (every replica learns it over the bus)
                while not all(
                    any("notes://c" in uris for uris in server._open.subscribed.values())
                    for server in servers
                ):
                    await trio.sleep(0.01)
            async with raw_stream(urls[1], "GET", {**headers, **GET}) as response:
                assert response.status_code == 200
                with trio.fail_after(5):  # (the others learn over the bus that the second holds it)
                    while sum(s.channel.announces() for server in servers for s in server._sessions) != 1:
                        await trio.sleep(0.01)
                for server in servers:  # the same change made on every worker: one announcement
                    add_tool(server, "extra")
                await servers[0].notify_resource_updated("notes://c")
                got = await sse_within(response, 1.0)
            methods = sorted(m["method"] for m in got)
            assert methods == ["notifications/resources/updated", "notifications/tools/list_changed"], got


async def test_resumption_with_last_event_id_on_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            async with raw_stream(urls[0], "GET", {**headers, **GET}) as response:
                add_tool(servers[0], "one")
                add_tool(servers[0], "two")
                [(first, _), (second, _)] = await sse_messages(response, 2)
            # gone while no stream was open: kept by the worker that made it
            add_tool(servers[0], "three")
            resume = {**headers, **GET, "last-event-id": first}
            async with raw_stream(urls[1], "GET", resume) as response:
                got = await sse_messages(response, 2)
                assert got[0][0] == second  # replayed from the shared event store
                assert got[1][1]["method"] == "notifications/tools/list_changed"  # the one kept
                add_tool(servers[0], "four")
                [(live, message)] = await sse_messages(response, 1)  # then live ones
            assert message["method"] == "notifications/tools/list_changed"
            assert live.endswith("@w1") and live not in (first, second)


async def test_progress_of_a_call_on_another_worker() -> None:
    async with workers(2) as (urls, servers, _, _state):

        @servers[1].tool
        async def steps(ctx: Context) -> str:
            for i in range(3):
                await ctx.report_progress(i + 1, 3)
            return "done"

        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            request = rpc(
                8, "tools/call", {"name": "steps", "arguments": {}, "_meta": {"progressToken": "p"}}
            )
            async with raw_stream(urls[1], "POST", headers, request) as response:
                got = [m for _, m in await sse_messages(response, 4)]
            assert [m["params"]["progress"] for m in got[:3]] == [1, 2, 3]
            assert text(got[3]) == "done"


async def test_idle_expiry_ends_the_session_only_once_no_worker_uses_it(store_url: str | None) -> None:
    async with workers(2, idle_timeout=0.6, store_url=store_url) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            sid = headers["mcp-session-id"]
            # used on the second worker only: the first's replica ends, the session lives
            with trio.fail_after(5):
                while servers[0]._sessions:
                    r = await client.post(urls[1], headers=headers, json=call(1, "add", {"a": 1, "b": 1}))
                    assert r.status_code == 200
                    await trio.sleep(0.05)
            assert await store.sessions.get(sid) is not None
            r = await client.post(urls[0], headers=headers, json=call(2, "where"))
            assert r.status_code == 200 and text(r.json()) == "w0"  # restored again
            # used by nobody: it ends everywhere
            await ended_everywhere(client, urls, servers, store, headers)


async def test_a_post_stream_resumed_on_another_worker_gets_the_rest_live(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        release = trio.Event()

        @servers[0].tool
        async def poll(ctx: Context) -> str:
            """Closes its response stream mid-call (SSE polling)."""
            await ctx.report_progress(1, 3)
            await ctx.close_stream()
            await release.wait()
            await ctx.report_progress(2, 3)
            await ctx.report_progress(3, 3)
            return "polled"

        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            request = rpc(9, "tools/call", {"name": "poll", "arguments": {}, "_meta": {"progressToken": "t"}})
            async with raw_stream(urls[0], "POST", headers, request) as response:
                [(last, progress)] = await sse_messages(response, 2)  # then the stream ends
            assert progress["params"]["progress"] == 1
            assert last.partition(".")[0].endswith("@w0")  # the stream is the first worker's
            resume = {**headers, **GET, "last-event-id": last}
            async with raw_stream(urls[1], "GET", resume) as response:
                release.set()
                got = [m for _, m in await sse_messages(response, 3)]
            assert [m["params"]["progress"] for m in got[:2]] == [2, 3]
            assert got[2]["id"] == 9 and text(got[2]) == "polled"


@pytest.mark.interop
async def test_redis_stopped_and_restarted_mid_run_gives_errors_then_recovers(tmp_path: Any) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        async with AsyncExitStack() as stack:
            stores = [
                await stack.enter_async_context(open_store(redis.url, prefix="down:", timeout=1.0))
                for _ in range(2)
            ]
            async with _serving(2, "h11", None, stores, {}) as (urls, _, _, _state):
                async with httpx.AsyncClient(timeout=10) as client:
                    headers = await initialize(client, urls[0])
                    redis.stop()
                    with trio.fail_after(8):
                        # the worker holding the session serves it; the other cannot find it: 503
                        r = await client.post(urls[0], headers=headers, json=call(1, "add", {"a": 1, "b": 2}))
                        assert r.status_code == 200 and text(r.json()) == "3"
                        r = await client.post(urls[1], headers=headers, json=call(2, "add", {"a": 1, "b": 2}))
                        assert r.status_code == 503 and "store" in r.json()["error"]["message"]
                    redis.start()  # (empty: nothing was saved)
                    with trio.fail_after(10):
                        while True:  # recovery: a new session is shared again
                            r = await client.post(urls[0], headers=ACCEPT, json=init())
                            if r.status_code == 200:
                                fresh = {**headers, "mcp-session-id": r.headers["mcp-session-id"]}
                                r = await client.post(urls[1], headers=fresh, json=call(3, "where"))
                                if r.status_code == 200:
                                    break
                            await trio.sleep(0.1)
                    assert text(r.json()) == "w1"
    finally:
        redis.stop()


@pytest.mark.interop
async def test_a_delete_the_store_cannot_confirm_ends_nothing(tmp_path: Any) -> None:
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        async with AsyncExitStack() as stack:
            stores = [
                await stack.enter_async_context(open_store(redis.url, prefix="end:", timeout=1.0))
                for _ in range(2)
            ]
            async with _serving(2, "h11", None, stores, {}) as (urls, _, _, _state):
                async with httpx.AsyncClient(timeout=10) as client:
                    headers = await initialize(client, urls[0])
                    redis.stop()
                    with trio.fail_after(8):
                        for url in urls:  # held here or elsewhere: 503, and the session goes on
                            r = await client.delete(url, headers=headers)
                            assert r.status_code == 503, r.text
                            assert "not ended" in r.json()["error"]["message"]
                        r = await client.post(urls[0], headers=headers, json=call(1, "add", {"a": 1, "b": 2}))
                        assert r.status_code == 200 and text(r.json()) == "3"
                    redis.start()
                    with trio.fail_after(10):  # the client's retry ends it
                        while (r := await client.delete(urls[0], headers=headers)).status_code == 503:
                            await trio.sleep(0.1)
                    assert r.status_code == 200
                    r = await client.post(urls[0], headers=headers, json=call(2, "where"))
                    assert r.status_code == 404
    finally:
        redis.stop()


@pytest.mark.interop
async def test_a_session_opened_while_the_store_is_away_reaches_it_when_it_is_back(tmp_path: Any) -> None:
    """A session initialized while Redis is down lives on its worker; once Redis is back, its
    record is written at its next request there, and every worker serves it (it was 404
    everywhere, its own worker included, once Redis was back)."""
    redis = RedisServer(tmp_path / "redis")
    redis.start()
    try:
        async with AsyncExitStack() as stack:
            stores = [
                await stack.enter_async_context(open_store(redis.url, prefix="late:", timeout=1.0))
                for _ in range(2)
            ]
            async with _serving(2, "h11", None, stores, {}) as (urls, _, _, _state):
                async with httpx.AsyncClient(timeout=10) as client:
                    redis.stop()
                    with trio.fail_after(8):
                        headers = await initialize(client, urls[0])
                        r = await client.post(urls[0], headers=headers, json=call(1, "add", {"a": 1, "b": 2}))
                        assert r.status_code == 200 and text(r.json()) == "3"
                    redis.start()
                    with trio.fail_after(10):  # (the store's connection comes back by itself)
                        while True:
                            r = await client.post(urls[0], headers=headers, json=call(2, "where"))
                            if r.status_code != 503:
                                break
                            await trio.sleep(0.1)
                    assert r.status_code == 200 and text(r.json()) == "w0", r.text
                    r = await client.post(urls[1], headers=headers, json=call(3, "where"))
                    assert r.status_code == 200 and text(r.json()) == "w1", r.text
    finally:
        redis.stop()


async def test_a_replica_counts_against_the_session_table(store_url: str | None) -> None:
    async with workers(2, store_url=store_url, max_sessions=1) as (urls, _, _, _state):
        async with httpx.AsyncClient(timeout=5) as client:
            first = await initialize(client, urls[0])
            second = await initialize(client, urls[1])
            r = await client.post(urls[1], headers=second, json=call(1, "add", {"a": 1, "b": 1}))
            assert r.status_code == 200
            # the second worker's table is full: a replica of the first takes the place of its
            # least recently used session, whose record the store keeps
            r = await client.post(urls[1], headers=first, json=call(2, "where"))
            assert r.status_code == 200 and text(r.json()) == "w1"
            r = await client.post(urls[1], headers=second, json=call(3, "add", {"a": 2, "b": 2}))
            assert r.status_code == 200 and text(r.json()) == "4"  # restored in its turn
            # an id nobody knows is still 404
            unknown = {**first, "mcp-session-id": "nope"}
            assert (await client.post(urls[1], headers=unknown, json=call(4, "where"))).status_code == 404
            r = await client.post(urls[0], headers=first, json=call(5, "where"))
            assert r.status_code == 200 and text(r.json()) == "w0"


async def test_a_worker_stopped_mid_session_loses_only_its_calls(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, _, _, state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialize(client, urls[0])
            async with trio.open_nursery() as nursery:

                async def in_flight() -> None:
                    # its connection is cut mid-answer: the client sees an error
                    with pytest.raises(h11.RemoteProtocolError, match="ConnectionClosed"):
                        async with raw_stream(urls[0], "POST", headers, call(5, "forever")) as response:
                            async with aclosing(response.chunks()) as chunks:
                                async for _ in chunks:
                                    pass

                nursery.start_soon(in_flight)
                with trio.fail_after(5):
                    await state["started"].wait()
                state["stop"][0]()  # the worker running the call stops
            r = await client.post(urls[1], headers=headers, json=call(6, "add", {"a": 20, "b": 22}))
            assert r.status_code == 200 and text(r.json()) == "42"  # the session goes on elsewhere


async def test_what_is_sent_to_a_dead_holder_of_the_get_stream_waits_for_the_next_one(
    store_url: str | None,
) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, store, state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            sid = headers["mcp-session-id"]
            with pytest.raises(h11.RemoteProtocolError):  # (its connection is cut)
                async with raw_stream(urls[1], "GET", {**headers, **GET}) as response:
                    with trio.fail_after(5):
                        while sum(s.channel.announces() for server in servers for s in server._sessions) != 1:
                            await trio.sleep(0.01)
                    state["stop"][1]()  # the worker holding the GET stream dies
                    await sse_within(response, 5)
            await left_the_bus(store, "w1")
            [session] = servers[0]._sessions
            await session.notify("notifications/message", {"level": "info", "data": "meanwhile"})
            with trio.fail_after(5):  # the first worker finds the holder gone and takes its place
                while (record := await store.sessions.get(sid)) is None or record.stream_worker != "w0":
                    await trio.sleep(0.01)
            async with raw_stream(urls[2], "GET", {**headers, **GET}) as response:  # reopened elsewhere
                [(_, kept)] = await sse_messages(response, 1)
                assert kept["params"]["data"] == "meanwhile"
                add_tool(servers[2], "extra")  # and the new holder announces
                [(_, changed)] = await sse_messages(response, 1)
                assert changed["method"] == "notifications/tools/list_changed"


async def test_a_listen_stream_hears_the_changes_made_on_another_worker(store_url: str | None) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        with trio.fail_after(10):
            async with connect_http(urls[0], versions=["2026-07-28"]) as client:
                async with client.listen(tools=True, resource_uris=["notes://a"]) as sub:
                    assert sub.acknowledged["toolsListChanged"] is True
                    add_tool(servers[1], "extra")  # only the second worker's server changes
                    assert (await sub.__anext__())[0] == "notifications/tools/list_changed"
                    await servers[1].notify_resource_updated("notes://a")
                    method, params = await sub.__anext__()
                    assert method == "notifications/resources/updated" and params.uri == "notes://a"


async def test_when_the_worker_announcing_to_a_session_dies_another_takes_its_place(
    store_url: str | None,
) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, store, state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            sid = headers["mcp-session-id"]
            record = await store.sessions.get(sid)
            assert record is not None and record.stream_worker is None  # (no GET stream yet)
            state["stop"][0]()  # the worker that answered initialize (announcing to it) dies
            await left_the_bus(store, "w0")
            for server in servers[1:]:  # a change made on every worker left
                add_tool(server, "extra")
            with trio.fail_after(5):  # one of them finds the first gone and takes its place
                while (record := await store.sessions.get(sid)) is None or record.stream_worker not in (
                    "w1",
                    "w2",
                ):
                    await trio.sleep(0.01)
            async with raw_stream(urls[2], "GET", {**headers, **GET}) as response:
                got = await sse_within(response, 1.0)
            assert [m["method"] for m in got] == ["notifications/tools/list_changed"], got


async def test_a_change_told_to_many_sessions_asks_once_whether_a_worker_is_gone(
    store_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with workers(3, store_url=store_url) as (urls, servers, store, state):
        async with httpx.AsyncClient(timeout=5) as client:
            ids = []
            for n in range(20):  # sessions the first worker announces to, with replicas on the others
                headers = await initialize(client, urls[0])
                r = await client.post(urls[0], headers=headers, json=rpc(None, "notifications/initialized"))
                assert r.status_code == 202
                for url in urls[1:]:
                    r = await client.post(url, headers=headers, json=call(n, "add", {"a": 1, "b": 1}))
                    assert r.status_code == 200
                ids.append(headers["mcp-session-id"])
            state["stop"][0]()
            await left_the_bus(store, "w0")
            probes: list[str] = []
            buses = {
                id(s.channel._sharing.store.bus): s.channel._sharing.store.bus for s in servers[1]._sessions
            }
            buses.update(
                {id(s.channel._sharing.store.bus): s.channel._sharing.store.bus for s in servers[2]._sessions}
            )
            for bus in buses.values():

                async def counting(channel: str, data: bytes, publish: Any = bus.publish) -> int:
                    if channel.endswith("http:w0"):
                        probes.append(channel)
                    return int(await publish(channel, data))

                monkeypatch.setattr(bus, "publish", counting)
            for server in servers[1:]:
                add_tool(server, "extra")
            with trio.fail_after(5):  # every session gets a new announcer
                for sid in ids:
                    while (record := await store.sessions.get(sid)) is None or record.stream_worker is None:
                        await trio.sleep(0.01)
            assert 1 <= len(probes) <= 2  # (once per remaining worker, not once per session)


async def test_a_delete_does_not_wait_for_a_dead_worker_named_in_the_record(
    store_url: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker that died stays named among the session's replicas; ending the session
    finds it gone instead of waiting the whole confirmation time for it."""
    async with workers(3, store_url=store_url) as (urls, servers, store, state):
        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            record = await store.sessions.get(headers["mcp-session-id"])
            assert record is not None and set(record.replicas) == {"w0", "w1", "w2"}
            state["stop"][1]()
            await left_the_bus(store, "w1")
            started = trio.current_time()
            assert (await client.delete(urls[0], headers=headers)).status_code == 200
            took = trio.current_time() - started
    assert "did not confirm" not in caplog.text
    assert took < 0.8, f"the DELETE waited {took:.2f} s for a dead worker"  # (the wait is 1 s)


async def test_every_worker_lists_the_latency_histograms_of_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scrape of any worker's metrics has every worker's latency histogram, labelled with it."""
    from mcp_trio.server import _shared_stats
    from tests._support.prometheus import parse_exposition

    monkeypatch.setattr(_shared_stats, "PUBLISH_EVERY", 0.05)

    def where_counts(text: str) -> dict[str, float]:
        _, samples = parse_exposition(text)["mcp_request_duration_seconds"]
        return {
            labels["worker"]: value
            for labels, value in samples
            if labels["__sample__"] == "count" and labels["tool"] == "where"
        }

    async with workers(2, metrics_path="/metrics") as (urls, _, _, _), httpx.AsyncClient() as client:
        for url, calls in ((urls[0], 2), (urls[1], 5)):
            headers = await initialize(client, url)
            for n in range(calls):
                r = await client.post(url, headers=headers, json=call(n + 1, "where"))
                assert r.status_code == 200, r.text
        with trio.fail_after(5):
            while where_counts((await client.get(urls[0].rsplit("/", 1)[0] + "/metrics")).text) != {
                "w0": 2,
                "w1": 5,
            }:
                await trio.sleep(0.05)


async def test_every_worker_lists_the_statistics_of_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """A scrape of any worker's metrics lists every worker's counts, each labelled with its
    worker (a scrape read one random worker's, and counters went back and forth); a worker
    that stopped drops out."""
    from mcp_trio.server import _shared_stats
    from tests._support.prometheus import parse_exposition

    monkeypatch.setattr(_shared_stats, "PUBLISH_EVERY", 0.05)
    monkeypatch.setattr(_shared_stats, "STALE_AFTER", 0.5)

    def ok_by_worker(text: str) -> dict[str, float]:
        _, samples = parse_exposition(text)["mcp_requests_total"]
        found: dict[str, float] = {}
        for labels, value in samples:
            if labels["outcome"] == "ok":
                found[labels["worker"]] = found.get(labels["worker"], 0) + value
        return found

    async with workers(2, metrics_path="/metrics") as (urls, _, _, state), httpx.AsyncClient() as client:
        for url, calls in ((urls[0], 1), (urls[1], 3)):
            headers = await initialize(client, url)
            for n in range(calls):
                r = await client.post(url, headers=headers, json=call(n + 1, "where"))
                assert r.status_code == 200, r.text
        metrics = [url.rsplit("/", 1)[0] + "/metrics" for url in urls]
        with trio.fail_after(5):
            while True:
                seen = [ok_by_worker((await client.get(m)).text) for m in metrics]
                if all(s.get("w0") == 1 and s.get("w1") == 3 for s in seen):
                    break  # (each worker's calls, on both workers' metrics)
                await trio.sleep(0.05)
        state["stop"][1]()  # worker 1 stops: it leaves the metrics once silent too long
        with trio.fail_after(5):
            while "w1" in ok_by_worker((await client.get(metrics[0])).text):
                await trio.sleep(0.1)


async def test_a_session_ended_is_not_kept_by_the_renewal_of_the_records() -> None:
    # The task renewing the records of sessions with an open stream (every idle_timeout / 4:
    # here 1 s) looks at every session of its worker; one that ends between two rounds is
    # freed at once, not a round later with all it holds.  (With one session, the idle
    # expiry keeps no entry of it once it ended either.)
    async with workers(1, idle_timeout=4.0) as (urls, servers, store, _):
        async with httpx.AsyncClient(timeout=5) as client:
            last = await initialize(client, urls[0])
            await trio.sleep(1.3)  # (a round went over it; the next is due at 2 s)
            assert (await client.delete(urls[0], headers=last)).status_code == 200
            with trio.fail_after(0.5):
                while any(s.id == last["mcp-session-id"] for s in _http_sessions()):
                    await trio.sleep(0.01)


def _http_sessions() -> list[_HttpSession]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, _HttpSession)]
