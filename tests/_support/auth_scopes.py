"""Per-tool scopes on the decoded message: a session opened with a bearer token, calls sent in
every spelling, and what a refusal says (status, challenge, body)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx

from mcp_trio.transports.http.client import open_legacy_sse_client
from tests._support.auth import ACCEPT
from tests._support.auth_websocket import bearer

BATCH_VERSION = "2025-03-26"


def call(rid: Any, name: str) -> dict[str, Any]:
    params = {"name": name, "arguments": {}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def answer(response: httpx.Response) -> tuple[int, str | None, bytes]:
    """What an HTTP refusal says: status, challenge, body."""
    return response.status_code, response.headers.get("www-authenticate"), response.content


async def send(http: httpx.AsyncClient, url: str, body: bytes, token: str, **headers: str) -> httpx.Response:
    head = {**ACCEPT, **headers, "authorization": f"Bearer {token}"}
    return await http.post(url, content=body, headers=head)


def handshake(version: str) -> tuple[bytes, bytes]:
    """``initialize`` asking for ``version``, and ``notifications/initialized``."""
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    return json.dumps(init).encode(), json.dumps(initialized).encode()


async def open_session(
    http: httpx.AsyncClient, url: str, token: str, version: str = BATCH_VERSION
) -> dict[str, str]:
    """A session (by default a 2025-03-26 one: batches allowed): the headers its requests carry."""
    init, initialized = handshake(version)
    hello = await send(http, url, init, token)
    assert hello.status_code == 200, hello.text
    headers = {"mcp-session-id": hello.headers["mcp-session-id"], "mcp-protocol-version": version}
    assert (await send(http, url, initialized, token, **headers)).status_code == 202
    return headers


@asynccontextmanager
async def legacy_session(origin: str, token: str) -> AsyncIterator[tuple[str, Any]]:
    """An open legacy HTTP+SSE session (the project's client, authorized by
    ``token``): the URL its endpoint event named, and the client channel."""
    async with open_legacy_sse_client(f"{origin}/sse", headers=bearer(token)) as channel:
        target = channel._legacy_target  # (what the endpoint event named)
        assert target is not None and "session_id=" in target
        yield origin + target, channel
