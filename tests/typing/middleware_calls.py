"""A user's file: middleware written and installed on both sides, typed.

Checked by mypy --strict (tests/typing/test_client_typing.py); never run.  Each
``# type: ignore[...]`` pins a mistake the checker must catch.
"""

from __future__ import annotations

import logging
from typing import Literal, assert_type

import msgspec

from mcp_trio import McpError, RequestContext
from mcp_trio.client import ClientOptions, connect_http, connect_server
from mcp_trio.middleware import (
    AccessLog,
    CallNext,
    ErrorTranslation,
    MethodTiming,
    Middleware,
    OpenTelemetry,
    RateLimit,
    RequestInfo,
    ResponseSizeLimit,
    Result,
    Timing,
)
from mcp_trio.server import Server


class Audit:
    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        assert_type(request.method, str)
        assert_type(request.name, str | None)
        assert_type(request.request_id, int | str | None)
        assert_type(request.session_id, str | None)
        assert_type(request.side, Literal["server", "client"])
        assert_type(request.context, RequestContext | None)
        if isinstance(request.params, msgspec.Struct):
            request = msgspec.structs.replace(request, name="renamed")
        return await call_next(request)


async def function_middleware(request: RequestInfo, call_next: CallNext) -> Result:
    return {"content": []} if request.name == "stub" else await call_next(request)


class NotOne:
    async def __call__(self, request: RequestInfo) -> Result:
        return None


timing = Timing()
stack: list[Middleware] = [
    Audit(),
    function_middleware,
    AccessLog(logging.getLogger("mine")),
    timing,
    RateLimit(5.0, 10, per="principal"),
    RateLimit(5.0, 10, per="address"),
    RateLimit(1.0, per=lambda request: request.session_id),
    ErrorTranslation({KeyError: -32602, ValueError: lambda exc: McpErrorFactory(exc)}),
    ResponseSizeLimit(1 << 20),
    OpenTelemetry(),
]
server = Server("mw", "1", middleware=stack)
server.add_middleware(Audit(), outermost=True)
server.add_middleware(NotOne())  # type: ignore[arg-type]
RateLimit(1.0, per="ip")  # type: ignore[arg-type]
stats = timing.stats()
assert_type(stats, dict[str, MethodTiming])
assert_type(stats["tools/call"].mean_ms, float)


def McpErrorFactory(exc: Exception) -> McpError:
    return McpError(-32001, str(exc))


async def clients() -> None:
    async with connect_server(server, middleware=[Audit(), OpenTelemetry()]):
        pass
    async with connect_http("http://localhost/mcp", middleware=stack):
        pass
    options: ClientOptions = {"middleware": [AccessLog()]}
    print(options)
    async with connect_server(server, middleware=Audit()):  # type: ignore[arg-type]
        pass
