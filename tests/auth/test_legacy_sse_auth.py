"""OAuth behind the legacy HTTP+SSE endpoints, and the token of a background task.

A protected server on 127.0.0.1 (both HTTP front doors) with the example
authorization server issuing real JWT access tokens: the POSTed messages carry
the token their POST was authorized with, so handlers read it as ``ctx.auth``;
and a tool call running as a task (2025-11-25 tasks) keeps its token after the
``tools/call`` was answered, without it showing in ``tasks/get`` or ``tasks/list``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import msgspec
import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio import open_session
from mcp_trio.auth.server import JWTVerifier, ResourceServer
from mcp_trio.client import open_client
from mcp_trio.server import Context, Server
from mcp_trio.transports.http.client import open_http_client, open_legacy_sse_client
from tests._support.doors import DOORS

TASKS_VERSION = "2025-11-25"


class Gate:
    """Lets the test decide when the background tool reads ``ctx.auth``."""

    def __init__(self) -> None:
        self.release = trio.Event()


def make_server(gate: Gate) -> Server:
    server = Server("protected-legacy", "1")

    @server.tool
    async def whoami(ctx: Context) -> str:
        "Who the token speaks for."
        return f"{ctx.auth.subject}:{' '.join(sorted(ctx.auth.scopes))}"

    @server.tool(task_support="optional")
    async def later(ctx: Context) -> str:
        "Reads ctx.auth once its request has been answered (as a task)."
        await gate.release.wait()
        return "none" if ctx.auth is None else f"{ctx.auth.subject}:{ctx.auth.client_id}"

    return server


@asynccontextmanager
async def protected(
    authorization_server: AuthorizationServer, front_door: str, gate: Gate
) -> AsyncIterator[str]:
    """A protected server with the legacy endpoints too; its Streamable HTTP URL."""
    issuer = authorization_server.issuer
    assert issuer is not None
    auth = ResourceServer(
        None,
        authorization_servers=[issuer],
        verifier=JWTVerifier(issuer=issuer),
        required_scopes=["mcp"],
    )
    serve = partial(
        make_server(gate).serve_http,
        "127.0.0.1",
        0,
        front_door=front_door,
        legacy_sse=True,
        auth=auth,
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve)
        yield urls[0]
        nursery.cancel_scope.cancel()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("front_door", DOORS)
async def test_legacy_messages_carry_the_token(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    async with protected(authorization_server, front_door, Gate()) as url:
        sse = url.replace("/mcp", "/sse")
        token = authorization_server.issue_access_token(
            subject="ada", client_id="app", scopes=["mcp"], resource=url
        )
        with trio.fail_after(10):
            async with open_legacy_sse_client(sse, headers=bearer(token)) as channel:
                async with open_client(channel) as client:
                    assert (await client.call_tool("whoami")).content[0].text == "ada:mcp"
                    assert (await client.call_tool("whoami")).content[0].text == "ada:mcp"
                # Each answered request's token is forgotten at once.
            with pytest.raises(ConnectionError, match="401"):
                async with open_legacy_sse_client(sse):
                    pass


@asynccontextmanager
async def tasks_session(url: str, transport: str, token: str) -> AsyncIterator[Any]:
    """A 2025-11-25 client session over ``transport`` with ``token``."""
    if transport == "legacy_sse":
        opened = open_legacy_sse_client(url.replace("/mcp", "/sse"), headers=bearer(token))
    else:
        opened = open_http_client(url, headers=bearer(token))
    async with opened as channel:
        async with open_session(
            channel,
            role="client",
            info={"name": "t", "version": "1"},
            versions=[TASKS_VERSION],
            capabilities={},
        ) as session:
            await session.connect()
            yield session


@pytest.mark.parametrize("transport", ["legacy_sse", "streamable_http"])
async def test_a_background_task_keeps_its_token(
    authorization_server: AuthorizationServer, transport: str
) -> None:
    gate = Gate()
    async with protected(authorization_server, "h11", gate) as url:
        token = authorization_server.issue_access_token(
            subject="bob", client_id="app", scopes=["mcp"], resource=url
        )
        with trio.fail_after(10):
            async with tasks_session(url, transport, token) as session:
                created = await session.request(
                    "tools/call", {"name": "later", "arguments": {}, "task": {"ttl": 60000}}
                )
                task_id = created.task.taskId
                # The tools/call has been answered; now the tool reads ctx.auth.
                gate.release.set()
                result = await session.request("tasks/result", {"taskId": task_id})
                assert result["content"] == [{"type": "text", "text": "bob:app"}]
                # The token stays with the task: never in what tasks/* answer.
                got = await session.request("tasks/get", {"taskId": task_id})
                listed = await session.request("tasks/list", {})
                shown = json.dumps([msgspec.to_builtins(got), msgspec.to_builtins(listed)])
                assert token not in shown and "bob" not in shown and "auth" not in shown
