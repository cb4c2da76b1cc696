"""Registration-time checks and how handlers run: sync handlers in worker
threads, duplicate names, templates against signatures, prompt argument types."""

from __future__ import annotations

import logging
import threading
import time
from enum import Enum
from typing import Literal

import pytest
import trio

from mcp_trio import McpError
from mcp_trio.server import Server
from tests._support.server import connected, text_of


async def test_a_blocking_sync_tool_does_not_hold_up_the_session() -> None:
    server = Server("s")
    threads: list[str] = []

    @server.tool
    def slow() -> str:
        threads.append(threading.current_thread().name)
        time.sleep(0.6)
        return "slow done"

    @server.tool
    async def quick() -> str:
        return "quick"

    async with connected(server, "2025-11-25") as client:
        times: dict[str, float] = {}
        start = trio.current_time()

        async def call(name: str) -> None:
            result = await client.request("tools/call", {"name": name, "arguments": {}})
            times[name] = trio.current_time() - start
            assert text_of(result) == f"{name} done" if name == "slow" else "quick"

        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "slow")
                await trio.sleep(0.05)
                nursery.start_soon(call, "quick")
    assert times["quick"] < 0.4 < times["slow"]
    assert threads and threads[0] != threading.main_thread().name


async def test_on_loop_keeps_a_sync_tool_on_the_event_loop() -> None:
    server = Server("s")
    seen: list[bool] = []

    @server.tool(on_loop=True)
    def here() -> str:
        seen.append(threading.current_thread() is threading.main_thread())
        return "ok"

    @server.resource("test://where")
    def where() -> str:
        return threading.current_thread().name

    @server.prompt
    def greeting() -> str:
        return threading.current_thread().name

    async with connected(server, "2025-11-25") as client:
        with trio.fail_after(5):
            await client.request("tools/call", {"name": "here", "arguments": {}})
            read = await client.request("resources/read", {"uri": "test://where"})
            prompt = await client.request("prompts/get", {"name": "greeting"})
    assert seen == [True]
    main = threading.main_thread().name
    assert read.contents[0].text != main and prompt.messages[0].content.text != main


async def test_the_sync_limiter_bounds_the_worker_threads() -> None:
    server = Server("s", sync_limiter=trio.CapacityLimiter(1))
    running = []
    overlap = []

    @server.tool
    def work() -> str:
        running.append(1)
        overlap.append(len(running))
        time.sleep(0.05)
        running.pop()
        return "ok"

    async with connected(server, "2025-11-25") as client:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                for _ in range(4):
                    nursery.start_soon(client.request, "tools/call", {"name": "work", "arguments": {}})
    assert overlap == [1, 1, 1, 1]


def test_a_duplicate_name_raises_unless_replace() -> None:
    server = Server("s")

    @server.tool
    def one() -> str:
        return "1"

    with pytest.raises(ValueError, match=r"a tool named 'one' is already registered.*replace=True"):
        server.tool(name="one")(lambda: "2")
    server.tool(name="one", replace=True)(lambda: "2")

    @server.prompt
    def p() -> str:
        return "p"

    with pytest.raises(ValueError, match="a prompt named 'p'"):
        server.prompt(p)

    @server.resource("test://r")
    def r() -> str:
        return "r"

    with pytest.raises(ValueError, match="a resource 'test://r' is already registered"):
        server.resource("test://r")(r)
    server.resource("test://r", replace=True)(r)


def test_a_resource_without_its_uri_is_an_error_naming_the_function() -> None:
    server = Server("s")

    def notes() -> str:
        return ""

    with pytest.raises(TypeError, match=r"needs the resource's URI first.*def notes"):
        server.resource(notes)  # type: ignore[arg-type]


def test_template_variables_must_match_the_handler() -> None:
    server = Server("s")

    def by_title(title: str) -> str:
        return title

    with pytest.raises(
        TypeError,
        match=r"'notes://\{name\}'.*by_title\(\) has no parameter for template "
        r"variable\(s\) name \(its parameters: title\)",
    ):
        server.resource("notes://{name}")(by_title)

    def two(name: str, extra: str) -> str:
        return name

    with pytest.raises(TypeError, match=r"requires extra, which the URI does not supply"):
        server.resource("notes://{name}")(two)
    with pytest.raises(TypeError, match=r"'notes://all'.*requires name"):
        server.resource("notes://all")(two)

    def fine(name: str, extra: str = "x") -> str:
        return name

    server.resource("notes://{name}")(fine)


def test_an_unsupported_parameter_type_names_the_parameter() -> None:
    server = Server("s")

    def tool(count: int, lock: threading.Lock) -> str:  # type: ignore[valid-type]
        return ""

    with pytest.raises(TypeError, match=r"tool function .*tool.*parameter 'lock'.*supported: str, int"):
        server.tool(tool)


class Color(Enum):
    RED = "red"
    BLUE = "blue"


async def test_prompt_arguments_are_converted_to_their_types() -> None:
    server = Server("s")
    got: list[object] = []

    @server.prompt
    def shaped(
        count: int,
        ratio: float,
        loud: bool,
        color: Color,
        mode: Literal["a", "b"] = "a",
        note: str = "",
    ) -> str:
        """A prompt.

        Args:
            count: How many.
        """
        got.extend([count, ratio, loud, color, mode, note])
        return "ok"

    async with connected(server, "2025-11-25") as client:
        with trio.fail_after(5):
            listed = await client.request("prompts/list", {})
            (prompt,) = listed.prompts
            assert [a.name for a in prompt.arguments] == [
                "count",
                "ratio",
                "loud",
                "color",
                "mode",
                "note",
            ]
            assert [a.name for a in prompt.arguments if a.required is True] == [
                "count",
                "ratio",
                "loud",
                "color",
            ]
            assert prompt.arguments[0].description == "How many."
            await client.request(
                "prompts/get",
                {
                    "name": "shaped",
                    "arguments": {
                        "count": "5",
                        "ratio": "0.5",
                        "loud": "true",
                        "color": "blue",
                        "mode": "b",
                        "note": "7",
                    },
                },
            )
            assert got == [5, 0.5, True, Color.BLUE, "b", "7"]
            with pytest.raises(McpError) as caught:
                await client.request(
                    "prompts/get",
                    {
                        "name": "shaped",
                        "arguments": {"count": "five", "ratio": "1", "loud": "no", "color": "red"},
                    },
                )
    assert caught.value.code == -32602
    assert "Invalid arguments for prompt shaped" in caught.value.message and "count" in caught.value.message


def test_decorator_misuse_is_named() -> None:
    server = Server("s")
    with pytest.raises(TypeError, match=r"write @server.tool\(name='add'\), not @server.tool\('add'\)"):
        server.tool("add")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"write @server.prompt\(name='p'\)"):
        server.prompt("p")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"@server.tool decorates a function, not 3"):
        server.tool()(3)  # type: ignore[type-var]


async def test_arguments_of_a_hand_written_input_schema_are_validated() -> None:
    server = Server("s")
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "count": {"type": "integer", "minimum": 1}},
        "required": ["name"],
        "additionalProperties": False,
    }

    @server.tool(input_schema=schema)
    async def order(arguments: dict[str, object]) -> str:
        return f"ordered {arguments}"

    async with connected(server, "2025-11-25") as client:
        with trio.fail_after(5):
            ok = await client.request(
                "tools/call", {"name": "order", "arguments": {"name": "tea", "count": 2}}
            )
            low = await client.request(
                "tools/call", {"name": "order", "arguments": {"name": "tea", "count": 0}}
            )
            missing = await client.request("tools/call", {"name": "order", "arguments": {}})
    assert text_of(ok) == "ordered {'name': 'tea', 'count': 2}"
    assert low.isError and text_of(low).startswith("Invalid arguments for tool order: $.count: 0 is")
    assert missing.isError
    assert text_of(missing) == "Invalid arguments for tool order: $.name: missing required property"

    async with connected(server, "2025-03-26") as client:
        with trio.fail_after(5), pytest.raises(McpError) as caught:
            await client.request("tools/call", {"name": "order", "arguments": {"name": 3}})
    assert caught.value.code == -32602 and "$.name: 3 is not of type" in caught.value.message


def test_an_input_schema_that_is_not_json_schema_is_refused() -> None:
    server = Server("s")
    with pytest.raises(ValueError, match="tool 'bad': input_schema is not a valid JSON Schema"):
        server.tool(name="bad", input_schema={"type": "no-such-type"})(lambda arguments: "")


def test_without_the_validator_hand_written_input_schemas_are_said_once_below_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A base install is quiet: the quick-start server registers such tools and must not greet
    # its user with a warning about an extra; the first says so at INFO, the others at DEBUG.
    from mcp_trio import _jsonschema
    from mcp_trio.server import _tools

    monkeypatch.setattr(_jsonschema, "jsonschema_rs", None)
    monkeypatch.setattr(_tools, "_told_unchecked", False)
    caplog.set_level(logging.DEBUG, logger="mcp_trio.server")
    server = Server("quiet")
    for name in ("first", "second"):
        server.tool(name=name, input_schema={"type": "object"})(lambda arguments: "ok")
    said = [r for r in caplog.records if "input_schema arguments are not checked" in r.getMessage()]
    assert [r.levelno for r in said] == [logging.INFO, logging.DEBUG]
    assert "tool first" in said[0].getMessage() and "mcp-trio[validation]" in said[0].getMessage()


class _Greeter:
    def greet(self, name: str) -> str:
        return f"hello {name}"


@pytest.mark.parametrize("what", ["tool", "prompt"])
def test_registrations_that_cannot_mean_what_they_say_are_refused_with_the_fix(what: str) -> None:
    server = Server("refusing")
    register = getattr(server, what)
    with pytest.raises(
        ValueError, match=rf"a lambda has no name for the {what}: give one, server\.{what}\(name="
    ):
        register(lambda text: text)
    register(name="echo")(lambda text: text)  # (named: fine)
    with pytest.raises(TypeError, match=r"not the class _Greeter: register a method of an instance"):
        register(_Greeter)
    with pytest.raises(TypeError, match=rf"greet takes self .*server\.{what}\(instance\.greet\)"):
        register(_Greeter.greet)
    register(_Greeter().greet)  # (bound: fine)

    def search(query: str, ctx: dict) -> str:  # type: ignore[type-arg]
        return query

    with pytest.raises(
        TypeError, match=r"parameter ctx of search is not annotated Context: write ctx: Context"
    ):
        register(search)
    names = server.tool_names() if what == "tool" else server.prompt_names()
    assert names == ["echo", "greet"]  # nothing refused was registered


def test_a_resource_may_be_a_lambda_but_not_a_class_or_an_unbound_method() -> None:
    server = Server("refusing")
    server.resource("note://a")(lambda: "a")  # (a resource is named by its URI)
    with pytest.raises(TypeError, match="not the class _Greeter"):
        server.resource("note://b")(_Greeter)
    with pytest.raises(TypeError, match=r"greet takes self"):
        server.resource("note://{name}")(_Greeter.greet)
