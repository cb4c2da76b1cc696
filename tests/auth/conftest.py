"""Fixtures shared by the tests of mcp_trio.auth (additive: one fixture per need)."""

from __future__ import annotations

import base64
import hashlib
import secrets
from typing import Any

import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth.server import JWTVerifier, ResourceServer
from mcp_trio.server import Context, Server

SCOPES = ["mcp", "tools:admin", "files:read", "files:write"]


@pytest.fixture
async def authorization_server(nursery: trio.Nursery) -> AuthorizationServer:
    """The example authorization server, serving on 127.0.0.1 (its issuer is its URL)."""
    server = AuthorizationServer(scopes_supported=SCOPES, algorithm="ES256")
    await nursery.start(server.serve, "127.0.0.1", 0)
    return server


def pkce_pair() -> tuple[str, str]:
    """A PKCE code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def whoami_server(name: str = "protected") -> Server:
    """A server with ``whoami`` (the token's subject and scopes) and ``purge`` (which the
    resource server of :func:`resource_server` guards with ``tools:admin``)."""
    server = Server(name, "1")

    @server.tool
    async def whoami(ctx: Context) -> str:
        "Who the token speaks for."
        return f"{ctx.auth.subject}:{' '.join(sorted(ctx.auth.scopes))}"

    @server.tool
    async def purge() -> str:
        "Needs tools:admin."
        return "purged"

    return server


def resource_server(issuer: str | None, **options: Any) -> ResourceServer:
    """A resource server trusting JWTs of ``issuer`` (keys found through its metadata):
    ``mcp`` needed for everything, ``tools:admin`` for ``purge``; ``options`` override."""
    assert issuer is not None
    settings: dict[str, Any] = {
        "authorization_servers": [issuer],
        "verifier": JWTVerifier(issuer=issuer),
        "required_scopes": ["mcp"],
        "tool_scopes": {"purge": ["tools:admin"]},
    }
    settings.update(options)
    return ResourceServer(None, **settings)
