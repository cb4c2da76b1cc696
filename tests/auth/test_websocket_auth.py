"""OAuth on the WebSocket transport: a protected server on 127.0.0.1 through both
front doors (hypercorn ASGI and the lean wsproto one), the example authorization
server issuing real JWT access tokens, and the project's OAuth client.

What is checked: the handshake is refused before any upgrade with the same
401 / 403 / 400 answers and ``WWW-Authenticate`` challenges as Streamable HTTP;
the protected resource metadata is served on the same port; handlers see the
token as ``ctx.auth``; per-tool scopes are answered with a JSON-RPC error; the
connection is closed with 1008 when the token expires; the client's ``auth=``
authorizes and retries the handshake, a bounded number of times.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio import ConnectionClosed, McpError
from mcp_trio.auth._client_http import OAuthHttp
from mcp_trio.auth._metadata import ClientMetadata
from mcp_trio.auth.client import AuthorizationCodeGrant, HeadlessRedirect, OAuthClient
from mcp_trio.auth.server import AccessToken, JWTVerifier, ResourceServer
from mcp_trio.client import connect_http, connect_websocket, open_client
from mcp_trio.transports._base import Frame
from mcp_trio.transports.websocket import WebSocketConnectError, open_websocket_client
from tests._support.auth_websocket import bearer, http_form, protected
from tests._support.paths import ROOT

FRONT_DOORS = ["hypercorn", "wsproto"]


async def refusal(url: str, headers: Mapping[str, str] | None = None) -> WebSocketConnectError:
    with trio.fail_after(10), pytest.raises(WebSocketConnectError) as info:
        async with open_websocket_client(url, headers=headers):
            pass
    return info.value


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_handshake_refusals(authorization_server: AuthorizationServer, front_door: str) -> None:
    async with protected(authorization_server, front_door) as (url,):
        resource = http_form(url)
        metadata_url = resource.replace("/mcp", "/.well-known/oauth-protected-resource/mcp")

        missing = await refusal(url)
        assert missing.status == 401
        assert missing.headers["www-authenticate"] == (
            f'Bearer scope="mcp", resource_metadata="{metadata_url}"'
        )
        assert missing.headers["cache-control"] == "no-store"
        assert json.loads(missing.body) == {"error_description": "an access token is required"}

        forged = await refusal(url, bearer("not-a-jwt"))
        assert forged.status == 401
        assert 'error="invalid_token"' in forged.headers["www-authenticate"]

        malformed = await refusal(url, {"Authorization": "Bearer two words"})
        assert malformed.status == 400
        assert json.loads(malformed.body)["error"] == "invalid_request"

        in_query = await refusal(url + "?access_token=abc")
        assert in_query.status == 400

        elsewhere = authorization_server.issue_access_token(scopes=["mcp"], resource="http://127.0.0.1:1/mcp")
        wrong_audience = await refusal(url, bearer(elsewhere))
        assert wrong_audience.status == 401
        assert "not issued for this resource" in wrong_audience.headers["www-authenticate"]

        expired = authorization_server.issue_access_token(scopes=["mcp"], resource=resource, expires_in=-10)
        assert (await refusal(url, bearer(expired))).status == 401

        narrow = authorization_server.issue_access_token(scopes=["files:read"], resource=resource)
        forbidden = await refusal(url, bearer(narrow))
        assert forbidden.status == 403
        challenge = forbidden.headers["www-authenticate"]
        assert 'error="insufficient_scope"' in challenge
        assert 'scope="files:read mcp"' in challenge

        # Host checks still come first, and a refused handshake never reaches the verifier.
        foreign = await refusal(url, {**bearer(narrow), "Origin": "http://evil.example"})
        assert foreign.status == 403 and "www-authenticate" not in foreign.headers


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_metadata_is_served_on_the_same_port(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    async with protected(authorization_server, front_door) as (url,):
        resource = http_form(url)
        origin = resource.removesuffix("/mcp")
        http = OAuthHttp(timeout=10.0)
        with trio.fail_after(10):
            for path in (
                "/.well-known/oauth-protected-resource/mcp",
                "/.well-known/oauth-protected-resource",
            ):
                reply = await http.get(origin + path, follow=0)
                assert reply.status == 200, path
                document = reply.json()
                assert document["resource"] == resource
                assert document["authorization_servers"] == [authorization_server.issuer]
                assert document["scopes_supported"] == ["mcp", "tools:admin"]
            # Nothing else is served over plain HTTP.
            other = await http.get(origin + "/elsewhere", follow=0)
            assert other.status in (400, 404)


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_ctx_auth_and_tool_scopes(authorization_server: AuthorizationServer, front_door: str) -> None:
    async with protected(authorization_server, front_door) as (url,):
        token = authorization_server.issue_access_token(
            subject="ada", scopes=["mcp"], resource=http_form(url)
        )
        with trio.fail_after(10):
            options = {"headers": bearer(token)}
            async with connect_websocket(url, websocket_options=options) as client:
                assert (await client.call_tool("whoami")).content[0].text == "ada:mcp"
                with pytest.raises(McpError) as info:
                    await client.call_tool("purge")
                error = info.value
                assert error.code == -32600
                assert error.data["error"] == "insufficient_scope"
                assert error.data["scope"] == "mcp tools:admin"
                assert error.data["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
                # The connection goes on: only that call was refused.
                assert (await client.call_tool("whoami")).content[0].text == "ada:mcp"

        admin = authorization_server.issue_access_token(
            subject="root", scopes=["mcp", "tools:admin"], resource=http_form(url)
        )
        with trio.fail_after(10):
            options = {"headers": bearer(admin)}
            async with connect_websocket(url, websocket_options=options) as client:
                assert (await client.call_tool("purge")).content[0].text == "purged"
                assert (await client.call_tool("whoami")).content[0].text == "root:mcp tools:admin"


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_expired_token_closes_the_connection(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    async with protected(authorization_server, front_door) as (url,):
        token = authorization_server.issue_access_token(scopes=["mcp"], resource=http_form(url), expires_in=2)
        with trio.fail_after(10):
            async with open_websocket_client(url, headers=bearer(token)) as channel:
                async with open_client(channel) as client:
                    assert (await client.call_tool("whoami")).content[0].text == "user:mcp"
                    while channel.close_code is None:
                        await trio.sleep(0.05)
                    assert channel.close_code == 1008
                    assert channel.close_reason == "the access token has expired"
                    with pytest.raises(ConnectionClosed):
                        await client.call_tool("whoami")


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_a_batch_with_an_unscoped_call_is_refused_whole(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    """2025-03-26 batches over a real connection, raw: as HTTP refuses the whole POST."""
    async with protected(authorization_server, front_door) as (url,):
        token = authorization_server.issue_access_token(scopes=["mcp"], resource=http_form(url))
        with trio.fail_after(10):
            async with open_websocket_client(url, headers=bearer(token)) as channel:

                async def exchange(message: Any) -> Any:
                    await channel.send(Frame(json.dumps(message).encode()))
                    return json.loads((await channel.receive()).data)

                init = {
                    "protocolVersion": "2025-03-26",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                }
                initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
                hello = await exchange(initialize)
                assert hello["result"]["protocolVersion"] == "2025-03-26"
                initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
                await channel.send(Frame(json.dumps(initialized).encode()))

                def call(rid: int, name: str) -> dict[str, Any]:
                    params = {"name": name, "arguments": {}}
                    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}

                refused = await exchange([call(1, "whoami"), call(2, "purge")])
                codes = [(reply["id"], reply["error"]["code"]) for reply in refused]
                assert codes == [(1, -32600), (2, -32600)]
                allowed = await exchange([call(3, "whoami")])
                assert allowed[0]["result"]["content"][0]["text"] == "user:mcp"


def oauth_client() -> OAuthClient:
    return OAuthClient(
        grant=AuthorizationCodeGrant(HeadlessRedirect("http://127.0.0.1/callback")),
        client_metadata=ClientMetadata(client_name="ws", token_endpoint_auth_method="none"),
        allow_insecure_loopback=True,
    )


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_oauth_client_authorizes_the_handshake(
    authorization_server: AuthorizationServer, front_door: str
) -> None:
    async with protected(authorization_server, front_door) as (url,):
        auth = oauth_client()
        with trio.fail_after(20):
            async with connect_websocket(url, auth=auth) as client:
                assert (await client.call_tool("whoami")).content[0].text == "user:mcp"
            # The token is kept: a second connection needs no new authorization.
            async with connect_websocket(url, auth=auth) as client:
                assert (await client.call_tool("whoami")).content[0].text == "user:mcp"
        assert len(authorization_server.clients) == 1


async def test_websocket_and_streamable_http_share_one_protected_port(
    authorization_server: AuthorizationServer,
) -> None:
    async with protected(authorization_server, "hypercorn", http=True) as (ws_url, http_url):
        assert http_form(ws_url) == http_url
        auth = oauth_client()
        with trio.fail_after(20):
            async with connect_http(http_url, auth=auth) as client:
                assert (await client.call_tool("whoami")).content[0].text == "user:mcp"
            # The same token is good for the WebSocket: one resource, two transports.
            async with connect_websocket(ws_url, auth=auth) as client:
                assert (await client.call_tool("whoami")).content[0].text == "user:mcp"
            reply = await OAuthHttp(timeout=10.0).get(
                http_url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp"), follow=0
            )
            assert reply.json()["resource"] == http_url
        assert len(authorization_server.clients) == 1


class Stubborn:
    """An ``auth=`` that always asks to retry and never has a token: the
    client must stop after a bounded number of handshakes."""

    def __init__(self, retry: bool) -> None:
        self.retry = retry
        self.handshakes = 0
        self.challenges: list[int] = []

    async def headers(self, method: str, url: str) -> list[tuple[str, str]]:
        self.handshakes += 1
        assert method == "GET" and url.startswith("http://")
        return [("Authorization", "Bearer nope")]

    async def challenge(self, status: int, headers: Mapping[str, str], sent: list[tuple[str, str]]) -> bool:
        assert "www-authenticate" in headers
        self.challenges.append(status)
        return self.retry


class Failing(Stubborn):
    async def challenge(self, status: int, headers: Mapping[str, str], sent: list[tuple[str, str]]) -> bool:
        raise RuntimeError("no browser here")


@pytest.mark.parametrize("front_door", FRONT_DOORS)
async def test_client_retries_are_bounded(authorization_server: AuthorizationServer, front_door: str) -> None:
    async with protected(authorization_server, front_door) as (url,):
        with trio.fail_after(10):
            stubborn = Stubborn(retry=True)
            with pytest.raises(WebSocketConnectError) as info:
                async with open_websocket_client(url, auth=stubborn):
                    pass
            assert info.value.status == 401
            assert stubborn.handshakes == 4 and stubborn.challenges == [401] * 3

            giving_up = Stubborn(retry=False)
            with pytest.raises(WebSocketConnectError):
                async with open_websocket_client(url, auth=giving_up):
                    pass
            assert giving_up.handshakes == 1

            failing = Failing(retry=True)
            with pytest.raises(WebSocketConnectError, match="authorization failed: no browser"):
                async with open_websocket_client(url, auth=failing):
                    pass


def test_screen_refuses_whole_messages_and_batches() -> None:
    auth = ResourceServer(
        "http://127.0.0.1:1/mcp",
        authorization_servers=["http://127.0.0.1:2"],
        verifier=JWTVerifier(keys={"keys": []}),
        tool_scopes={"purge": ["tools:admin"]},
    )
    token = AccessToken(subject="ada", scopes=frozenset({"mcp"}))
    resource = "http://127.0.0.1:1/mcp"

    def call(rid: Any, name: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": name}}

    assert auth.screen(token, resource, json.dumps(call(1, "whoami")).encode()) is None
    assert auth.screen(token, resource, b"not json tools/call") is None  # the session answers
    refused = auth.screen(token, resource, json.dumps(call("a", "purge")).encode())
    single = json.loads(refused or b"")
    assert single["id"] == "a" and single["error"]["code"] == -32600
    assert single["error"]["data"]["scope"] == "mcp tools:admin"
    batch = [call(1, "whoami"), call(2, "purge"), {"jsonrpc": "2.0", "method": "notifications/x"}]
    answered = json.loads(auth.screen(token, resource, json.dumps(batch).encode()) or b"")
    assert [reply["id"] for reply in answered] == [1, 2]  # the whole batch is refused
    assert all(reply["error"]["data"]["error"] == "insufficient_scope" for reply in answered)
    # A scoped call with no id to answer never reaches the session either.
    nameless = json.dumps(call(None, "purge")).encode()
    assert auth.screen(token, resource, nameless) == b""
    admin = AccessToken(scopes=frozenset({"mcp", "tools:admin"}))
    assert auth.screen(admin, resource, json.dumps(batch).encode()) is None


async def test_cli_serves_a_protected_websocket(authorization_server: AuthorizationServer) -> None:
    """``mcp-trio serve --ws ... --auth-issuer``, run as a real subprocess."""
    issuer = authorization_server.issuer
    assert issuer is not None
    argv = [sys.executable, "-m", "mcp_trio._cli", "serve", "examples/everything.py"]
    argv += ["--ws", "127.0.0.1:0", "--auth-issuer", issuer, "--auth-scope", "mcp"]
    marker = b"WebSocket at "
    process = await trio.lowlevel.open_process(
        argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        assert process.stderr is not None
        printed = b""
        with trio.fail_after(20):
            while marker not in printed or not printed.endswith(b"\n"):
                chunk = await process.stderr.receive_some(4096)
                assert chunk, printed
                printed += chunk
            url = printed.split(marker)[1].split()[0].decode()
            assert (await refusal(url)).status == 401
            token = authorization_server.issue_access_token(scopes=["mcp"], resource=http_form(url))
            options = {"headers": bearer(token)}
            async with connect_websocket(url, websocket_options=options) as client:
                assert await client.list_all_tools()
    finally:
        process.terminate()
        with trio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()
