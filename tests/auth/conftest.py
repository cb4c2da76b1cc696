"""Fixtures shared by the tests of mcp_trio.auth (additive: one fixture per need)."""

from __future__ import annotations

import base64
import hashlib
import secrets

import pytest
import trio

from mcp_trio.auth.authorization_server import AuthorizationServer

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
