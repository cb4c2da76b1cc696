"""A user's file: every public decorator of the server and the Context calls, typed.

Checked by mypy --strict (tests/typing/test_client_typing.py); never run.  Each
``assert_type`` pins a type: a decorated function keeps its own (calling it checks
its parameters and gives its return type).  Each ``# type: ignore[...]`` pins a
mistake the checker must catch (``warn_unused_ignores`` fails the check if it
stops catching it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict, assert_type

import msgspec

from mcp_trio.client import Client, connect_server
from mcp_trio.client.asks import (
    CreateMessageParams,
    CreateMessageResult,
    ElicitParams,
    ElicitResult,
    Root,
)
from mcp_trio.client.results import TextContent
from mcp_trio.server import (
    AssistantMessage,
    Context,
    Elicited,
    HttpRequest,
    HttpResponse,
    Image,
    LogLevel,
    Message,
    MessageContent,
    Route,
    Server,
    ServerStatistics,
    UserMessage,
    prometheus_text,
)

server = Server("typed", "1.0", instructions="a typed server")

# ------------------------------------------------------------------------ tools


@server.tool
async def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


@server.tool(name="multiply", description="Multiply.", annotations={"readOnlyHint": True})
def mul(a: float, b: float) -> float:
    return a * b


@server.tool(on_loop=True, replace=True)
async def with_context(text: str, ctx: Context) -> str:
    await ctx.report_progress(1, 2, "half")
    return text


async def tools(ctx: Context) -> None:
    assert_type(await add(1), int)
    assert_type(await add(1, b=3), int)
    assert_type(mul(2.0, 3.0), float)
    assert_type(await with_context("x", ctx), str)
    await with_context("x", ctx=None)  # type: ignore[arg-type]
    await add("one")  # type: ignore[arg-type]
    mul(1.0)  # type: ignore[call-arg]


server.tool(name=5)  # type: ignore[call-overload]
server.tool(mul, name="again")  # type: ignore[call-overload]

# ---------------------------------------------------------------------- prompts


@server.prompt
def greet(name: str, times: int = 1) -> str:
    """Greet someone."""
    return f"hello {name}" * times


@server.prompt(name="farewell", title="Farewell")
async def bye(name: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "text", "text": f"bye {name}"}}]


@server.prompt
def talk(topic: str) -> list[Message]:
    return [UserMessage(f"explain {topic}"), AssistantMessage(Image(b"")), Message("x", role="assistant")]


async def prompts() -> None:
    assert_type(greet("ada"), str)
    assert_type(await bye("ada"), list[dict[str, Any]])
    assert_type(talk("trio"), list[Message])
    assert_type(talk("trio")[0].role, Literal["user", "assistant"])
    assert_type(UserMessage("a").content, MessageContent)
    UserMessage({"type": "resource_link", "uri": "notes://a", "name": "a"})
    greet(5)  # type: ignore[arg-type]
    UserMessage(5)  # type: ignore[arg-type]
    Message("x", role="system")  # type: ignore[arg-type]
    AssistantMessage("x", role="user")  # type: ignore[call-arg]


server.prompt(title=1)  # type: ignore[call-overload]

# -------------------------------------------------------------------- resources


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    return f"note {name}"


@server.resource("data://blob", description="Some bytes.")
async def blob() -> bytes:
    return b"\x00"


async def resources() -> None:
    assert_type(note("x"), str)
    assert_type(await blob(), bytes)
    note()  # type: ignore[call-arg]


server.resource(mime_type="text/plain")  # type: ignore[call-arg]


@server.resource  # type: ignore[arg-type]
def no_uri() -> str:
    return ""


# ------------------------------------------------------------------ completions


@server.completion("greet", "name")
def names(value: str, context_arguments: dict[str, str]) -> list[str]:
    return [n for n in ("ada", "alan") if n.startswith(value)]


@server.completion("notes://{name}", "name", on_loop=True)
async def note_names(value: str, context_arguments: dict[str, str]) -> list[str]:
    return []


async def completions() -> None:
    assert_type(names("a", {}), list[str])
    assert_type(await note_names("a", {}), list[str])


server.completion("greet")  # type: ignore[call-arg]

# ---------------------------------------------------------------------- context


@dataclass
class Booking:
    seats: int
    name: str = ""


class Contact(TypedDict):
    email: str


class Preference(msgspec.Struct):
    colour: Literal["red", "blue"]


async def context_calls(ctx: Context) -> None:
    booking = await ctx.elicit("How many seats?", Booking)
    assert_type(booking, Elicited[Booking])
    assert_type(booking.action, Literal["accept", "decline", "cancel"])
    assert_type(booking.data, Booking | None)
    if booking.data is not None:
        assert_type(booking.data.seats, int)
    assert_type(await ctx.elicit("Email?", Contact), Elicited[Contact])
    assert_type(await ctx.elicit("Colour?", Preference, timeout=10), Elicited[Preference])
    assert_type(await ctx.elicit("Raw?", {"type": "object", "properties": {}}), Any)
    await ctx.elicit("Seats?", "Booking")  # type: ignore[call-overload]

    level: LogLevel = "warning"
    assert_type(await ctx.log(level, {"k": "v"}, logger="db"), None)
    await ctx.log("info", "text")
    await ctx.log("loud", "text")  # type: ignore[arg-type]
    bad_level: LogLevel = "verbose"  # type: ignore[assignment]
    print(bad_level)
    await ctx.debug("d")
    await ctx.warning("w")
    assert_type(await ctx.report_progress(0.5, 1.0), None)
    await ctx.report_progress("half")  # type: ignore[arg-type]
    assert_type(ctx.protocol_version, str)
    assert_type(ctx.client_capabilities, dict[str, Any])
    assert_type(ctx.progress_token, int | str | None)
    assert_type(ctx.request_id, int | str)


# ------------------------------------------------- the client's side, in process


async def sampling(params: CreateMessageParams) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="4"), model="m")


async def elicitation(params: ElicitParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"seats": 2})


async def in_process() -> None:
    async with connect_server(
        server, sampling=sampling, elicitation=elicitation, roots=[Root(uri="file:///")]
    ) as client:
        assert_type(client, Client)
        assert_type((await client.call_tool("add", {"a": 1})).isError, bool)
    async with connect_server(server, sampling=elicitation):  # type: ignore[arg-type]
        pass


# ----------------------------------------------------------------- HTTP routes


@server.route("/healthz")
def healthz() -> str:
    return "ok"


@server.route("/echo", methods=("POST",), auth=True)
async def echo_route(request: HttpRequest) -> dict[str, str]:
    return {"body": request.body.decode(), "query": request.query}


@server.route("/ready", on_loop=True)
def ready_route() -> HttpResponse:
    return HttpResponse("ready", status=200, headers={"cache-control": "no-store"})


assert_type(healthz(), str)
assert_type(server.statistics(), ServerStatistics)
assert_type(server.statistics().requests_ok, int)
assert_type(prometheus_text(server), str)
extra_routes = {"/bytes": Route(lambda request: request.body, methods=("POST",))}


@server.route("/wrong")  # type: ignore[type-var]
def wrong_route(a: int, b: int) -> str:
    return "two parameters: not a route handler"


async def serve_with_routes() -> None:
    assert_type(await echo_route(HttpRequest("POST", {})), dict[str, str])
    await server.serve_http(routes=extra_routes, metrics_path="/metrics")
