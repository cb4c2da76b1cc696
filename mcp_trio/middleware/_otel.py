"""OpenTelemetry spans for MCP requests, as the semantic conventions for MCP name them.

Needs ``opentelemetry-api`` (the ``otel`` extra), imported only when an
:class:`OpenTelemetry` is made; spans go wherever the application's SDK sends
them (nowhere without one).

Rules:

* One span per request answered, of kind SERVER (on a server for its client's
  requests; on a client for its server's asks), and on a client one span of
  kind CLIENT per request it sends (a multi-round request: one per round).
* The trace context travels in the request's ``params._meta``, under the W3C
  Trace Context keys ``traceparent`` and ``tracestate`` (written and read by
  the application's text map propagator, W3C by default): the sending side
  injects it, the answering side takes it as the parent of its span.
* The span is named ``{mcp.method.name} {target}``, the target being the tool
  or prompt name, else ``{mcp.method.name}``; attributes: ``mcp.method.name``,
  ``mcp.session.id``, ``mcp.protocol.version``, ``jsonrpc.request.id``,
  ``mcp.resource.uri``, ``gen_ai.tool.name`` and ``gen_ai.operation.name``
  (``execute_tool``), ``gen_ai.prompt.name``.
* A JSON-RPC error sets the span's status to ERROR, ``error.type`` and
  ``rpc.response.status_code`` to its code; another exception sets
  ``error.type`` to its class name (and is recorded on the span); a tool result with
  ``isError: true`` sets ``error.type`` to ``tool_error``.  A cancelled
  request ends its span with ``error.type`` ``cancelled``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import trio

from .._exceptions import McpError
from .._version import __version__
from ._base import CallNext, RequestInfo, Result, name_of

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["OpenTelemetry"]

_EXTRA_HINT = (
    "mcp_trio.middleware.OpenTelemetry needs the OpenTelemetry API: "
    "pip install 'mcp-trio[otel]' (or opentelemetry-api)"
)


class OpenTelemetry:
    """A span per request on both sides (see the module's rules).

    Install the same object as a server's middleware and as a client's
    (``middleware=[OpenTelemetry()]``): on a client it also traces the
    requests sent.

    Args:
        tracer_provider: Where spans go (default: the global one).

    Raises:
        ImportError: ``opentelemetry-api`` is not installed (the ``otel`` extra).
    """

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        try:
            from opentelemetry import propagate, trace
        except ImportError as exc:
            raise ImportError(_EXTRA_HINT) from exc
        self._trace = trace
        self._propagate = propagate
        self.tracer: Tracer = trace.get_tracer("mcp_trio", __version__, tracer_provider=tracer_provider)

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        trace = self._trace
        meta = request.meta
        parent = self._propagate.extract(meta) if "traceparent" in meta else None
        attributes = _attributes(request.method, request.name)
        if request.session_id is not None:
            attributes["mcp.session.id"] = request.session_id
        if request.request_id is not None:
            attributes["jsonrpc.request.id"] = str(request.request_id)
        if request.context is not None:
            attributes["mcp.protocol.version"] = request.context.version
        with self.tracer.start_as_current_span(
            _span_name(request.method, request.name),
            context=parent,
            kind=trace.SpanKind.SERVER,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                result = await call_next(request)
            except BaseException as exc:
                self._failed(span, exc)
                raise
            if request.method == "tools/call" and _is_error(result):
                span.set_attribute("error.type", "tool_error")
                span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool reported an error"))
            return result

    @contextmanager
    def sending(self, method: str, params: dict[str, Any], session_id: str | None) -> Iterator[None]:
        """The CLIENT span of one request sent; injects its context into ``params["_meta"]``."""
        attributes = _attributes(method, name_of(method, params))
        if session_id is not None:
            attributes["mcp.session.id"] = session_id
        with self.tracer.start_as_current_span(
            _span_name(method, name_of(method, params)),
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            meta = params.get("_meta")
            carrier: dict[str, str] = {}
            self._propagate.inject(carrier)
            params["_meta"] = {**meta, **carrier} if isinstance(meta, Mapping) else carrier
            try:
                yield
            except BaseException as exc:
                self._failed(span, exc)
                raise

    def _failed(self, span: Span, exc: BaseException) -> None:
        trace = self._trace
        if isinstance(exc, trio.Cancelled):
            span.set_attribute("error.type", "cancelled")
            return
        if isinstance(exc, McpError):
            span.set_attribute("error.type", str(exc.code))
            span.set_attribute("rpc.response.status_code", str(exc.code))
            span.set_status(trace.Status(trace.StatusCode.ERROR, exc.message))
            return
        span.set_attribute("error.type", type(exc).__qualname__)
        if isinstance(exc, Exception):
            span.record_exception(exc)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc) or type(exc).__name__))


def _attributes(method: str, name: str | None) -> dict[str, str]:
    attributes = {"mcp.method.name": method}
    if name is not None:
        if method == "tools/call":
            attributes["gen_ai.tool.name"] = name
            attributes["gen_ai.operation.name"] = "execute_tool"
        elif method == "prompts/get":
            attributes["gen_ai.prompt.name"] = name
        else:
            attributes["mcp.resource.uri"] = name
    return attributes


def _span_name(method: str, name: str | None) -> str:
    # (a resource URI is not a low-cardinality target: the conventions leave it out of the name)
    return f"{method} {name}" if name is not None and method != "resources/read" else method


def _is_error(result: object) -> bool:
    if isinstance(result, dict):
        return result.get("isError") is True
    return getattr(result, "isError", None) is True
