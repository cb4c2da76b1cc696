"""OpenTelemetry: a span per request on both sides of a Streamable HTTP session, in one trace.

The spans go to the SDK's in-memory exporter here (``pip install opentelemetry-sdk``); an
application sends them to its collector instead (OTLP, the console ...).
"""

from functools import partial

import trio
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from mcp_trio.client import connect_http
from mcp_trio.middleware import OpenTelemetry
from mcp_trio.server import Server

spans = InMemorySpanExporter()
provider = TracerProvider()  # (an application sets it globally: trace.set_tracer_provider)
provider.add_span_processor(SimpleSpanProcessor(spans))

server = Server("traced", "1.0", middleware=[OpenTelemetry(provider)])


@server.tool
async def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


async def main() -> None:
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0))
        async with connect_http(urls[0], middleware=[OpenTelemetry(provider)]) as client:
            await client.call_tool("add", {"a": 2, "b": 3})
        nursery.cancel_scope.cancel()
    finished = {(s.name, s.kind.name): s for s in spans.get_finished_spans()}
    sent, answered = finished["tools/call add", "CLIENT"], finished["tools/call add", "SERVER"]
    for span in (sent, answered):
        attributes = span.attributes or {}
        print(
            f"{span.kind.name:<6} {span.name}: mcp.method.name={attributes['mcp.method.name']}, "
            f"gen_ai.tool.name={attributes['gen_ai.tool.name']}"
        )
    assert sent.context is not None and answered.context is not None and answered.parent is not None
    print("same trace:", answered.context.trace_id == sent.context.trace_id)
    print("server span's parent is the client span:", answered.parent.span_id == sent.context.span_id)


trio.run(main)
