"""A gateway served as servers are: its per-backend metrics on the usual /metrics (requests by
outcome, their durations, each upstream session up or not, reconnections) scraped over real HTTP;
``mcp-trio serve gateway.toml --workers 2``."""

from __future__ import annotations

import os
import sys

import httpx2
import pytest
import trio

from examples.everything import WATCHED_URI
from examples.everything import server as everything
from mcp_trio import McpError
from mcp_trio.client import connect_http
from mcp_trio.proxy import Backend, gateway
from tests._support.paths import ROOT
from tests._support.prometheus import parse_exposition

pytestmark = pytest.mark.trio

ENV = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
MISBEHAVING = [sys.executable, str(ROOT / "tests" / "programs" / "misbehaving_server.py")]
FIRST = [sys.executable, str(ROOT / "docs" / "examples" / "first_server.py")]
V = "2025-06-18"


async def scrape(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    metrics = url.rsplit("/", 1)[0] + "/metrics"
    response = await trio.to_thread.run_sync(lambda: httpx2.get(metrics, timeout=10))
    assert response.status_code == 200
    return {name: samples for name, (_, samples) in parse_exposition(response.text).items()}


def value(samples: list[tuple[dict[str, str], float]], **labels: str) -> float:
    found = [v for have, v in samples if all(have.get(k) == w for k, w in labels.items())]
    assert len(found) == 1, (labels, samples)
    return found[0]


async def test_the_metrics_of_each_backend_are_served_with_the_servers_own() -> None:
    app = gateway(
        {
            "first": Backend(FIRST, options={"env": ENV, "versions": [V]}),
            "bad": Backend(MISBEHAVING, timeout=1, options={"env": ENV, "versions": [V]}),
        },
        backoff=0.1,
        wait=5,
    )
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(
            lambda task_status: app.serve_http(
                "127.0.0.1", 0, metrics_path="/metrics", task_status=task_status
            )
        )
        async with connect_http(url, versions=[V]) as client:
            for n in range(3):
                assert (await client.call_tool("first_add", {"a": n, "b": 1})).structuredContent == {
                    "result": n + 1
                }
            with pytest.raises(McpError, match="within 1 s"):
                await client.call_tool("bad_silent")
            with pytest.raises(McpError, match="was lost"):
                await client.call_tool("bad_exit")
            with trio.fail_after(10):  # (opened again, after 0.1 s)
                while value((await scrape(url))["mcp_upstream_up"], backend="bad") != 1:
                    await trio.sleep(0.05)
            with pytest.raises(McpError, match="Unknown tool"):  # (the upstream's own error)
                await client.call_tool("first_nothing")
            assert len(await client.list_all_tools()) == 7  # (a page of each backend)
            metrics = await scrape(url)
        nursery.cancel_scope.cancel()
    requests = metrics["mcp_upstream_requests_total"]
    call = {"method": "tools/call"}
    assert value(requests, backend="first", outcome="ok", **call) == 3
    assert value(requests, backend="bad", outcome="timeout", **call) == 1
    assert value(requests, backend="bad", outcome="lost", **call) == 1
    assert value(requests, backend="first", outcome="error", **call) == 1
    assert value(requests, backend="first", method="tools/list", outcome="ok") == 1
    durations = metrics["mcp_upstream_request_duration_seconds"]
    assert value(durations, backend="first", __sample__="count", **call) == 4
    assert value(durations, backend="bad", __sample__="count", **call) == 2
    assert 1.0 <= value(durations, backend="bad", __sample__="sum", **call) < 5
    up = metrics["mcp_upstream_up"]
    assert value(up, backend="first", revision=V) == value(up, backend="bad", revision=V) == 1
    reconnections = metrics["mcp_upstream_reconnections_total"]
    assert value(reconnections, backend="first") == 0 and value(reconnections, backend="bad") == 1
    assert value(metrics["mcp_upstream_notifications_dropped_total"], backend="bad") == 0
    served_durations = metrics["mcp_request_duration_seconds"]  # (the server's own, its tools known)
    assert value(served_durations, tool="first_add", __sample__="count") == 3
    assert value(served_durations, tool="bad_silent", __sample__="count") == 1
    assert value(served_durations, tool="_other", __sample__="count") == 1  # (first_nothing)
    served = metrics["mcp_requests_total"]
    assert value(served, transport="http", outcome="ok") >= 4


async def test_resource_updates_of_a_2026_07_28_backend_reach_the_listen_streams_over_http() -> None:
    app = gateway({"every": Backend(everything), "first": Backend(FIRST, options={"env": ENV})})
    watched = "test://every/watched-resource"
    async with trio.open_nursery() as nursery:
        (url,) = await nursery.start(
            lambda task_status: app.serve_http("127.0.0.1", 0, task_status=task_status)
        )
        async with connect_http(url) as client:
            assert client.protocol_version == "2026-07-28"
            asked = [watched, "greeting://first/Ada", "test://nobody/x"]
            async with client.listen(resource_uris=asked) as watching:
                assert watching.acknowledged == {"resourceSubscriptions": asked}
                await everything.notify_resource_updated("test://static-text")  # (not asked for)
                await everything.notify_resource_updated(WATCHED_URI)
                with trio.fail_after(5):
                    method, notice = await anext(watching)
                assert (method, notice.uri) == ("notifications/resources/updated", watched)
        nursery.cancel_scope.cancel()
