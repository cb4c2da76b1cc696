"""OpenTelemetry spans on both sides of a real Streamable HTTP session (the SDK's in-memory
exporter): the client's CLIENT span and the server's SERVER span share a trace, linked by the
W3C trace context the client puts in ``params._meta``; errors set the status.  And mcp_trio
imports, and says which extra to install, without opentelemetry."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcp_trio import INVALID_PARAMS, McpError
from mcp_trio.client import connect_http, connect_server
from mcp_trio.client.asks import CreateMessageParams, CreateMessageResult
from mcp_trio.client.results import TextContent
from mcp_trio.middleware import OpenTelemetry, RequestInfo
from mcp_trio.server import Context, Server
from tests._support.paths import ROOT


def exporter_and_provider() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def make_server(provider: TracerProvider, seen: list[RequestInfo] | None = None) -> Server:
    async def note(request: RequestInfo, call_next: Any) -> Any:
        if seen is not None:
            seen.append(request)
        return await call_next(request)

    server = Server("traced", "1", middleware=[OpenTelemetry(provider), note])

    @server.tool
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool
    async def fails() -> str:
        raise ValueError("tool trouble")

    @server.tool
    async def refuses() -> str:
        raise McpError(INVALID_PARAMS, "not like that")

    @server.tool
    async def ask(ctx: Context) -> str:
        answer = await ctx.sample("2+2?", max_tokens=5)
        return str(answer.content.text)

    return server


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0))
        yield urls[0]
        nursery.cancel_scope.cancel()


def one(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    found = [s for s in spans if s.name == name]
    assert len(found) == 1, [s.name for s in spans]
    return found[0]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
async def test_client_and_server_spans_share_a_trace_over_http(version: str) -> None:
    server_spans, server_provider = exporter_and_provider()
    client_spans, client_provider = exporter_and_provider()
    seen: list[RequestInfo] = []
    with trio.fail_after(10):
        async with serving(make_server(server_provider, seen)) as url:
            async with connect_http(
                url, versions=[version], middleware=[OpenTelemetry(client_provider)]
            ) as client:
                session_id = getattr(client.session.channel, "session_id", None)
                assert (await client.call_tool("add", {"a": 1, "b": 2})).structuredContent == {"result": 3}
    sent = one(client_spans.get_finished_spans(), "tools/call add")
    answered = one(server_spans.get_finished_spans(), "tools/call add")
    assert sent.kind is SpanKind.CLIENT and answered.kind is SpanKind.SERVER
    assert sent.context is not None and answered.context is not None
    assert answered.context.trace_id == sent.context.trace_id
    assert answered.parent is not None and answered.parent.span_id == sent.context.span_id
    assert answered.parent.is_remote
    # what travelled: the W3C key in params._meta
    call = next(r for r in seen if r.method == "tools/call")
    traceparent = call.meta["traceparent"]
    assert isinstance(traceparent, str)
    assert traceparent.split("-")[1:3] == [f"{sent.context.trace_id:032x}", f"{sent.context.span_id:016x}"]
    assert answered.attributes is not None and sent.attributes is not None
    assert answered.attributes["mcp.method.name"] == "tools/call"
    assert answered.attributes["gen_ai.tool.name"] == "add"
    assert answered.attributes["gen_ai.operation.name"] == "execute_tool"
    assert answered.attributes["mcp.protocol.version"] == version
    assert answered.attributes["jsonrpc.request.id"] == str(call.request_id)
    assert sent.attributes["gen_ai.tool.name"] == "add"
    if session_id is not None:  # (2026-07-28 has no sessions)
        assert answered.attributes["mcp.session.id"] == session_id == sent.attributes["mcp.session.id"]
    assert answered.status.status_code is StatusCode.UNSET


async def test_errors_set_the_span_status() -> None:
    server_spans, server_provider = exporter_and_provider()
    client_spans, client_provider = exporter_and_provider()
    with trio.fail_after(10):
        async with serving(make_server(server_provider)) as url:
            async with connect_http(url, middleware=[OpenTelemetry(client_provider)]) as client:
                assert (await client.call_tool("fails")).isError
                with pytest.raises(McpError):
                    await client.call_tool("refuses")
    failed = one(server_spans.get_finished_spans(), "tools/call fails")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "tool_error"
    for spans in (server_spans, client_spans):
        refused = one(spans.get_finished_spans(), "tools/call refuses")
        assert refused.status.status_code is StatusCode.ERROR
        assert refused.status.description == "not like that"
        assert refused.attributes is not None
        assert refused.attributes["error.type"] == refused.attributes["rpc.response.status_code"] == "-32602"


async def test_a_clients_answer_to_an_ask_is_a_server_span() -> None:
    _, server_provider = exporter_and_provider()
    client_spans, client_provider = exporter_and_provider()

    async def sampling(params: CreateMessageParams) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")

    with trio.fail_after(10):
        async with connect_server(
            make_server(server_provider),
            versions=["2025-11-25"],
            sampling=sampling,
            middleware=[OpenTelemetry(client_provider)],
        ) as client:
            assert (await client.call_tool("ask")).content[0].text == "4"  # type: ignore[union-attr]
    asked = one(client_spans.get_finished_spans(), "sampling/createMessage")
    assert asked.kind is SpanKind.SERVER
    assert one(client_spans.get_finished_spans(), "tools/call ask").kind is SpanKind.CLIENT


def test_without_opentelemetry_mcp_trio_imports_and_names_the_extra() -> None:
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry"] = None  # as if it were not installed
        import mcp_trio, mcp_trio.server, mcp_trio.client
        from mcp_trio.middleware import AccessLog, OpenTelemetry
        AccessLog()
        try:
            OpenTelemetry()
        except ImportError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True
    )
    assert "pip install 'mcp-trio[otel]'" in done.stdout
