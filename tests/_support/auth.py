"""Authorization test helpers: a protected server over any HTTP door, JWT verification for it,
the example authorization server's PKCE pair, and the small servers the end-to-end tests protect."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2 as httpx
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth import _metadata as md
from mcp_trio.auth.server import (
    AccessToken,
    JWTVerifier,
    ResourceServer,
    TokenVerifier,
)
from mcp_trio.server import Context, Server


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


ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def make_server() -> Server:
    server = Server("protected", "1")

    @server.tool
    async def whoami(ctx: Context) -> dict[str, Any]:
        "Who the token speaks for."
        token = ctx.auth
        assert isinstance(token, AccessToken)
        return {"sub": token.subject, "client": token.client_id, "scopes": sorted(token.scopes)}

    @server.tool
    async def purge() -> str:
        "Needs tools:admin."
        return "purged"

    return server


@asynccontextmanager
async def protected(
    front_door: str, verifier: TokenVerifier, issuer: str, **options: Any
) -> AsyncIterator[tuple[str, ResourceServer]]:
    auth = ResourceServer(
        None,
        authorization_servers=[issuer],
        verifier=verifier,
        required_scopes=options.pop("required_scopes", ["mcp"]),
        tool_scopes=options.pop("tool_scopes", {"purge": ["tools:admin"]}),
        **options,
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: make_server().serve_http(
                "127.0.0.1",
                0,
                front_door=front_door,
                auth=auth,
                legacy_sse=True,
                task_status=task_status,
            )
        )
        yield urls[0], auth
        nursery.cancel_scope.cancel()


def jwt_verifier(server: AuthorizationServer, **options: Any) -> JWTVerifier:
    return JWTVerifier(f"{server.issuer}/jwks", issuer=server.issuer, **options)


def challenge_of(response: httpx.Response) -> md.Challenge:
    challenges = md.parse_www_authenticate(response.headers["www-authenticate"])
    assert len(challenges) == 1 and challenges[0].scheme == "bearer", response.headers
    return challenges[0]
