"""Canaries for the private APIs of h11 and hypercorn that the HTTP doors use (``_compat_h11``,
``_compat_hypercorn``): each is exercised against the installed release, so that a release that
changes their shape fails here, by name, before anything else notices. pyproject.toml bounds both
below their next minor release; raising a bound starts with these tests."""

from __future__ import annotations

import inspect
from functools import partial
from typing import Any

import h11
import httpx2 as httpx
import pytest
import trio

from mcp_trio.transports.http.doors import _compat_hypercorn
from mcp_trio.transports.http.doors._compat_h11 import parsed_request

HEADS = [
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:3001\r\nContent-Type: application/json\r\n"
    b"Content-Length: 2\r\nMcp-Session-Id: abc\r\n\r\n",
    b"GET /mcp?x=1 HTTP/1.1\r\nhost: a\r\nAccept: text/event-stream\r\nX-Dup: 1\r\nx-dup: 2\r\n\r\n",
    b"DELETE /mcp HTTP/1.0\r\nConnection: close\r\n\r\n",
]


@pytest.mark.parametrize("head", HEADS)
def test_h11_parsed_request_is_the_event_h11_makes_of_the_same_head(head: bytes) -> None:
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(head)
    expected = connection.next_event()
    assert isinstance(expected, h11.Request)
    triples = [
        (raw, name, value)
        for (name, value), (raw, _) in zip(expected.headers, expected.headers.raw_items(), strict=True)
    ]
    made = parsed_request(expected.method, triples, expected.target, expected.http_version)
    assert made == expected and type(made) is h11.Request
    assert made.headers.raw_items() == expected.headers.raw_items()
    assert list(made.headers) == list(expected.headers)


def test_hypercorn_keeps_the_private_members_the_door_uses() -> None:
    from hypercorn.trio.task_group import TaskGroup
    from hypercorn.trio.tcp_server import TCPServer

    for name in ("_read_data", "_initiate_server_close", "protocol_send"):
        assert inspect.iscoroutinefunction(getattr(TCPServer, name)), name
    init = inspect.getsource(TCPServer.__init__)
    for attribute in ("self.idle_task =", "self.send_lock ="):
        assert attribute in init, f"TCPServer.__init__ no longer sets {attribute}"
    # run(): the task group is set before the protocol (the protocol setter reads it), the idle
    # timer is restarted with (task group, action) and the reading is _read_data
    run = inspect.getsource(TCPServer.run)
    steps = ("self._task_group = task_group", "self.protocol = ", "self.idle_task.restart(self._task_group")
    places = [run.find(step) for step in steps]
    assert -1 not in places and places == sorted(places), dict(zip(steps, places, strict=True))
    assert "await self._read_data()" in run
    assert "self._nursery" in inspect.getsource(TaskGroup)
    assert inspect.iscoroutinefunction(TaskGroup.spawn_app)
    assert list(inspect.signature(TCPServer.__init__).parameters) == [
        "self",
        "app",
        "config",
        "context",
        "state",
        "stream",
    ]


async def test_the_hypercorn_door_takes_its_fast_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request through the hypercorn door: hypercorn hands the app trio memory channels (what
    ``next_message`` and ``put_now`` read without a trip through the scheduler), the idle timer
    and the connection server's hooks are the compat module's."""
    from mcp_trio.transports.http.doors.asgi import serve_hypercorn

    seen: dict[str, Any] = {}
    original_put_now = _compat_hypercorn.put_now

    async def recording_put_now(spawn_app: Any, *args: Any) -> Any:
        put = await original_put_now(spawn_app, *args)
        seen["put"] = put.__name__
        return put

    monkeypatch.setattr(_compat_hypercorn, "put_now", recording_put_now)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        seen["receive"] = type(getattr(receive, "__self__", None))
        message = await _compat_hypercorn.next_message(receive)
        seen["body"] = message.get("body")
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(serve_hypercorn, app, "127.0.0.1", 0))  # type: ignore[arg-type]
        async with httpx.AsyncClient() as client:
            response = await client.post(urls[0] + "/mcp", content=b"{}")
        nursery.cancel_scope.cancel()
    assert response.status_code == 200 and response.content == b"ok"
    assert seen == {"put": "put_now", "receive": trio.MemoryReceiveChannel, "body": b"{}"}
