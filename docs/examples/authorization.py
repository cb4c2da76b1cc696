"""OAuth 2.1 in one program: the example authorization server, an MCP server protected by it,
and the OAuth client. Run from a checkout of the repository (the example authorization server
is in its examples/ folder, not in the package); JWTs need the `auth` extra."""

from functools import partial

import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio import McpError
from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    ClientMetadata,
    HeadlessRedirect,
    OAuthClient,
)
from mcp_trio.auth.server import JWTVerifier, ResourceServer
from mcp_trio.client import connect_http
from mcp_trio.server import Context, Server

server = Server("notes", "1.0")
NOTES: list[str] = []


@server.tool
async def whoami(ctx: Context) -> str:
    """Who the access token speaks for, and what it allows."""
    return f"{ctx.auth.subject}, scopes: {' '.join(sorted(ctx.auth.scopes))}"


@server.tool
async def add_note(text: str, ctx: Context) -> str:
    """Store a note (needs the notes:write scope)."""
    NOTES.append(f"{ctx.auth.subject}: {text}")
    return f"{len(NOTES)} note(s)"


async def main() -> None:
    async with trio.open_nursery() as nursery:
        # the authorization server (an example, for tests and demos)
        authorization = AuthorizationServer(scopes_supported=["mcp", "notes:write"], subject="ada")
        issuer = await nursery.start(authorization.serve, "127.0.0.1", 0)

        # the MCP server, as an OAuth resource server: every request needs a token
        protect = ResourceServer(
            None,  # the resource's URL: filled in once the server is bound
            authorization_servers=[issuer],
            verifier=JWTVerifier(issuer=issuer),
            required_scopes=["mcp"],
            tool_scopes={"add_note": ["notes:write"]},
        )
        (url,) = await nursery.start(partial(server.serve_http, "127.0.0.1", 0, auth=protect))

        try:
            async with connect_http(url):
                pass
        except McpError as exc:
            print("without a token:", exc.data["status"], exc.data["body"])

        # the client discovers the authorization server from the 401, registers itself,
        # runs the code flow with PKCE (headless here: no browser) and steps up its scopes
        oauth = OAuthClient(
            grant=AuthorizationCodeGrant(HeadlessRedirect("http://127.0.0.1/callback")),
            client_metadata=ClientMetadata(client_name="notes demo", token_endpoint_auth_method="none"),
            allow_insecure_loopback=True,  # plain http, on 127.0.0.1 only
        )
        async with connect_http(url, auth=oauth) as client:
            for name, arguments in [("whoami", {}), ("add_note", {"text": "hello"}), ("whoami", {})]:
                result = await client.call_tool(name, arguments)
                print(f"{name}: {result.content[0].text}")
        nursery.cancel_scope.cancel()


trio.run(main)
