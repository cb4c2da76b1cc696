"""Fixtures shared by the tests of mcp_trio.auth (additive: one fixture per need)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2 as httpx
import pytest
import trio

from examples.authorization_server import AuthorizationServer
from tests._support.doors import DOORS

SCOPES = ["mcp", "tools:admin", "files:read", "files:write"]


@pytest.fixture
async def authorization_server(nursery: trio.Nursery) -> AuthorizationServer:
    """The example authorization server, serving on 127.0.0.1 (its issuer is its URL)."""
    server = AuthorizationServer(scopes_supported=SCOPES, algorithm="ES256")
    await nursery.start(server.serve, "127.0.0.1", 0)
    return server


@pytest.fixture(params=DOORS)
def front_door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client
