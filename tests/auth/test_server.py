"""The protected MCP server (mcp_trio.auth.server): real servers on 127.0.0.1
(the example authorization server and an mcp-trio server behind
``serve_http(auth=...)`` through both front doors), raw HTTP requests."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx2 as httpx
import jwt
import pytest
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth import _metadata as md
from mcp_trio.auth.server import (
    AccessToken,
    CallbackVerifier,
    IntrospectionVerifier,
    InvalidToken,
    JWTVerifier,
    ResourceServer,
)
from mcp_trio.server import Context, Server
from mcp_trio.transports.http.server import HttpRequest, Responder, StreamableHTTP, serve_h11
from tests._support.auth import ACCEPT, challenge_of, jwt_verifier, make_server, protected

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


async def post(
    http: httpx.AsyncClient, url: str, message: Any, token: str | None = None, **headers: str
) -> httpx.Response:
    head = {**ACCEPT, **headers}
    if token is not None:
        head["authorization"] = f"Bearer {token}"
    return await http.post(url, content=json.dumps(message), headers=head)


async def call(http: httpx.AsyncClient, url: str, token: str, name: str) -> httpx.Response:
    """initialize, then tools/call ``name`` in the session."""
    init = await post(http, url, INIT, token)
    assert init.status_code == 200, init.text
    session = {
        "mcp-session-id": init.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    await post(http, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, token, **session)
    message = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": {}},
    }
    return await post(http, url, message, token, **session)


def result_of(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    text = response.text
    if response.headers["content-type"].startswith("text/event-stream"):
        text = next(line[5:] for line in text.splitlines() if line.startswith("data:") and line[5:].strip())
    return json.loads(text)["result"]


def hand_signed(header: dict[str, Any], claims: dict[str, Any], secret: bytes) -> str:
    """A JWT made by hand (PyJWT itself refuses to make the dangerous ones)."""
    import base64
    import hashlib
    import hmac

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    signing_input = f"{part(json.dumps(header).encode())}.{part(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{part(signature)}"


# -------------------------------------------------------- 401 / 403


async def test_no_token(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    assert authorization_server.issuer
    async with protected(front_door, jwt_verifier(authorization_server), authorization_server.issuer) as (
        url,
        auth,
    ):
        origin = url.rsplit("/", 1)[0]
        response = await post(http, url, INIT)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer scope="mcp", resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
        )
        assert response.json() == {"error_description": "an access token is required"}
        assert auth.resource == url
        # Any other scheme is no Bearer token either (RFC 6750 3.1: no error code).
        basic = await post(http, url, INIT, authorization="Basic YTpi")
        assert basic.status_code == 401 and "error" not in challenge_of(basic).params
        # Every method of the endpoint is guarded, and the legacy HTTP+SSE endpoints too.
        assert (await http.get(url, headers={"accept": "text/event-stream"})).status_code == 401
        assert (await http.delete(url)).status_code == 401
        assert (await http.get(f"{origin}/sse", headers={"accept": "text/event-stream"})).status_code == 401
        assert (await http.post(f"{origin}/messages?session_id=x", content=b"{}")).status_code == 401


async def test_malformed_authorization(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    assert authorization_server.issuer
    async with protected(front_door, jwt_verifier(authorization_server), authorization_server.issuer) as (
        url,
        _,
    ):
        for header in ("Bearer", "Bearer a b", "Bearer a,b"):
            response = await post(http, url, INIT, authorization=header)
            assert response.status_code == 400, header
            assert challenge_of(response).get("error") == "invalid_request"
            assert response.json()["error"] == "invalid_request"
        token = authorization_server.issue_access_token(scopes=["mcp"], resource=url)
        in_query = await http.post(f"{url}?access_token={token}", content=json.dumps(INIT), headers=ACCEPT)
        assert in_query.status_code == 400 and in_query.json()["error"] == "invalid_request"


async def test_invalid_expired_and_foreign_tokens(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    issuer = authorization_server.issuer
    assert issuer
    async with protected(front_door, jwt_verifier(authorization_server), issuer) as (url, _):
        origin = url.rsplit("/", 1)[0]
        expired = authorization_server.issue_access_token(scopes=["mcp"], resource=url, expires_in=-5)
        other_audience = authorization_server.issue_access_token(
            scopes=["mcp"], resource="http://127.0.0.1:1/mcp"
        )
        no_audience = authorization_server.issue_access_token(scopes=["mcp"])  # audience: the issuer
        wrong_issuer = authorization_server.issue_access_token(
            scopes=["mcp"], resource=url, claims={"iss": "http://x"}
        )
        cases = {
            "garbage": "the token is not a JWT",
            expired: "the token has expired",
            other_audience: "the token was not issued for this resource",
            no_audience: "the token was not issued for this resource",
            wrong_issuer: "the token was refused: Invalid issuer",
        }
        for token, description in cases.items():
            response = await post(http, url, INIT, token)
            assert response.status_code == 401, token
            assert response.headers["www-authenticate"] == (
                f'Bearer error="invalid_token", error_description="{description}", scope="mcp", '
                f'resource_metadata="{origin}/.well-known/oauth-protected-resource/mcp"'
            )
            assert response.json() == {"error": "invalid_token", "error_description": description}


async def test_insufficient_scope(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    assert authorization_server.issuer
    async with protected(front_door, jwt_verifier(authorization_server), authorization_server.issuer) as (
        url,
        _,
    ):
        origin = url.rsplit("/", 1)[0]
        metadata_url = f"{origin}/.well-known/oauth-protected-resource/mcp"
        files_only = authorization_server.issue_access_token(scopes=["files:read"], resource=url)
        response = await post(http, url, INIT, files_only)
        assert response.status_code == 403
        assert response.headers["www-authenticate"] == (
            'Bearer error="insufficient_scope", error_description="the request needs scope mcp", '
            f'scope="files:read mcp", resource_metadata="{metadata_url}"'
        )
        assert response.json() == {
            "error": "insufficient_scope",
            "error_description": "the request needs scope mcp",
        }

        # Per-tool scopes: purge needs tools:admin on top of mcp; other tools do not.
        plain = authorization_server.issue_access_token(
            subject="ada", client_id="app", scopes=["mcp"], resource=url
        )
        refused = await call(http, url, plain, "purge")
        assert refused.status_code == 403
        challenge = challenge_of(refused)
        assert challenge.get("error") == "insufficient_scope" and challenge.get("scope") == "mcp tools:admin"
        assert challenge.get("resource_metadata") == metadata_url
        assert result_of(await call(http, url, plain, "whoami"))["structuredContent"] == {
            "sub": "ada",
            "client": "app",
            "scopes": ["mcp"],
        }
        admin = authorization_server.issue_access_token(scopes=["mcp", "tools:admin"], resource=url)
        assert result_of(await call(http, url, admin, "purge"))["content"][0]["text"] == "purged"
        # A batch is checked message by message.
        batch = [
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "purge"}},
            INIT,
        ]
        assert (await post(http, url, batch, plain)).status_code == 403


# ------------------------------------------------------------ metadata


async def test_protected_resource_metadata(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    issuer = authorization_server.issuer
    assert issuer
    async with protected(
        front_door, jwt_verifier(authorization_server), issuer, resource_name="Protected demo"
    ) as (url, _):
        origin = url.rsplit("/", 1)[0]
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            response = await http.get(origin + path)
            assert response.status_code == 200 and response.headers["content-type"] == "application/json"
            assert response.json() == {
                "resource": url,
                "authorization_servers": [issuer],
                "scopes_supported": ["mcp", "tools:admin"],
                "bearer_methods_supported": ["header"],
                "resource_name": "Protected demo",
            }
        assert (await http.post(origin + "/.well-known/oauth-protected-resource")).status_code == 405
        # The client side finds it where the 401 says it is.
        challenge = challenge_of(await post(http, url, INIT))
        assert challenge.get("resource_metadata") == md.protected_resource_metadata_url(url)


# ---------------------------------------------------- what handlers get


async def test_token_is_not_passed_on(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """The endpoint behind the guard sees the verified token, never the header."""
    seen: list[HttpRequest] = []

    class Recorder:
        max_body_size = 1024

        async def handle(self, request: HttpRequest, responder: Responder) -> None:
            seen.append(request)
            await responder.start(204, [])
            await responder.end()

    assert authorization_server.issuer
    auth = ResourceServer(
        "http://127.0.0.1:1/mcp",
        authorization_servers=[authorization_server.issuer],
        verifier=jwt_verifier(authorization_server),
    )
    token = authorization_server.issue_access_token(
        subject="ada", scopes=["x"], resource="http://127.0.0.1:1/mcp"
    )
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve_h11, auth.protect(Recorder()), "127.0.0.1", 0)
        response = await http.post(
            urls[0] + "/mcp", content=b"{}", headers={"authorization": f"Bearer {token}"}
        )
        assert response.status_code == 204
        nursery.cancel_scope.cancel()
    assert "authorization" not in seen[0].headers
    assert isinstance(seen[0].auth, AccessToken) and seen[0].auth.subject == "ada"
    assert seen[0].auth.scopes == frozenset({"x"}) and seen[0].auth.claims["sub"] == "ada"


# ------------------------------------------------------------- verifiers


async def test_jwks_rotation_is_refetched_and_bounded(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    assert authorization_server.issuer
    verifier = jwt_verifier(authorization_server, refresh_interval=60.0)
    async with protected("h11", verifier, authorization_server.issuer) as (url, _):
        first = authorization_server.issue_access_token(scopes=["mcp"], resource=url)
        assert (await post(http, url, INIT, first)).status_code == 200
        assert verifier.fetches == 1
        authorization_server.rotate_key()  # a new kid: the cached keys cannot know it
        rotated = authorization_server.issue_access_token(scopes=["mcp"], resource=url)
        assert (await post(http, url, INIT, rotated)).status_code == 200
        assert verifier.fetches == 2
        # The old key is gone from the JWKS: its tokens are refused.
        assert (await post(http, url, INIT, first)).status_code == 401
        # Tokens naming unknown keys cannot make it fetch again within refresh_interval.
        for n in range(5):
            forged = jwt.encode(
                {"exp": time.time() + 60},
                authorization_server._keys[0].private_key,
                algorithm="ES256",
                headers={"kid": f"unknown-{n}"},
            )
            response = await post(http, url, INIT, forged)
            assert response.status_code == 401
            assert (
                challenge_of(response).get("error_description")
                == f"the token is signed with an unknown key ('unknown-{n}')"
            )
        assert verifier.fetches == 2


async def test_algorithms_are_pinned(authorization_server: AuthorizationServer) -> None:
    assert authorization_server.issuer
    verifier = jwt_verifier(authorization_server)
    public_pem = authorization_server._keys[0].private_key.public_key()
    from cryptography.hazmat.primitives import serialization

    pem = public_pem.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    # The classic confusion: an HMAC token keyed with the public key.
    confused = hand_signed({"alg": "HS256", "typ": "JWT"}, {"exp": time.time() + 60}, pem)
    with pytest.raises(InvalidToken, match="algorithm 'HS256' is not accepted"):
        await verifier.verify(confused)
    unsigned = jwt.encode({"exp": time.time() + 60}, None, algorithm="none")
    with pytest.raises(InvalidToken, match="algorithm 'none' is not accepted"):
        await verifier.verify(unsigned)
    with pytest.raises(ValueError):
        JWTVerifier(keys={"keys": []}, algorithms=["HS256"])
    # Keys given inline need no fetch at all.
    inline = JWTVerifier(keys=authorization_server.jwks, issuer=authorization_server.issuer)
    token = authorization_server.issue_access_token(subject="ada", resource="http://r")
    assert (await inline.verify(token)).subject == "ada" and inline.fetches == 0


async def test_unreachable_jwks_is_503(front_door: str, http: httpx.AsyncClient) -> None:
    verifier = JWTVerifier("http://127.0.0.1:9/jwks", issuer="http://127.0.0.1:9")
    async with protected(front_door, verifier, "http://127.0.0.1:9") as (url, _):
        # The header says ES256: the keys are needed, and cannot be fetched.
        forged = hand_signed({"alg": "ES256", "kid": "k"}, {"exp": time.time() + 60}, b"k")
        response = await post(http, url, INIT, forged)
        assert response.status_code == 503 and response.headers["retry-after"] == "5"
        assert response.json()["error"] == "temporarily_unavailable"


async def test_introspection_verifier(
    front_door: str, authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    issuer = authorization_server.issuer
    assert issuer
    rs = authorization_server.register_client(
        token_endpoint_auth_method="client_secret_basic", grant_types=["client_credentials"]
    )
    verifier = IntrospectionVerifier(
        f"{issuer}/introspect", client_id=str(rs.client_id), client_secret=str(rs.client_secret)
    )
    async with protected(front_door, verifier, issuer) as (url, _):
        app = authorization_server.register_client(
            token_endpoint_auth_method="client_secret_post", grant_types=["client_credentials"]
        )
        form = {
            "grant_type": "client_credentials",
            "client_id": str(app.client_id),
            "client_secret": str(app.client_secret),
            "scope": "mcp",
            "resource": url,
        }
        token = (await http.post(f"{issuer}/token", data=form)).json()["access_token"]
        assert result_of(await call(http, url, token, "whoami"))["structuredContent"] == {
            "sub": app.client_id,
            "client": app.client_id,
            "scopes": ["mcp"],
        }
        assert verifier.requests == 3  # each of the 3 POSTs asked (no cache by default)
        await http.post(
            f"{issuer}/revoke",
            data={
                "token": token,
                "client_id": str(app.client_id),
                "client_secret": str(app.client_secret),
            },
        )
        revoked = await post(http, url, INIT, token)
        assert (
            revoked.status_code == 401
            and challenge_of(revoked).get("error_description") == "the token is not active"
        )
        # Wrong resource-server credentials: the verdict is unknown, not "invalid".
        bad = IntrospectionVerifier(
            f"{issuer}/introspect", client_id=str(rs.client_id), client_secret="wrong"
        )
        from mcp_trio.auth.server import VerifierUnavailable

        with pytest.raises(VerifierUnavailable):
            await bad.verify(token)


async def test_introspection_cache(authorization_server: AuthorizationServer) -> None:
    issuer = authorization_server.issuer
    rs = authorization_server.register_client(
        token_endpoint_auth_method="client_secret_post", grant_types=["client_credentials"]
    )
    verifier = IntrospectionVerifier(
        f"{issuer}/introspect",
        client_id=str(rs.client_id),
        client_secret=str(rs.client_secret),
        auth_method="client_secret_post",
        cache_ttl=60,
        cache_size=1,
    )
    one = authorization_server.issue_access_token(subject="one", resource="http://r")
    two = authorization_server.issue_access_token(subject="two", resource="http://r")
    assert (await verifier.verify(one)).subject == "one"
    assert (await verifier.verify(one)).subject == "one"
    assert verifier.requests == 1
    assert (await verifier.verify(two)).subject == "two"
    assert (await verifier.verify(one)).subject == "one"  # pushed out by two (size 1)
    assert verifier.requests == 3


async def test_callback_verifier(front_door: str, http: httpx.AsyncClient) -> None:
    async def lookup(token: str) -> Any:
        if token == "good":
            return {"sub": "ada", "client_id": "cli", "scope": "mcp", "aud": resource[0]}
        if token == "typed":
            return AccessToken(subject="bob", scopes=frozenset({"mcp"}), audience=(resource[0],))
        return None

    resource: list[str] = []
    auth_server = "http://127.0.0.1:9"
    async with protected(front_door, CallbackVerifier(lookup), auth_server) as (url, _):
        resource.append(url)
        assert result_of(await call(http, url, "good", "whoami"))["structuredContent"]["sub"] == "ada"
        assert result_of(await call(http, url, "typed", "whoami"))["structuredContent"]["sub"] == "bob"
        refused = await post(http, url, INIT, "bad")
        assert refused.status_code == 401 and challenge_of(refused).get("error") == "invalid_token"
    sync = CallbackVerifier(lambda token: {"sub": token, "exp": time.time() - 1})
    assert (await sync.verify("x")).expires_at is not None


async def test_audience_options() -> None:
    token = AccessToken(audience=("https://API.example.com:443/",))
    auth = ResourceServer(
        "https://api.example.com",
        authorization_servers=[],
        verifier=CallbackVerifier(lambda t: token),
    )
    request = HttpRequest("POST", {"authorization": "Bearer t", "host": "api.example.com"}, b"{}", "/")
    assert await auth.check(request) is token  # canonical forms compared (RFC 8707)
    elsewhere = ResourceServer(
        "https://other.example.com/mcp",
        authorization_servers=[],
        verifier=CallbackVerifier(lambda t: token),
    )
    assert not isinstance(await elsewhere.check(request), AccessToken)
    extra = ResourceServer(
        "https://other.example.com/mcp",
        authorization_servers=[],
        verifier=CallbackVerifier(lambda t: token),
        audiences=["https://api.example.com"],
    )
    assert await extra.check(request) is token


async def test_endpoint_settings_are_kept(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """Host checks and limits of the endpoint still apply in front of the guard."""
    assert authorization_server.issuer
    server = make_server()
    endpoint = StreamableHTTP(server.serve_session, max_body_size=100)
    auth = ResourceServer(
        "http://127.0.0.1:1/mcp",
        authorization_servers=[authorization_server.issuer],
        verifier=jwt_verifier(authorization_server),
    )
    guarded = auth.protect(endpoint)
    assert guarded.max_body_size == 100
    async with trio.open_nursery() as nursery:
        await nursery.start(endpoint.run)
        urls = await nursery.start(serve_h11, guarded, "127.0.0.1", 0)
        evil = await http.post(urls[0] + "/mcp", content=b"{}", headers={**ACCEPT, "host": "evil.example"})
        assert evil.status_code == 421
        nursery.cancel_scope.cancel()


async def test_before_the_resource_is_known() -> None:
    """Until bind_resource, the resource is the request's own URL; a Host that
    makes no URL does not break anything."""
    token = AccessToken(audience=("http://127.0.0.1:5/mcp",))
    auth = ResourceServer(None, authorization_servers=[], verifier=CallbackVerifier(lambda t: token))
    request = HttpRequest("POST", {"authorization": "Bearer t", "host": "127.0.0.1:5"}, b"{}", "/mcp")
    assert await auth.check(request) is token
    odd = HttpRequest("POST", {"authorization": "Bearer t", "host": "[bad"}, b"{}", "/mcp")
    refusal = await auth.check(odd)
    assert not isinstance(refusal, AccessToken) and refusal.status == 401
    assert auth.metadata_url(auth._resource_for(odd)) == (
        "http://localhost/.well-known/oauth-protected-resource/mcp"
    )
    auth.bind_resource("http://127.0.0.1:5/mcp")
    auth.bind_resource("http://127.0.0.1:6/mcp")  # the first one stays
    assert auth.resource == "http://127.0.0.1:5/mcp"


async def test_token_types_when_asked(authorization_server: AuthorizationServer) -> None:
    strict = JWTVerifier(keys=authorization_server.jwks, token_types=["at+jwt", "application/at+jwt"])
    token = authorization_server.issue_access_token(subject="ada", resource="http://r")
    assert (await strict.verify(token)).subject == "ada"  # the example server writes at+jwt
    key = authorization_server._keys[0]
    plain = jwt.encode(
        {"exp": time.time() + 60}, key.private_key, algorithm="ES256", headers={"kid": key.kid}
    )
    with pytest.raises(InvalidToken, match="not an access token type"):
        await strict.verify(plain)
    assert (await JWTVerifier(keys=authorization_server.jwks).verify(plain)).subject is None


async def test_no_auth_outside_a_protected_endpoint() -> None:
    """Over a transport without an authorization layer, ``ctx.auth`` is None."""
    from mcp_trio import open_memory_transport_pair, open_session

    server = Server("plain", "1")
    seen: list[Any] = []

    @server.tool
    async def peek(ctx: Context) -> str:
        seen.append(ctx.auth)
        return "ok"

    a, b = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, a)
        async with open_session(b, role="client", info={"name": "c", "version": "1"}) as client:
            await client.connect()
            await client.request("tools/call", {"name": "peek", "arguments": {}})
        nursery.cancel_scope.cancel()
    assert seen == [None]


async def test_stateless_requests_see_the_token(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    """2026-07-28: each POST stands alone; its handler still gets the token."""
    assert authorization_server.issuer
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    async with protected("h11", jwt_verifier(authorization_server), authorization_server.issuer) as (
        url,
        _,
    ):
        token = authorization_server.issue_access_token(
            subject="eve", client_id="app", scopes=["mcp"], resource=url
        )
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}, "_meta": meta},
        }
        headers = {
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": "whoami",
        }
        response = await post(http, url, message, token, **headers)
        assert result_of(response)["structuredContent"] == {
            "sub": "eve",
            "client": "app",
            "scopes": ["mcp"],
        }
