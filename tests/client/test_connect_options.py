"""The keyword options of connect(), connect_* and open_client at run time: an option a
function does not take is a TypeError naming it, the function and where it belongs (or what
it is a misspelling of), raised before anything is started or connected."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest
import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio._engine._session import Session, new_session
from mcp_trio.client import (
    ClientOptions,
    SessionOptions,
    connect,
    connect_http,
    connect_server,
    connect_stdio,
    connect_websocket,
    open_client,
)
from mcp_trio.server import Server
from mcp_trio.transports.http.client import HTTPClientChannel, HTTPClientOptions
from mcp_trio.transports.websocket import WebSocketClientOptions, open_websocket_client

# Nothing listens there, and no such program exists: reaching either is another error.
NOWHERE_HTTP = "http://127.0.0.1:9/mcp"
NOWHERE_WS = "ws://127.0.0.1:9/mcp"
NO_PROGRAM = "/nonexistent/mcp-server"


def server() -> Server:
    return Server("options", "1.0")


@pytest.mark.parametrize(
    ("target", "options", "message"),
    [
        (
            "https://example.invalid/mcp",
            {"ssl_context": None},
            "connect() got an unexpected keyword argument 'ssl_context': it is an option of the "
            "HTTP transport: pass http_options={'ssl_context': ...}",
        ),
        (
            "wss://example.invalid/mcp",
            {"headers": {}},
            "connect() got an unexpected keyword argument 'headers': it is an option of the "
            "WebSocket transport: pass websocket_options={'headers': ...}",
        ),
        (
            NOWHERE_HTTP,
            {"websocket_options": {}},
            "connect() got an unexpected keyword argument 'websocket_options': it is an option of "
            "connect_websocket, for a ws(s):// URL",
        ),
        (
            f"{NO_PROGRAM} --flag",
            {"max_page": 3},
            "connect() got an unexpected keyword argument 'max_page': did you mean 'max_pages'?",
        ),
        (
            [NO_PROGRAM],
            {"shutdown_grace": 1.0},
            "connect() got an unexpected keyword argument 'shutdown_grace': it is an option of "
            "open_stdio_client: start the process with it and pass process.channel to open_client",
        ),
        (
            [NO_PROGRAM],
            {"http_options": {}},
            "connect() got an unexpected keyword argument 'http_options': it is an option of "
            "connect_http, for an http(s):// URL",
        ),
    ],
)
def test_connect_names_a_misplaced_or_misspelled_option(
    target: Any, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        connect(target, **options)
    assert str(caught.value) == message


def test_connect_to_a_server_object_takes_client_options_only() -> None:
    with pytest.raises(TypeError, match=r"'env': it is an option of connect_stdio, for a command to start$"):
        connect(server(), env={"A": "1"})
    with pytest.raises(TypeError, match=r"'auth': it is an option of connect_http and connect_websocket"):
        connect(server(), auth=None)
    with pytest.raises(TypeError) as caught:
        connect(server(), timeout=5)
    assert str(caught.value) == (
        "connect() got an unexpected keyword argument 'timeout': the client's timeouts are "
        "default_timeout= (each request, in seconds) and connect_timeout= (the negotiation)"
    )
    with pytest.raises(TypeError) as caught:
        connect(NOWHERE_HTTP, timeout=5)
    assert str(caught.value) == (
        "connect() got an unexpected keyword argument 'timeout': it is an option of the HTTP transport: "
        "pass http_options={'timeout': ...}; the client's own timeouts are default_timeout= (each "
        "request, in seconds) and connect_timeout= (the negotiation)"
    )


async def test_each_connect_function_refuses_before_opening_anything() -> None:
    cases = [
        (
            connect_stdio(NO_PROGRAM, cache_namespaces="x"),  # type: ignore[call-arg]
            "connect_stdio() got an unexpected keyword argument 'cache_namespaces': "
            "did you mean 'cache_namespace'?",
        ),
        (
            connect_http(NOWHERE_HTTP, ssl_context=None),  # type: ignore[call-arg]
            "connect_http() got an unexpected keyword argument 'ssl_context': it is an option of the HTTP "
            "transport: pass http_options={'ssl_context': ...}",
        ),
        (
            connect_http(NOWHERE_HTTP, http_options={"ssl_contxt": None}),  # type: ignore[typeddict-unknown-key]
            "connect_http(): http_options has no option 'ssl_contxt': did you mean 'ssl_context'?",
        ),
        (
            connect_http(NOWHERE_HTTP, http_options={"default_timeout": 5}),  # type: ignore[typeddict-unknown-key]
            "connect_http(): http_options has no option 'default_timeout': it is an option of the client: "
            "pass it to connect_http() itself, not in http_options",
        ),
        (
            connect_websocket(NOWHERE_WS, legacy_fallback=False),  # type: ignore[call-arg]
            "connect_websocket() got an unexpected keyword argument 'legacy_fallback': it is an option of a "
            "network transport, given to connect_http / connect_websocket, in http_options",
        ),
        (
            connect_websocket(NOWHERE_WS, websocket_options={"origen": "x"}),  # type: ignore[typeddict-unknown-key]
            "connect_websocket(): websocket_options has no option 'origen': did you mean 'origin'?",
        ),
        (
            connect_server(server(), cwd="/"),  # type: ignore[call-arg]
            "connect_server() got an unexpected keyword argument 'cwd': it is an option of connect_stdio, "
            "for a command to start",
        ),
    ]
    for opening, message in cases:
        with trio.fail_after(5), pytest.raises(TypeError) as caught:
            async with opening:
                pass
        assert str(caught.value) == message


async def test_open_client_names_what_belongs_to_the_channel() -> None:
    ours, _theirs = open_memory_transport_pair()
    for options, message in [
        (
            {"ssl_context": None},
            "open_client() got an unexpected keyword argument 'ssl_context': it is an option of a network "
            "transport, given to the channel's opener (open_http_client, open_websocket_client)",
        ),
        (
            {"default_timeot": 3},
            "open_client() got an unexpected keyword argument 'default_timeot': "
            "did you mean 'default_timeout'?",
        ),
        (
            {"bogus": 1},
            "open_client() got an unexpected keyword argument 'bogus': "
            "see ClientOptions for the options of a client",
        ),
    ]:
        with trio.fail_after(5), pytest.raises(TypeError) as caught:
            async with open_client(ours, **options):
                pass
        assert str(caught.value) == message


async def test_the_options_given_right_still_connect() -> None:
    with trio.fail_after(5):
        async with connect(server(), default_timeout=5, max_pages=3, name="me") as client:
            assert client.max_pages == 3


def test_the_typed_options_are_those_the_functions_take() -> None:
    """The TypedDicts the checks read are the real parameters (a new one cannot be forgotten)."""
    http = set(inspect.signature(HTTPClientChannel.__init__).parameters) - {"self", "url"}
    assert set(HTTPClientOptions.__optional_keys__) == http
    websocket = set(inspect.signature(open_websocket_client).parameters) - {"url"}
    assert set(WebSocketClientOptions.__optional_keys__) == websocket
    session = set(inspect.signature(Session.__init__).parameters) | set(
        inspect.signature(new_session).parameters
    )
    assert set(SessionOptions.__optional_keys__) <= session
    assert set(SessionOptions.__optional_keys__) < set(ClientOptions.__optional_keys__)


class Tap(trio.abc.Channel[Any]):
    """Records every frame that passes, both ways."""

    def __init__(self, inner: Any, seen: list[tuple[str, bytes]]) -> None:
        self.inner, self.seen = inner, seen

    async def send(self, value: Any) -> None:
        self.seen.append(("out", value.data))
        await self.inner.send(value)

    async def receive(self) -> Any:
        frame = await self.inner.receive()
        self.seen.append(("in", frame.data))
        return frame

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_wrap_channel_puts_a_channel_of_the_users_between_the_session_and_its_transport() -> None:
    seen: list[tuple[str, bytes]] = []
    wrap = lambda channel: Tap(channel, seen)  # noqa: E731
    async with connect(server(), wrap_channel=wrap, versions=["2025-11-25"]) as client:
        await client.ping()
    messages = [(way, msgspec.json.decode(data)) for way, data in seen]
    assert [(way, m.get("method")) for way, m in messages] == [
        ("out", "initialize"),
        ("in", None),
        ("out", "notifications/initialized"),
        ("out", "ping"),
        ("in", None),
    ]
    assert messages[1][1]["result"]["protocolVersion"] == "2025-11-25"
