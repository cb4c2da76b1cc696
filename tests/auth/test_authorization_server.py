"""The example authorization server (examples.authorization_server), every
endpoint and its errors, driven with raw HTTP requests on 127.0.0.1."""

from __future__ import annotations

import base64
import subprocess
import sys
import time
import urllib.parse
from functools import partial
from typing import Any

import httpx2 as httpx
import jwt
import pytest
import trio
from cryptography.hazmat.primitives.asymmetric import ec

from examples.authorization_server import CLIENT_ASSERTION_TYPE, AuthorizationServer
from tests._support.auth import pkce_pair

RESOURCE = "http://127.0.0.1:9/mcp"
CALLBACK = "http://127.0.0.1/callback"


def basic(client_id: str, secret: str) -> dict[str, str]:
    pair = f"{urllib.parse.quote_plus(client_id)}:{urllib.parse.quote_plus(secret)}"
    return {"authorization": "Basic " + base64.b64encode(pair.encode()).decode()}


def redirect_params(response: httpx.Response) -> dict[str, list[str]]:
    assert response.status_code == 302, response.text
    return urllib.parse.parse_qs(urllib.parse.urlsplit(response.headers["location"]).query)


async def authorize(
    http: httpx.AsyncClient, server: AuthorizationServer, client_id: str, **overrides: Any
) -> tuple[httpx.Response, str]:
    verifier, challenge = pkce_pair()
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "http://127.0.0.1:51234/callback",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st4te",
        "scope": "mcp files:read",
        "resource": RESOURCE,
    }
    params.update(overrides)
    params = {k: v for k, v in params.items() if v is not None}
    return await http.get(f"{server.issuer}/authorize", params=params), verifier


async def code_for(http: httpx.AsyncClient, server: AuthorizationServer, client_id: str) -> tuple[str, str]:
    response, verifier = await authorize(http, server, client_id)
    return redirect_params(response)["code"][0], verifier


def token_form(code: str, verifier: str, client_id: str | None, **extra: str) -> dict[str, str]:
    form = {"grant_type": "authorization_code", "code": code, "code_verifier": verifier}
    form["redirect_uri"] = "http://127.0.0.1:51234/callback"
    if client_id is not None:
        form["client_id"] = client_id
    form.update(extra)
    return form


def assert_oauth_error(response: httpx.Response, status: int, error: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["error"] == error, body
    assert isinstance(body["error_description"], str) and body["error_description"]
    return body


def decode_with_jwks(token: str, jwks: dict[str, Any], audience: str) -> dict[str, Any]:
    kid = jwt.get_unverified_header(token)["kid"]
    key = next(jwt.PyJWK(k) for k in jwks["keys"] if k["kid"] == kid)
    return jwt.decode(token, key.key, algorithms=[key.algorithm_name], audience=audience)


@pytest.fixture
async def http() -> Any:
    async with httpx.AsyncClient(timeout=10) as client:
        yield client


@pytest.fixture
def public_client(authorization_server: AuthorizationServer) -> str:
    info = authorization_server.register_client(redirect_uris=[CALLBACK])
    return str(info.client_id)


# ------------------------------------------------------------- metadata


async def test_metadata_documents(authorization_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    issuer = authorization_server.issuer
    assert issuer is not None and issuer.startswith("http://127.0.0.1:")
    oauth = await http.get(f"{issuer}/.well-known/oauth-authorization-server")
    assert oauth.status_code == 200 and oauth.headers["content-type"] == "application/json"
    document = oauth.json()
    assert document["issuer"] == issuer
    for name, path in [
        ("authorization_endpoint", "/authorize"),
        ("token_endpoint", "/token"),
        ("registration_endpoint", "/register"),
        ("jwks_uri", "/jwks"),
        ("introspection_endpoint", "/introspect"),
        ("revocation_endpoint", "/revoke"),
    ]:
        assert document[name] == issuer + path
    assert document["response_types_supported"] == ["code"]
    assert document["code_challenge_methods_supported"] == ["S256"]
    assert document["grant_types_supported"] == [
        "authorization_code",
        "refresh_token",
        "client_credentials",
    ]
    assert set(document["token_endpoint_auth_methods_supported"]) == {
        "client_secret_basic",
        "client_secret_post",
        "none",
        "private_key_jwt",
    }
    assert document["authorization_response_iss_parameter_supported"] is True
    assert document["scopes_supported"] == ["mcp", "tools:admin", "files:read", "files:write"]
    openid = (await http.get(f"{issuer}/.well-known/openid-configuration")).json()
    assert openid["issuer"] == issuer and openid["token_endpoint"] == document["token_endpoint"]
    assert openid["subject_types_supported"] == ["public"]
    assert openid["id_token_signing_alg_values_supported"] == ["ES256"]
    jwks = (await http.get(f"{issuer}/jwks")).json()
    assert [k["kid"] for k in jwks["keys"]] == [k["kid"] for k in authorization_server.jwks["keys"]]
    assert all("d" not in k for k in jwks["keys"])  # public halves only


async def test_served_by_hypercorn_too(http: httpx.AsyncClient, nursery: trio.Nursery) -> None:
    server = AuthorizationServer(algorithm="ES256")
    issuer = await nursery.start(partial(server.serve, front_door="hypercorn"))
    client = str(server.register_client(redirect_uris=[CALLBACK]).client_id)
    metadata = (await http.get(f"{issuer}/.well-known/oauth-authorization-server")).json()
    assert metadata["issuer"] == issuer
    code, verifier = await code_for(http, server, client)
    token = await http.post(f"{issuer}/token", data=token_form(code, verifier, client))
    assert token.status_code == 200 and token.headers["cache-control"] == "no-store"
    with pytest.raises(ValueError):
        await server.serve(front_door="nginx")


async def test_wrong_method_and_unknown_path(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    issuer = authorization_server.issuer
    response = await http.get(f"{issuer}/token")
    assert response.status_code == 405 and response.headers["allow"] == "POST"
    response = await http.post(f"{issuer}/jwks")
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert (await http.get(f"{issuer}/nowhere")).status_code == 404


# ------------------------------------------------------- the whole flow


async def test_code_pkce_refresh_flow(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    issuer = authorization_server.issuer
    response, verifier = await authorize(http, authorization_server, public_client)
    location = urllib.parse.urlsplit(response.headers["location"])
    assert (location.scheme, location.netloc, location.path) == (
        "http",
        "127.0.0.1:51234",
        "/callback",
    )
    params = redirect_params(response)
    assert params["state"] == ["st4te"] and params["iss"] == [issuer]
    assert len(params["code"]) == 1 and len(params["code"][0]) >= 32

    token = await http.post(f"{issuer}/token", data=token_form(params["code"][0], verifier, public_client))
    assert token.status_code == 200, token.text
    assert token.headers["cache-control"] == "no-store" and token.headers["pragma"] == "no-cache"
    body = token.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600 and body["scope"] == "mcp files:read"
    jwks = (await http.get(f"{issuer}/jwks")).json()
    claims = decode_with_jwks(body["access_token"], jwks, RESOURCE)
    assert claims["iss"] == issuer and claims["aud"] == RESOURCE and claims["sub"] == "user"
    assert claims["client_id"] == public_client and claims["scope"] == "mcp files:read"
    assert jwt.get_unverified_header(body["access_token"])["typ"] == "at+jwt"

    # Refresh: rotated; a narrower scope is allowed, a wider one is not.
    first_refresh = body["refresh_token"]
    refreshed = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first_refresh,
            "client_id": public_client,
            "scope": "mcp",
        },
    )
    assert refreshed.status_code == 200, refreshed.text
    second = refreshed.json()
    assert second["scope"] == "mcp" and second["refresh_token"] != first_refresh
    assert decode_with_jwks(second["access_token"], jwks, RESOURCE)["scope"] == "mcp"
    wider = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": second["refresh_token"],
            "client_id": public_client,
            "scope": "files:write",
        },
    )
    assert_oauth_error(wider, 400, "invalid_scope")

    # The rotated-out refresh token coming back ends the whole grant.
    replay = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first_refresh,
            "client_id": public_client,
        },
    )
    assert_oauth_error(replay, 400, "invalid_grant")
    after = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": second["refresh_token"],
            "client_id": public_client,
        },
    )
    assert_oauth_error(after, 400, "invalid_grant")


async def test_code_is_single_use_and_reuse_revokes(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    issuer = authorization_server.issuer
    code, verifier = await code_for(http, authorization_server, public_client)
    first = await http.post(f"{issuer}/token", data=token_form(code, verifier, public_client))
    assert first.status_code == 200
    again = await http.post(f"{issuer}/token", data=token_form(code, verifier, public_client))
    assert_oauth_error(again, 400, "invalid_grant")
    refresh = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": first.json()["refresh_token"],
            "client_id": public_client,
        },
    )
    assert_oauth_error(refresh, 400, "invalid_grant")


# --------------------------------------------------- authorization errors


async def test_authorize_never_redirects_to_unverified_places(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    response, _ = await authorize(http, authorization_server, "nobody")
    assert_oauth_error(response, 400, "invalid_request")
    response, _ = await authorize(
        http, authorization_server, public_client, redirect_uri="http://evil.example/cb"
    )
    assert_oauth_error(response, 400, "invalid_request")
    response, _ = await authorize(
        http, authorization_server, public_client, redirect_uri="http://127.0.0.1:5/other"
    )
    assert_oauth_error(response, 400, "invalid_request")
    response, _ = await authorize(http, authorization_server, None)  # type: ignore[arg-type]
    assert_oauth_error(response, 400, "invalid_request")
    response = await http.get(f"{authorization_server.issuer}/authorize?client_id=a&client_id=b")
    assert_oauth_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"code_challenge": None}, "invalid_request"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
        ({"code_challenge_method": None}, "invalid_request"),
        ({"code_challenge": "short"}, "invalid_request"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"response_type": None}, "invalid_request"),
        ({"scope": "mcp nonsense"}, "invalid_scope"),
        ({"resource": "not-a-uri"}, "invalid_target"),
        ({"resource": "http://127.0.0.1:9/mcp#frag"}, "invalid_target"),
    ],
)
async def test_authorize_errors_go_back_to_the_client(
    authorization_server: AuthorizationServer,
    http: httpx.AsyncClient,
    public_client: str,
    overrides: dict[str, Any],
    error: str,
) -> None:
    response, _ = await authorize(http, authorization_server, public_client, **overrides)
    params = redirect_params(response)
    assert params["error"] == [error] and params["state"] == ["st4te"]
    assert params["iss"] == [authorization_server.issuer] and "code" not in params
    assert params["error_description"][0]


async def test_denying_server(http: httpx.AsyncClient, nursery: trio.Nursery) -> None:
    server = AuthorizationServer(auto_approve=False, algorithm="ES256")
    await nursery.start(server.serve)
    client = server.register_client(redirect_uris=[CALLBACK])
    response, _ = await authorize(http, server, str(client.client_id), scope=None)
    assert redirect_params(response)["error"] == ["access_denied"]


async def test_deprecated_settings_attributes_reach_the_collaborators(
    http: httpx.AsyncClient, nursery: trio.Nursery
) -> None:
    server = AuthorizationServer(auto_approve=False, algorithm="ES256", scopes_supported=["a"])
    await nursery.start(server.serve)
    client = server.register_client(redirect_uris=[CALLBACK])
    with pytest.deprecated_call(match=r"auto_approve is deprecated: use AuthorizationServer\.authorizer"):
        assert server.auto_approve is False
    with pytest.deprecated_call(match="policy.scopes_supported"):
        assert server.scopes_supported == ["a"]
    with pytest.deprecated_call(match="signing.algorithm"):
        assert server.algorithm == "ES256"
    with pytest.deprecated_call():
        server.auto_approve = True
    assert server.authorizer.auto_approve is True
    response, _ = await authorize(http, server, str(client.client_id), scope=None)
    assert "code" in redirect_params(response)


async def test_resources_are_restricted_when_configured(
    http: httpx.AsyncClient, nursery: trio.Nursery
) -> None:
    server = AuthorizationServer(resources=[RESOURCE], algorithm="ES256")
    await nursery.start(server.serve)
    client = str(server.register_client(redirect_uris=[CALLBACK]).client_id)
    response, _ = await authorize(http, server, client, resource="http://127.0.0.1:10/other")
    assert redirect_params(response)["error"] == ["invalid_target"]
    response, verifier = await authorize(http, server, client, scope=None)
    code = redirect_params(response)["code"][0]
    other = await http.post(
        f"{server.issuer}/token",
        data=token_form(code, verifier, client, resource="http://x.example/"),
    )
    assert_oauth_error(other, 400, "invalid_target")


# ----------------------------------------------------------- token errors


async def test_token_request_errors(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    url = f"{authorization_server.issuer}/token"
    code, verifier = await code_for(http, authorization_server, public_client)
    assert_oauth_error(
        await http.post(url, json={"grant_type": "authorization_code"}), 400, "invalid_request"
    )
    assert_oauth_error(await http.post(url, data={"client_id": public_client}), 400, "invalid_request")
    unsupported = await http.post(url, data={"grant_type": "password", "client_id": public_client})
    assert_oauth_error(unsupported, 400, "unsupported_grant_type")
    credentials = await http.post(url, data={"grant_type": "client_credentials", "client_id": public_client})
    assert_oauth_error(credentials, 400, "unauthorized_client")
    repeated = await http.post(
        url,
        content=f"grant_type=a&grant_type=b&client_id={public_client}",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert_oauth_error(repeated, 400, "invalid_request")
    not_utf8 = await http.post(
        url,
        content=b"grant_type=%ff",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert_oauth_error(not_utf8, 400, "invalid_request")
    assert_oauth_error(
        await http.post(url, data=token_form("nope", verifier, public_client)), 400, "invalid_grant"
    )
    no_verifier = token_form(code, verifier, public_client)
    del no_verifier["code_verifier"]
    assert_oauth_error(await http.post(url, data=no_verifier), 400, "invalid_request")
    wrong = token_form(code, pkce_pair()[0], public_client)
    assert_oauth_error(await http.post(url, data=wrong), 400, "invalid_grant")
    moved = token_form(code, verifier, public_client, redirect_uri="http://127.0.0.1:51235/callback")
    assert_oauth_error(await http.post(url, data=moved), 400, "invalid_grant")
    outside = token_form(code, verifier, public_client, resource="http://127.0.0.1:10/elsewhere")
    assert_oauth_error(await http.post(url, data=outside), 400, "invalid_target")
    # None of the refusals used the code up.
    assert (await http.post(url, data=token_form(code, verifier, public_client))).status_code == 200


async def test_expired_code(http: httpx.AsyncClient, nursery: trio.Nursery) -> None:
    server = AuthorizationServer(code_ttl=0, algorithm="ES256")
    await nursery.start(server.serve)
    client = str(server.register_client(redirect_uris=[CALLBACK]).client_id)
    response, verifier = await authorize(http, server, client, scope=None)
    code = redirect_params(response)["code"][0]
    await trio.sleep(0.01)
    assert_oauth_error(
        await http.post(f"{server.issuer}/token", data=token_form(code, verifier, client)),
        400,
        "invalid_grant",
    )


async def test_another_clients_code_is_refused(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    other = str(authorization_server.register_client(redirect_uris=[CALLBACK]).client_id)
    code, verifier = await code_for(http, authorization_server, public_client)
    response = await http.post(f"{authorization_server.issuer}/token", data=token_form(code, verifier, other))
    assert_oauth_error(response, 400, "invalid_grant")


# --------------------------------------------------- client authentication


async def test_client_secret_basic_and_post(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    url = f"{authorization_server.issuer}/token"
    grants = ["authorization_code", "refresh_token", "client_credentials"]
    basic_client = authorization_server.register_client(
        client_id="basic:client",
        redirect_uris=[CALLBACK],
        token_endpoint_auth_method="client_secret_basic",
        grant_types=grants,
    )
    post_client = authorization_server.register_client(
        redirect_uris=[CALLBACK],
        token_endpoint_auth_method="client_secret_post",
        grant_types=grants,
    )
    assert basic_client.client_secret and post_client.client_secret
    code, verifier = await code_for(http, authorization_server, "basic:client")
    ok = await http.post(
        url,
        data=token_form(code, verifier, None),
        headers=basic("basic:client", basic_client.client_secret),
    )
    assert ok.status_code == 200, ok.text

    form = {"grant_type": "client_credentials", "scope": "mcp", "resource": RESOURCE}
    wrong = await http.post(url, data=form, headers=basic("basic:client", "wrong"))
    assert_oauth_error(wrong, 401, "invalid_client")
    assert wrong.headers["www-authenticate"] == 'Basic realm="oauth"'
    garbled = await http.post(url, data=form, headers={"authorization": "Basic !!!"})
    assert_oauth_error(garbled, 401, "invalid_client")
    as_post = await http.post(
        url, data={**form, "client_id": "basic:client", "client_secret": basic_client.client_secret}
    )
    assert_oauth_error(as_post, 401, "invalid_client")  # registered for basic, not post
    assert "www-authenticate" not in as_post.headers
    both = await http.post(
        url,
        data={**form, "client_secret": post_client.client_secret},
        headers=basic("basic:client", basic_client.client_secret),
    )
    assert_oauth_error(both, 400, "invalid_request")
    as_public = await http.post(url, data={**form, "client_id": str(post_client.client_id)})
    assert_oauth_error(as_public, 401, "invalid_client")
    unknown = await http.post(url, data={**form, "client_id": "ghost"})
    assert_oauth_error(unknown, 401, "invalid_client")

    good = await http.post(
        url,
        data={
            **form,
            "client_id": str(post_client.client_id),
            "client_secret": post_client.client_secret,
        },
    )
    assert good.status_code == 200, good.text
    body = good.json()
    assert "refresh_token" not in body and body["scope"] == "mcp"
    claims = jwt.decode(body["access_token"], options={"verify_signature": False})
    assert claims["sub"] == post_client.client_id and claims["aud"] == RESOURCE


async def test_private_key_jwt(authorization_server: AuthorizationServer, http: httpx.AsyncClient) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    jwk = {**jwt.algorithms.ECAlgorithm.to_jwk(key.public_key(), as_dict=True), "kid": "k1"}
    client = authorization_server.register_client(
        token_endpoint_auth_method="private_key_jwt",
        grant_types=["client_credentials"],
        jwks={"keys": [jwk]},
    )
    client_id = str(client.client_id)
    url = f"{authorization_server.issuer}/token"

    def assertion(signer: Any = key, **claims: Any) -> str:
        now = int(time.time())
        body = {
            "iss": client_id,
            "sub": client_id,
            "aud": url,
            "iat": now,
            "exp": now + 60,
            "jti": str(time.monotonic_ns()),
        }
        body.update(claims)
        return jwt.encode(body, signer, algorithm="ES256", headers={"kid": "k1"})

    def form(value: str) -> dict[str, str]:
        return {
            "grant_type": "client_credentials",
            "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "client_assertion": value,
        }

    once = assertion()
    assert (await http.post(url, data=form(once))).status_code == 200
    assert_oauth_error(await http.post(url, data=form(once)), 401, "invalid_client")  # replayed
    stranger = ec.generate_private_key(ec.SECP256R1())
    assert_oauth_error(await http.post(url, data=form(assertion(stranger))), 401, "invalid_client")
    assert_oauth_error(
        await http.post(url, data=form(assertion(exp=int(time.time()) - 10))), 401, "invalid_client"
    )
    assert_oauth_error(
        await http.post(url, data=form(assertion(aud="http://elsewhere"))), 401, "invalid_client"
    )
    assert_oauth_error(await http.post(url, data=form("not.a.jwt")), 401, "invalid_client")
    wrong_type = {**form(assertion()), "client_assertion_type": "urn:other"}
    assert_oauth_error(await http.post(url, data=wrong_type), 401, "invalid_client")
    # The issuer URL is an accepted audience too (RFC 7523 3).
    assert (await http.post(url, data=form(assertion(aud=authorization_server.issuer)))).status_code == 200


# ------------------------------------------------------------ registration


async def test_dynamic_registration(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    url = f"{authorization_server.issuer}/register"
    response = await http.post(
        url,
        json={
            "redirect_uris": ["http://localhost:7777/cb", "com.example.app:/oauth"],
            "client_name": "demo",
            "client_id": "chosen-by-me",
            "grant_types": ["authorization_code", "refresh_token"],
            "application_type": "native",
        },
    )
    assert response.status_code == 201, response.text
    assert response.headers["cache-control"] == "no-store"
    info = response.json()
    assert info["client_id"] != "chosen-by-me" and info["client_secret"]
    assert info["token_endpoint_auth_method"] == "client_secret_basic"  # RFC 7591 default
    assert info["client_name"] == "demo" and info["application_type"] == "native"
    assert info["client_secret_expires_at"] == 0 and isinstance(info["client_id_issued_at"], int)

    public = (
        await http.post(url, json={"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "none"})
    ).json()
    assert "client_secret" not in public
    response, _ = await authorize(http, authorization_server, public["client_id"])
    assert "code" in redirect_params(response)


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({}, "invalid_redirect_uri"),
        ({"redirect_uris": ["http://evil.example/cb"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["https://ok.example/cb#frag"]}, "invalid_redirect_uri"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri"),
        ({"redirect_uris": "http://127.0.0.1/cb"}, "invalid_client_metadata"),
        (
            {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "tls_client_auth"},
            "invalid_client_metadata",
        ),
        (
            {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt"},
            "invalid_client_metadata",
        ),
        ({"redirect_uris": [CALLBACK], "grant_types": ["password"]}, "invalid_client_metadata"),
        ({"redirect_uris": [CALLBACK], "response_types": ["token"]}, "invalid_client_metadata"),
        ({"redirect_uris": [CALLBACK], "scope": "mcp unknown"}, "invalid_client_metadata"),
        (
            {"grant_types": ["client_credentials"], "token_endpoint_auth_method": "none"},
            "invalid_client_metadata",
        ),
        ([1, 2], "invalid_client_metadata"),
    ],
)
async def test_registration_errors(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, body: Any, error: str
) -> None:
    response = await http.post(f"{authorization_server.issuer}/register", json=body)
    assert_oauth_error(response, 400, error)


async def test_registration_needs_json(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    url = f"{authorization_server.issuer}/register"
    assert_oauth_error(await http.post(url, data={"redirect_uris": CALLBACK}), 400, "invalid_client_metadata")
    bad = await http.post(url, content=b"{", headers={"content-type": "application/json"})
    assert_oauth_error(bad, 400, "invalid_client_metadata")


# ------------------------------------------------ introspection, revocation


async def test_introspection_and_revocation(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    issuer = authorization_server.issuer
    rs = authorization_server.register_client(
        token_endpoint_auth_method="client_secret_basic", grant_types=["client_credentials"]
    )
    rs_auth = basic(str(rs.client_id), str(rs.client_secret))
    code, verifier = await code_for(http, authorization_server, public_client)
    tokens = (await http.post(f"{issuer}/token", data=token_form(code, verifier, public_client))).json()

    active = await http.post(f"{issuer}/introspect", data={"token": tokens["access_token"]}, headers=rs_auth)
    assert active.status_code == 200 and active.headers["cache-control"] == "no-store"
    info = active.json()
    assert info["active"] is True and info["client_id"] == public_client and info["sub"] == "user"
    assert info["scope"] == "mcp files:read" and info["aud"] == RESOURCE and info["iss"] == issuer
    assert info["exp"] > time.time()
    refresh_info = (
        await http.post(f"{issuer}/introspect", data={"token": tokens["refresh_token"]}, headers=rs_auth)
    ).json()
    assert refresh_info["active"] is True and refresh_info["token_type"] == "refresh_token"
    junk = await http.post(f"{issuer}/introspect", data={"token": "junk"}, headers=rs_auth)
    assert junk.json() == {"active": False}
    foreign = jwt.encode(
        {"exp": time.time() + 60, "jti": "x", "iss": issuer},
        "secret-key-of-enough-length-32b!",
        algorithm="HS256",
    )
    assert (await http.post(f"{issuer}/introspect", data={"token": foreign}, headers=rs_auth)).json() == {
        "active": False
    }

    # Only authenticated confidential clients may introspect.
    anonymous = await http.post(f"{issuer}/introspect", data={"token": tokens["access_token"]})
    assert_oauth_error(anonymous, 401, "invalid_client")
    public = await http.post(
        f"{issuer}/introspect", data={"token": tokens["access_token"], "client_id": public_client}
    )
    assert_oauth_error(public, 401, "invalid_client")
    assert_oauth_error(
        await http.post(f"{issuer}/introspect", data={}, headers=rs_auth), 400, "invalid_request"
    )

    # Revocation by another client does nothing (and says nothing).
    ignored = await http.post(f"{issuer}/revoke", data={"token": tokens["refresh_token"]}, headers=rs_auth)
    assert ignored.status_code == 200
    revoke = await http.post(
        f"{issuer}/revoke", data={"token": tokens["refresh_token"], "client_id": public_client}
    )
    assert revoke.status_code == 200 and revoke.json() == {}
    assert (
        await http.post(f"{issuer}/introspect", data={"token": tokens["access_token"]}, headers=rs_auth)
    ).json() == {"active": False}
    refresh = await http.post(
        f"{issuer}/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": public_client,
        },
    )
    assert_oauth_error(refresh, 400, "invalid_grant")


async def test_issue_access_token_and_key_rotation(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient
) -> None:
    before = authorization_server.issue_access_token(subject="ada", scopes=["mcp"], resource=RESOURCE)
    old_kid = jwt.get_unverified_header(before)["kid"]
    new_kid = authorization_server.rotate_key(keep_old=True)
    after = authorization_server.issue_access_token(subject="ada", scopes=["mcp"], resource=RESOURCE)
    assert jwt.get_unverified_header(after)["kid"] == new_kid != old_kid
    jwks = (await http.get(f"{authorization_server.issuer}/jwks")).json()
    assert [k["kid"] for k in jwks["keys"]] == [new_kid, old_kid]
    assert decode_with_jwks(before, jwks, RESOURCE)["sub"] == "ada"
    authorization_server.rotate_key()
    assert len(authorization_server.jwks["keys"]) == 1
    expired = authorization_server.issue_access_token(expires_in=-10, resource=RESOURCE)
    with pytest.raises(jwt.ExpiredSignatureError):
        decode_with_jwks(expired, authorization_server.jwks, RESOURCE)


# ------------------------------------------------------------ command line


def test_command_line_server() -> None:
    argv = [
        sys.executable,
        "-m",
        "examples.authorization_server",
        "--client",
        "cli-client",
        "--redirect-uri",
        CALLBACK,
        "--scopes",
        "mcp extra",
    ]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("authorization server at http://127.0.0.1:"), line
        url = line.split(" at ")[1].strip()
        with httpx.Client(timeout=10) as client:
            metadata = client.get(f"{url}/.well-known/oauth-authorization-server").json()
            assert metadata["issuer"] == url and metadata["scopes_supported"] == ["mcp", "extra"]
            verifier, challenge = pkce_pair()
            reply = client.get(
                f"{url}/authorize",
                params={
                    "response_type": "code",
                    "client_id": "cli-client",
                    "redirect_uri": CALLBACK,
                    "code_challenge": challenge,
                    "code_challenge_method": "S256",
                },
            )
            code = redirect_params(reply)["code"][0]  # type: ignore[arg-type]
            token = client.post(
                f"{url}/token",
                data={
                    "grant_type": "authorization_code",
                    "code": code,
                    "code_verifier": verifier,
                    "client_id": "cli-client",
                    "redirect_uri": CALLBACK,
                },
            )
            assert (
                token.status_code == 200
                and jwt.get_unverified_header(token.json()["access_token"])["alg"] == "RS256"
            )
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=10)
    assert "Traceback" not in stderr, stderr


# ------------------------------------------------ client metadata documents


class _Documents:
    """Serves JSON documents by path (the clients' metadata documents)."""

    max_body_size = 0

    def __init__(self) -> None:
        self.documents: dict[str, Any] = {}

    async def handle(self, request: Any, responder: Any) -> None:
        import json

        document = self.documents.get(request.path)
        body = json.dumps(document).encode() if document is not None else b""
        await responder.start(
            200 if document is not None else 404,
            [("content-type", "application/json"), ("content-length", str(len(body)))],
        )
        if body:
            await responder.send(body)
        await responder.end()


async def test_client_id_metadata_documents(http: httpx.AsyncClient, nursery: trio.Nursery) -> None:
    from mcp_trio.transports.http.server import serve_h11

    server = AuthorizationServer(algorithm="ES256", allow_http_client_documents=True)
    await nursery.start(server.serve)
    documents = _Documents()
    routes = {"/liar.json": documents, "/gone.json": documents}
    urls = await nursery.start(
        partial(serve_h11, documents, "127.0.0.1", 0, path="/good.json", routes=routes)
    )
    good, liar, gone = (f"{urls[0]}/{name}.json" for name in ("good", "liar", "gone"))
    documents.documents["/good.json"] = {
        "client_id": good,
        "client_name": "doc client",
        "redirect_uris": [CALLBACK],
    }
    documents.documents["/liar.json"] = {"client_id": good, "redirect_uris": [CALLBACK]}
    metadata = (await http.get(f"{server.issuer}/.well-known/oauth-authorization-server")).json()
    assert metadata["client_id_metadata_document_supported"] is True

    code, verifier = await code_for(http, server, good)
    token = await http.post(f"{server.issuer}/token", data=token_form(code, verifier, good))
    assert token.status_code == 200, token.text
    assert jwt.decode(token.json()["access_token"], options={"verify_signature": False})["client_id"] == good

    for url in (liar, gone):
        response, _ = await authorize(http, server, url)
        assert_oauth_error(response, 400, "invalid_client")
        refused = await http.post(
            f"{server.issuer}/token", data={"grant_type": "client_credentials", "client_id": url}
        )
        assert_oauth_error(refused, 401, "invalid_client")
    # Without the test switch, plain-http documents are not fetched at all.
    strict = AuthorizationServer(algorithm="ES256")
    await nursery.start(strict.serve)
    response, _ = await authorize(http, strict, good)
    assert_oauth_error(response, 400, "invalid_request")


async def test_garbage_never_breaks_it(
    authorization_server: AuthorizationServer, http: httpx.AsyncClient, public_client: str
) -> None:
    """Malformed input of every kind gets a 4xx OAuth answer and the server goes on."""
    issuer = authorization_server.issuer
    form = {"content-type": "application/x-www-form-urlencoded"}
    nasty = [
        "client_id=http://[::1&response_type=code",
        f"client_id={public_client}&redirect_uri=http://[::1:80/cb",
        f"client_id={public_client}&redirect_uri=http://127.0.0.1:99999/callback",
        f"client_id={public_client}&redirect_uri=%ff%fe",
        "client_id=https://[bad/x.json",
        "%%%%&&&==",
        "a=" + "x" * 5000,
    ]
    for query in nasty:
        response = await http.get(f"{issuer}/authorize?{query}")
        assert 400 <= response.status_code < 500 or response.status_code == 302, query
    bodies = [
        b"grant_type=authorization_code&code=%ff",
        b"grant_type=refresh_token&refresh_token=" + b"\x00" * 10,
        b"client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        b"&client_assertion=a.b.c&grant_type=client_credentials",
        b"client_id=http://[::1&grant_type=client_credentials",
        b"\xff\xfe",
        b"=" * 1000,
    ]
    for path in ("/token", "/introspect", "/revoke"):
        for body in bodies:
            response = await http.post(f"{issuer}{path}", content=body, headers=form)
            assert 400 <= response.status_code < 500, (path, body)
            assert response.json()["error"]
        basic = {**form, "authorization": "Basic " + "%" * 10}
        assert (await http.post(f"{issuer}{path}", content=b"a=b", headers=basic)).status_code == 401
    for body in (b"null", b"[]", b'{"redirect_uris": [1]}', b'{"jwks": "x"}', b"\xff"):
        response = await http.post(
            f"{issuer}/register", content=body, headers={"content-type": "application/json"}
        )
        assert response.status_code == 400 and response.json()["error"], body
    too_big = await http.post(f"{issuer}/token", content=b"a" * 100_000, headers=form)
    assert too_big.status_code == 413
    still = await http.get(f"{issuer}/.well-known/oauth-authorization-server")
    assert still.status_code == 200
