"""End to end: the OAuth client against the project's own example authorization
server (:mod:`examples.authorization_server`) and an mcp-trio server
protected by :class:`mcp_trio.auth.server.ResourceServer`, all on 127.0.0.1.

Nothing is scripted here: discovery, registration, PKCE, JWT access tokens,
audience checks, step-up and refresh all run through the real components.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jwt
import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from examples.authorization_server import AuthorizationServer
from mcp_trio import McpError
from mcp_trio.auth._metadata import ClientMetadata
from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    HeadlessRedirect,
    InMemoryTokenStorage,
    OAuthClient,
)
from mcp_trio.auth.server import JWTVerifier, ResourceServer
from mcp_trio.client import connect_http
from mcp_trio.server import Context, Server

SCOPES = ["mcp", "files:write", "offline_access"]


def make_server() -> Server:
    server = Server("protected", version="1")

    @server.tool
    async def whoami(ctx: Context) -> str:
        return str(ctx.auth.subject)

    @server.tool
    async def write_file(name: str) -> str:
        return f"wrote {name}"

    return server


async def start(nursery: trio.Nursery, **as_options: Any) -> tuple[str, AuthorizationServer, ResourceServer]:
    """The example authorization server and a protected server; the MCP URL."""
    auth_server = AuthorizationServer(scopes_supported=SCOPES, algorithm="ES256", **as_options)
    issuer = await nursery.start(auth_server.serve, "127.0.0.1", 0)
    resource = ResourceServer(
        None,
        authorization_servers=[issuer],
        verifier=JWTVerifier(f"{issuer}/jwks", issuer=issuer),
        required_scopes=["mcp"],
        tool_scopes={"write_file": ["files:write"]},
    )
    urls = await nursery.start(partial(make_server().serve_http, "127.0.0.1", 0, auth=resource))
    return urls[0], auth_server, resource


class CountingRedirect(HeadlessRedirect):
    """Counts the trips to the authorization endpoint."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9/callback")
        self.count = 0

    async def authorize(self, url: str) -> dict[str, str]:
        self.count += 1
        return await super().authorize(url)


def interactive(redirect: HeadlessRedirect | None = None, **options: Any) -> OAuthClient:
    return OAuthClient(
        grant=AuthorizationCodeGrant(redirect or CountingRedirect()),
        client_metadata=ClientMetadata(client_name="end-to-end"),
        allow_insecure_loopback=True,
        **options,
    )


async def test_authorization_code_grant_step_up_and_tokens(nursery: trio.Nursery) -> None:
    url, auth_server, _ = await start(nursery)
    redirect = CountingRedirect()
    auth = interactive(redirect)
    with trio.fail_after(15):
        async with connect_http(url, auth=auth) as client:
            who = await client.call_tool("whoami", {})
            assert who.content[0].text == "user"
            wrote = await client.call_tool("write_file", {"name": "a.txt"})  # needs a step-up
            assert wrote.content[0].text == "wrote a.txt"
    assert len(auth_server.clients) == 1  # registered once, reused for the step-up
    assert redirect.count == 2  # the first authorization and the step-up
    tokens = auth._tokens
    assert tokens is not None and tokens.refresh_token  # offline_access was offered and asked for
    claims = jwt.decode(tokens.access_token, options={"verify_signature": False})
    assert claims["aud"] in (url, [url])  # RFC 8707: issued for this server only
    assert {"mcp", "files:write"} <= set(claims["scope"].split())


async def test_refresh_before_expiry_with_rotation(nursery: trio.Nursery) -> None:
    url, auth_server, _ = await start(nursery, access_token_ttl=5)  # inside the refresh margin
    storage = InMemoryTokenStorage()
    redirect = CountingRedirect()
    with trio.fail_after(15):
        for _ in range(2):  # the second connection starts from stored, rotated tokens
            async with connect_http(url, auth=interactive(redirect, storage=storage)) as client:
                assert (await client.call_tool("whoami", {})).content[0].text == "user"
                assert (await client.call_tool("whoami", {})).content[0].text == "user"
    assert len(auth_server.clients) == 1
    assert redirect.count == 1  # every later token came from a (rotated) refresh token


async def test_client_credentials_with_private_key_jwt(nursery: trio.Nursery) -> None:
    url, auth_server, _ = await start(nursery)
    key = ec.generate_private_key(ec.SECP256R1())
    public = jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True)
    client = auth_server.register_client(
        token_endpoint_auth_method="private_key_jwt",
        grant_types=["client_credentials"],
        jwks={"keys": [{**public, "use": "sig", "alg": "ES256"}]},
        scope="mcp",
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    auth = OAuthClient(
        grant=ClientCredentialsGrant(), client=client, private_key=pem, allow_insecure_loopback=True
    )
    with trio.fail_after(15):
        async with connect_http(url, auth=auth) as session:
            assert (await session.call_tool("whoami", {})).content[0].text


async def test_denied_authorization_is_a_clear_error(nursery: trio.Nursery) -> None:
    url, _, _ = await start(nursery, auto_approve=False)
    with trio.fail_after(15), pytest.raises(McpError, match="access_denied"):
        async with connect_http(url, auth=interactive()) as client:
            await client.call_tool("whoami", {})
