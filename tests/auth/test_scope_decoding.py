"""Per-tool scopes are decided on the message as the session decodes it.

A token with only the endpoint scope (``mcp``) must not run ``purge`` (which
needs ``tools:admin``) however the body spells ``tools/call`` or the tool's
name: JSON escapes (``"tools\\/call"``, ``"tools\\u002fcall"``), an escaped
member name, a repeated member.  Every spelling gets exactly the answer the
plain one gets, on every transport the resource server guards (Streamable
HTTP through both front doors, the legacy HTTP+SSE ``POST /messages``,
WebSocket through both front doors), single messages and 2025-03-26 batches.
Real servers on 127.0.0.1, real JWTs from the example authorization server.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx
import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth.server import AccessToken, JWTVerifier, ResourceServer
from mcp_trio.transports._base import Frame
from mcp_trio.transports.websocket import open_websocket_client
from tests._support.auth import challenge_of, jwt_verifier, protected
from tests._support.auth_scopes import (
    BATCH_VERSION,
    answer,
    call,
    handshake,
    legacy_session,
    open_session,
    send,
)
from tests._support.auth_websocket import bearer, http_form
from tests._support.auth_websocket import protected as protected_websocket

#: How a body may spell the method ``tools/call`` (JSON text, inside the quotes).
METHODS = ["tools\\/call", "tools\\u002fcall", "\\u0074ools\\u002Fcall"]


def spellings(message: Any) -> list[bytes]:
    """``message`` as JSON text with ``tools/call`` (and ``purge``) spelt every other way."""
    text = json.dumps(message)
    assert '"tools/call"' in text and '"purge"' in text
    spelt = [text.replace('"tools/call"', f'"{method}"') for method in METHODS]
    spelt.append(text.replace('"purge"', '"p\\u0075rge"'))  # the tool's name escaped
    spelt.append(text.replace('"method"', '"m\\u0065thod"'))  # the member's name escaped
    # A repeated member: the last one counts, for the session as for the check.
    spelt.append(text.replace('"params": {', '"params": {"name": "whoami"}, "params": {'))
    return [s.encode() for s in spelt]


SINGLE = call(2, "purge")
BATCH = [call(3, "whoami"), call(4, "purge")]


async def test_escaped_tools_call_needs_the_tool_scope_over_http(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    assert authorization_server.issuer
    verifier = jwt_verifier(authorization_server)
    async with protected(front_door, verifier, authorization_server.issuer) as (url, _):
        token = authorization_server.issue_access_token(scopes=["mcp"], resource=url)
        with trio.fail_after(20):
            session = await open_session(http, url, token)
            for message in (SINGLE, BATCH):
                plain = await send(http, url, json.dumps(message).encode(), token, **session)
                assert plain.status_code == 403
                assert challenge_of(plain).get("error") == "insufficient_scope"
                for body in spellings(message):
                    refused = await send(http, url, body, token, **session)
                    assert answer(refused) == answer(plain), body
            # The session goes on, and an allowed call still runs.
            whoami_call = json.dumps(call(5, "whoami")).encode()
            allowed = await send(http, url, whoami_call, token, **session)
            assert allowed.status_code == 200, allowed.text
            text = allowed.json()["result"]["content"][0]["text"]
            assert json.loads(text)["scopes"] == ["mcp"]

            # The legacy HTTP+SSE endpoint's POST /messages, on the same guard.
            origin = url.rsplit("/", 1)[0]
            async with legacy_session(origin, token) as (messages, _):
                for message in (SINGLE, BATCH):
                    plain = await send(http, messages, json.dumps(message).encode(), token)
                    assert plain.status_code == 403
                    for body in spellings(message):
                        refused = await send(http, messages, body, token)
                        assert answer(refused) == answer(plain), body


async def exchange(channel: Any, data: bytes) -> Any:
    """Send one WebSocket message, and read the one that answers it."""
    await channel.send(Frame(data))
    return json.loads((await channel.receive()).data)


@asynccontextmanager
async def websocket_session(authorization_server: AuthorizationServer, front_door: str) -> AsyncIterator[Any]:
    """A raw 2025-03-26 session over a protected WebSocket, with an ``mcp``-only token."""
    async with protected_websocket(authorization_server, front_door) as (url,):
        token = authorization_server.issue_access_token(scopes=["mcp"], resource=http_form(url))
        async with open_websocket_client(url, headers=bearer(token)) as channel:
            init, initialized = handshake(BATCH_VERSION)
            assert "result" in await exchange(channel, init)
            await channel.send(Frame(initialized))
            yield channel


@pytest.mark.parametrize("front_door", ["hypercorn", "wsproto"])
async def test_escaped_tools_call_needs_the_tool_scope_over_websocket(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    with trio.fail_after(20):
        async with websocket_session(authorization_server, front_door) as channel:
            for message in (SINGLE, BATCH):
                plain = await exchange(channel, json.dumps(message).encode())
                errors = plain if isinstance(plain, list) else [plain]
                assert all(e["error"]["data"]["error"] == "insufficient_scope" for e in errors)
                for body in spellings(message):
                    assert await exchange(channel, body) == plain, body
            allowed = await exchange(channel, json.dumps(call(5, "whoami")).encode())
            assert allowed["result"]["content"][0]["text"] == "user:mcp"


def test_screen_reads_the_message_as_the_session_does() -> None:
    resource = "http://127.0.0.1:1/mcp"
    auth = ResourceServer(
        resource,
        authorization_servers=["http://127.0.0.1:2"],
        verifier=JWTVerifier(keys={"keys": []}),
        tool_scopes={"purge": ["tools:admin"]},
    )
    token = AccessToken(subject="ada", scopes=frozenset({"mcp"}))
    plain = auth.screen(token, resource, json.dumps(SINGLE).encode())
    assert plain is not None and json.loads(plain)["error"]["data"]["error"] == "insufficient_scope"
    for body in spellings(SINGLE):
        assert auth.screen(token, resource, body) == plain, body
    # Bytes that are not UTF-8 in a member the session's decoder skips do not hide the call.
    skipped = b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"purge"},"x":"\xff"}'
    assert auth.screen(token, resource, skipped) == plain
    # Leading JSON whitespace before a batch, as the session allows it.
    batch = auth.screen(token, resource, b" \r\n\t" + json.dumps(BATCH).encode())
    assert [reply["id"] for reply in json.loads(batch or b"")] == [3, 4]
    # What the session cannot decode it answers itself: nothing to refuse here.
    truncated = b'{"method": "tools\\/call", "params": {"name": "purge"'
    assert auth.screen(token, resource, truncated) is None
    assert auth.screen(token, resource, b'{"method": "tools/call", "params": ["purge"]}') is None
    assert auth.screen(token, resource, b'{"method": "tools/call", "params": {"name": 7}}') is None
