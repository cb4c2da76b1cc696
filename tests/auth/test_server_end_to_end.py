"""The project's own OAuth client against the example authorization server and a
protected mcp-trio server, all on 127.0.0.1: discovery, registration, code + PKCE,
per-tool step-up, client credentials."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth._metadata import ClientMetadata
from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    HeadlessRedirect,
    OAuthClient,
)
from mcp_trio.client import connect_http
from tests._support.auth import resource_server, whoami_server
from tests._support.doors import DOORS


@asynccontextmanager
async def protected(authorization_server: AuthorizationServer, front_door: str) -> AsyncIterator[str]:
    auth = resource_server(authorization_server.issuer)
    serve = partial(whoami_server().serve_http, "127.0.0.1", 0, front_door=front_door, auth=auth)
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve)
        yield urls[0]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("front_door", DOORS)
async def test_code_flow_and_step_up(authorization_server: AuthorizationServer, front_door: str) -> None:
    async with protected(authorization_server, front_door) as url:
        auth = OAuthClient(
            grant=AuthorizationCodeGrant(HeadlessRedirect("http://127.0.0.1/callback")),
            client_metadata=ClientMetadata(client_name="e2e", token_endpoint_auth_method="none"),
            allow_insecure_loopback=True,
        )
        with trio.fail_after(20):
            async with connect_http(url, auth=auth) as client:
                whoami = await client.call_tool("whoami")
                assert whoami.content[0].text == "user:mcp"
                # purge needs tools:admin: 403 insufficient_scope, the client steps up.
                purge = await client.call_tool("purge")
                assert purge.content[0].text == "purged"
                again = await client.call_tool("whoami")
                assert again.content[0].text == "user:mcp tools:admin"
        assert len(authorization_server.clients) == 1  # registered once, dynamically


async def test_client_credentials(authorization_server: AuthorizationServer) -> None:
    info = authorization_server.register_client(
        token_endpoint_auth_method="client_secret_basic",
        grant_types=["client_credentials"],
        scope="mcp",
    )
    async with protected(authorization_server, "h11") as url:
        auth = OAuthClient(
            grant=ClientCredentialsGrant(), client=info, scope="mcp", allow_insecure_loopback=True
        )
        with trio.fail_after(20):
            async with connect_http(url, auth=auth) as client:
                result: Any = await client.call_tool("whoami")
                assert result.content[0].text == f"{info.client_id}:mcp"
