"""MCP authorization end to end, in one process, on 127.0.0.1.

Starts the example authorization server, an MCP server protected by it (JWT
access tokens; the ``notes`` tool needs the ``notes:write`` scope on top of
``mcp``), then connects the project's OAuth client: it discovers the
authorization server, registers itself, runs the code flow with PKCE headlessly
and steps up when a tool needs more scope.

    python examples/auth_demo.py            # the whole demo, then exit
    python examples/auth_demo.py --serve    # keep both servers running; prints their URLs

It imports the example authorization server from ``examples/authorization_server/``
beside this file.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial

import trio
from authorization_server import AuthorizationServer  # beside this file (sys.path[0])

from mcp_trio.auth.client import AuthorizationCodeGrant, ClientMetadata, HeadlessRedirect, OAuthClient
from mcp_trio.auth.server import JWTVerifier, ResourceServer
from mcp_trio.client import connect_http
from mcp_trio.server import Context, Server

server = Server("notes", "1.0")
NOTES: list[str] = []


@server.tool
async def whoami(ctx: Context) -> str:
    "Who the access token speaks for, and what it allows."
    return f"{ctx.auth.subject} (client {ctx.auth.client_id}): {' '.join(sorted(ctx.auth.scopes))}"


@server.tool
async def add_note(text: str, ctx: Context) -> str:
    "Store a note (needs notes:write)."
    NOTES.append(f"{ctx.auth.subject}: {text}")
    return f"{len(NOTES)} notes"


async def start(nursery: trio.Nursery) -> tuple[str, str]:
    """Both servers; their URLs."""
    authorization = AuthorizationServer(scopes_supported=["mcp", "notes:write"], subject="ada")
    issuer = await nursery.start(authorization.serve, "127.0.0.1", 0)
    auth = ResourceServer(
        None,  # the endpoint's URL, once bound
        authorization_servers=[issuer],
        verifier=JWTVerifier(issuer=issuer),
        required_scopes=["mcp"],
        tool_scopes={"add_note": ["notes:write"]},
        resource_name="Notes demo",
    )
    urls = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, auth=auth))
    return issuer, urls[0]


async def demo(url: str) -> None:
    oauth = OAuthClient(
        grant=AuthorizationCodeGrant(HeadlessRedirect("http://127.0.0.1/callback")),
        client_metadata=ClientMetadata(client_name="auth demo", token_endpoint_auth_method="none"),
        allow_insecure_loopback=True,  # the demo runs on 127.0.0.1 over http
    )
    async with connect_http(url, auth=oauth) as client:
        for name, arguments in [("whoami", {}), ("add_note", {"text": "hello"}), ("whoami", {})]:
            result = await client.call_tool(name, arguments)
            print(f"{name}: {result.content[0].text}")


async def main(serve: bool) -> None:
    async with trio.open_nursery() as nursery:
        issuer, url = await start(nursery)
        print(f"authorization server at {issuer}", file=sys.stderr, flush=True)
        print(f"protected MCP server at {url}", file=sys.stderr, flush=True)
        if not serve:
            with trio.fail_after(30):
                await demo(url)
            nursery.cancel_scope.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--serve", action="store_true", help="keep the servers running")
    try:
        trio.run(main, parser.parse_args().serve)
    except KeyboardInterrupt:
        pass
