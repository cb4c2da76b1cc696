"""A POST stream resumed on another worker while its worker still runs the call: the resumed
stream gets the rest and ends cleanly (it used to be cut: a followed stream's marker reached
the response's pump), and the GET stream held by the resuming worker goes on carrying what
the others send it (here, a task's question)."""

from __future__ import annotations

from contextlib import aclosing
from typing import Any

import httpx2 as httpx
import msgspec
import pytest
import trio

from mcp_trio.server import Context
from mcp_trio.transports.http._sse import SSEDecoder
from tests._support.http_server import RawResponse, raw_stream, rpc
from tests._support.http_shared import GET, call, initialized_everywhere, sse_messages, workers

pytestmark = pytest.mark.trio


async def all_events(response: RawResponse, timeout: float = 5) -> tuple[list[str], list[Any]]:
    """Read an SSE response to its end: the event ids it carried (a priming event's, which
    carries no data, too), and its messages."""
    raw = b""
    with trio.fail_after(timeout):
        async with aclosing(response.chunks()) as chunks:
            async for chunk in chunks:
                raw += chunk
    lines = raw.decode().splitlines()
    ids = [line.partition(":")[2].strip() for line in lines if line.startswith("id:")]
    messages = [msgspec.json.decode(e.data) for e in SSEDecoder().feed(raw) if e.data]
    return ids, messages


async def test_a_stream_resumed_on_another_worker_ends_cleanly_next_to_the_get_stream(
    store_url: str | None,
) -> None:
    async with workers(2, store_url=store_url) as (urls, servers, _, _state):
        for server in servers:

            @server.tool(name="closer")
            async def closer(ctx: Context) -> str:
                await ctx.close_stream()
                await trio.sleep(0.1)
                return "done"

            @server.tool(name="asking", task_support="optional")
            async def asking(ctx: Context) -> str:
                answer = await ctx.elicit(
                    "ok?", {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                )
                return f"ok={answer.content['ok']}"

        async with httpx.AsyncClient(timeout=5) as client:
            headers = await initialized_everywhere(client, urls, servers)
            async with raw_stream(urls[1], "GET", {**headers, **GET}) as standalone:
                assert standalone.status_code == 200
                # a call on the first worker whose stream closes mid-call...
                async with raw_stream(urls[0], "POST", headers, call(1, "closer")) as post:
                    ids, _ = await all_events(post)
                assert ids  # (at least the priming event's)
                last_id = ids[-1]
                # ...resumed on the second, which holds the GET stream
                resume = {**headers, **GET, "last-event-id": last_id}
                async with raw_stream(urls[1], "GET", resume) as resumed:
                    _, rest = await all_events(resumed)  # to its clean end
                assert [m["result"] for m in rest if "result" in m]
                params = {"name": "asking", "arguments": {}, "task": {}}
                r = await client.post(urls[0], headers=headers, json=rpc(5, "tools/call", params))
                assert "task" in r.json()["result"], r.text
                while True:  # (the tools registered above may be announced, late, to the new session)
                    [(_, message)] = await sse_messages(standalone, 1)
                    if message.get("method") != "notifications/tools/list_changed":
                        break
            assert message["method"] == "elicitation/create"
