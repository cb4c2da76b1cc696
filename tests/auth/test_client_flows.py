"""The OAuth 2.1 client (:mod:`mcp_trio.auth.client`) against real local servers.

Each test runs, on 127.0.0.1, a real mcp-trio server behind a small
resource-server gate (it checks bearer tokens and answers 401/403 with RFC 6750
/ RFC 9728 challenges) and a small authorization server that really checks
what the client sends: PKCE verifier against challenge, client credentials,
``resource``, ``state`` round trip, assertions and DPoP proofs (with PyJWT).
The client under test is the real one, connected with ``connect_http(auth=...)``.
"""

from __future__ import annotations

import pytest
import trio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp_trio import McpError
from mcp_trio.auth._client_http import OAuthHttp
from mcp_trio.auth._metadata import ClientInformation
from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    InMemoryTokenStorage,
    LoopbackRedirect,
    OAuthClient,
)
from mcp_trio.transports.http.client._http11 import Failure
from mcp_trio.transports.http.server import HttpRequest
from tests._support.auth_flows import (
    AS,
    REDIRECT,
    Reply,
    Route,
    add_numbers,
    events,
    headless_client,
    json_reply,
    protected,
    refused,
)

# ------------------------------------------------------------ the servers


# ------------------------------------------------------------ helpers


# ------------------------------------------------------------ the flows


async def test_authorization_code_flow_with_registration_and_pkce() -> None:
    async with protected() as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        auth_server = setup.auth_server
        assert not auth_server.failures
        [registration] = events(auth_server, "register")
        assert registration["redirect_uris"] == [REDIRECT]
        assert registration["application_type"] == "native"
        [authorize] = events(auth_server, "authorize")
        assert authorize["code_challenge_method"] == "S256"
        assert authorize["resource"] == setup.url  # exactly as the metadata publishes it
        assert "scope" not in authorize  # nothing to choose from: omitted
        [token] = events(auth_server, "token")
        assert token["grant_type"] == "authorization_code" and token["resource"] == setup.url
        # tokens travel in the header only
        assert all("access_token" not in seen["query"] for seen in setup.gate.seen)


async def test_discovery_without_resource_metadata_in_the_challenge() -> None:
    """The well-known path-suffixed URL is found without a ``resource_metadata`` hint."""
    async with protected(prm_in_challenge=False) as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "prm")


async def test_tokens_are_kept_in_storage_across_connections() -> None:
    storage = InMemoryTokenStorage()
    async with protected() as setup:
        await add_numbers(setup.url, headless_client(storage=storage))
        await add_numbers(setup.url, headless_client(storage=storage))
        assert len(events(setup.auth_server, "authorize")) == 1
        assert len(events(setup.auth_server, "register")) == 1


async def test_refresh_token_is_used_when_the_access_token_is_refused() -> None:
    async with protected(auth_server=AS(refresh=True)) as setup:
        auth = headless_client()
        await add_numbers(setup.url, auth)
        setup.auth_server.tokens.clear()  # the server forgets every access token
        await add_numbers(setup.url, auth)
        grants = [t["grant_type"] for t in events(setup.auth_server, "token")]
        assert grants == ["authorization_code", "refresh_token"]
        assert len(events(setup.auth_server, "authorize")) == 1


async def test_a_token_about_to_expire_is_refreshed_before_use() -> None:
    async with protected(auth_server=AS(refresh=True, expires_in=5)) as setup:
        auth = headless_client()
        await add_numbers(setup.url, auth)  # 5 s is within the refresh margin: refreshed early
        grants = [t["grant_type"] for t in events(setup.auth_server, "token")]
        assert grants[0] == "authorization_code" and "refresh_token" in grants[1:]
        assert len(events(setup.auth_server, "authorize")) == 1


async def test_scopes_come_from_the_challenge_then_the_metadata() -> None:
    async with protected(scope_hint="read") as setup:
        await add_numbers(setup.url, headless_client())
        assert events(setup.auth_server, "authorize")[0]["scope"] == "read"
    async with protected(prm={"scopes_supported": ["a", "b"]}) as setup:
        await add_numbers(setup.url, headless_client())
        assert events(setup.auth_server, "authorize")[0]["scope"] == "a b"


async def test_offline_access_only_when_the_authorization_server_lists_it() -> None:
    auth_server = AS(scopes_supported=["read", "offline_access"])
    async with protected(auth_server=auth_server, scope_hint="read") as setup:
        await add_numbers(setup.url, headless_client())
        assert events(setup.auth_server, "authorize")[0]["scope"] == "read offline_access"
        assert "refresh_token" in events(setup.auth_server, "register")[0]["grant_types"]
    async with protected(auth_server=AS(scopes_supported=["read"]), scope_hint="read") as setup:
        await add_numbers(setup.url, headless_client())
        assert events(setup.auth_server, "authorize")[0]["scope"] == "read"


async def test_step_up_asks_for_the_union_of_scopes() -> None:
    async with protected(scope_hint="read", call_scope="write") as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        scopes = [a["scope"] for a in events(setup.auth_server, "authorize")]
        assert scopes == ["read", "read write"]


async def test_step_up_gives_up_when_nothing_new_is_asked() -> None:
    """A 403 for a scope already asked for (and refused) cannot be fixed by asking again."""
    async with protected(auth_server=AS(grantable={"read"}), scope_hint="read", call_scope="admin") as setup:
        message = await refused(setup.url, headless_client())
        assert "403" in message
        scopes = [a["scope"] for a in events(setup.auth_server, "authorize")]
        assert scopes == ["read", "read admin"]


@pytest.mark.parametrize("method", ["client_secret_basic", "client_secret_post", "none"])
async def test_token_endpoint_auth_method_follows_the_server(method: str) -> None:
    async with protected(auth_server=AS(auth_methods=[method])) as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "register")[0]["token_endpoint_auth_method"] == method
        assert [e["method"] for e in events(setup.auth_server, "auth-method")] == [method]


async def test_pre_registered_client_skips_registration() -> None:
    auth_server = AS(registration=False, auth_methods=["client_secret_basic"])
    auth_server.clients["pre"] = "s3cret"
    async with protected(auth_server=auth_server) as setup:
        client = ClientInformation(client_id="pre", client_secret="s3cret")
        assert await add_numbers(setup.url, headless_client(client=client)) == 5
        assert not events(setup.auth_server, "register")
        assert events(setup.auth_server, "authorize")[0]["client_id"] == "pre"


async def test_no_registration_possible_is_a_clear_error() -> None:
    async with protected(auth_server=AS(registration=False)) as setup:
        assert "no dynamic registration" in await refused(setup.url, headless_client())


async def test_client_id_metadata_document_when_supported() -> None:
    cimd = "https://client.example/metadata.json"
    async with protected(auth_server=AS(cimd=True)) as setup:
        assert await add_numbers(setup.url, headless_client(client_metadata_url=cimd)) == 5
        assert not events(setup.auth_server, "register")
        assert events(setup.auth_server, "authorize")[0]["client_id"] == cimd
    async with protected(auth_server=AS(cimd=False)) as setup:  # not supported: register
        await add_numbers(setup.url, headless_client(client_metadata_url=cimd))
        assert events(setup.auth_server, "register")


async def test_client_credentials_with_private_key_jwt() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    auth_server = AS(auth_methods=["private_key_jwt"], client_public_key=key.public_key(), registration=False)
    async with protected(auth_server=auth_server, scope_hint="svc") as setup:
        auth = OAuthClient(
            grant=ClientCredentialsGrant(),
            client=ClientInformation(client_id="svc-client"),
            private_key=pem,
            allow_insecure_loopback=True,
        )
        assert await add_numbers(setup.url, auth) == 5
        [token] = events(setup.auth_server, "token")
        assert token["grant_type"] == "client_credentials" and token["scope"] == "svc"
        assert not events(setup.auth_server, "authorize")


async def test_dpop_bound_tokens_with_server_nonces() -> None:
    auth_server = AS(dpop_algs=["ES256"], dpop_nonce="as-nonce")
    async with protected(auth_server=auth_server, rs_nonce="rs-nonce") as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "dpop-nonce-challenge")
        presented = [seen for seen in setup.gate.seen if seen.get("authorization", "").startswith("DPoP ")]
        assert presented and not any(s.get("authorization", "").startswith("Bearer") for s in setup.gate.seen)
        proofs = [s["dpop"] for s in presented]
        assert len(set(proofs)) == len(proofs)  # a fresh proof on every request


async def test_2025_03_26_server_without_any_metadata() -> None:
    """No resource metadata, no server metadata: /authorize, /token, /register at the origin."""
    async with protected(auth_server=AS(publish_metadata=False), prm=False) as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "register") and events(setup.auth_server, "token")
        assert events(setup.auth_server, "authorize")[0]["code_challenge_method"] == "S256"


# ------------------------------------------------------------ refusals


async def test_refuses_a_server_without_pkce_s256() -> None:
    for methods in (None, ["plain"]):
        async with protected(auth_server=AS(pkce_methods=methods)) as setup:
            assert "PKCE S256" in await refused(setup.url, headless_client())
            assert not events(setup.auth_server, "authorize")


async def test_refuses_resource_metadata_for_another_resource() -> None:
    async with protected(prm={"resource": "https://elsewhere.example/mcp"}) as setup:
        assert "refusing to use it" in await refused(setup.url, headless_client())
        assert not events(setup.auth_server, "metadata")


async def test_refuses_authorization_server_metadata_with_another_issuer() -> None:
    auth_server = AS()
    async with protected(auth_server=auth_server) as setup:
        auth_server.issuer_override = "https://attacker.example"
        message = await refused(setup.url, headless_client())
        assert "names the issuer 'https://attacker.example'" in message
        assert not events(setup.auth_server, "register") and not events(setup.auth_server, "authorize")


async def test_refuses_a_redirect_with_a_forged_state() -> None:
    async with protected(auth_server=AS(bad_state=True)) as setup:
        assert "state does not match" in await refused(setup.url, headless_client())
        assert not events(setup.auth_server, "token")


@pytest.mark.parametrize(
    ("supported", "sent", "ok"),
    [
        (True, "correct", True),
        (None, None, True),
        (True, None, False),  # promised but missing
        (True, "https://evil.example", False),
        (None, "https://evil.example", False),  # not promised, present and wrong
    ],
)
async def test_rfc9207_iss_checks(supported: bool | None, sent: str | None, ok: bool) -> None:
    async with protected(auth_server=AS(iss_supported=supported, send_iss=sent)) as setup:
        if ok:
            assert await add_numbers(setup.url, headless_client()) == 5
        else:
            assert "iss" in await refused(setup.url, headless_client())
            assert not events(setup.auth_server, "token")


async def test_malformed_metadata_is_a_clear_error() -> None:
    async with protected(prm={"authorization_servers": "not a list"}) as setup:
        message = await refused(setup.url, headless_client())
        assert "bad protected resource metadata" in message


async def test_garbage_challenges_do_not_crash() -> None:
    async with protected() as setup:
        setup.gate.prm_url = 'x", ,,, =="'
        assert await add_numbers(setup.url, headless_client()) == 5  # falls back to well-known URLs


# ------------------------------------------------------------ loopback redirect


async def test_loopback_redirect_receives_the_code() -> None:
    """A "browser" (an HTTP client task) follows the authorization URL to the loopback listener."""
    http = OAuthHttp(timeout=5)
    async with protected() as setup, trio.open_nursery() as nursery:

        async def browser(url: str) -> None:
            reply = await http.request("GET", url)
            location = reply.location()
            assert location is not None and location.startswith("http://127.0.0.1:")
            for _ in range(50):  # the listener may not be accepting yet
                try:
                    await http.request("GET", location)
                    return
                except Failure:
                    await trio.sleep(0.02)

        redirect = LoopbackRedirect(open_url=lambda url: nursery.start_soon(browser, url), timeout=5)
        auth = headless_client(grant=AuthorizationCodeGrant(redirect))
        assert await add_numbers(setup.url, auth) == 5
        assert events(setup.auth_server, "register")[0]["redirect_uris"] == [redirect.redirect_uri]


async def test_loopback_redirect_times_out() -> None:
    redirect = LoopbackRedirect(open_url=lambda url: None, timeout=0.2)
    with trio.fail_after(5), pytest.raises(Exception, match="no redirect arrived"):
        await redirect.authorize("http://127.0.0.1:1/authorize")


async def test_a_server_that_never_accepts_is_retried_a_bounded_number_of_times() -> None:
    async with protected() as setup:
        setup.gate.check = lambda request: json_reply(  # type: ignore[method-assign]
            401, {"error": "invalid_token"}, [("www-authenticate", setup.gate.challenge())]
        )
        with trio.fail_after(10), pytest.raises(McpError) as info:
            await add_numbers(setup.url, headless_client())
        assert info.value.data["status"] == 401
        assert 1 <= len(events(setup.auth_server, "authorize")) <= 3


# ------------------------------------------------------------ bounded HTTP


async def test_authorization_server_requests_are_bounded() -> None:
    def huge(request: HttpRequest) -> Reply:
        return 200, [("content-type", "application/json")], b" " * (2 * 1024 * 1024)

    def loop(request: HttpRequest) -> Reply:
        return 302, [("location", "/loop")], b""

    def slow_ok(request: HttpRequest) -> Reply:
        return json_reply(200, {"ok": True})

    routes = {"/huge": Route(huge), "/loop": Route(loop), "/ok": Route(slow_ok)}
    async with protected(extra_routes=routes) as setup:
        base = setup.url.rsplit("/mcp", 1)[0]
        http = OAuthHttp(timeout=5, max_size=1024 * 1024)
        with pytest.raises(Failure, match="larger than"):
            await http.request("GET", f"{base}/huge")
        reply = await http.get(f"{base}/loop")  # gives up following after a few hops
        assert reply.status == 302
        assert (await http.get(f"{base}/ok")).json() == {"ok": True}
        with pytest.raises(ValueError):
            await http.request("GET", "ftp://example/")


async def test_a_forgotten_registration_is_made_again() -> None:
    storage = InMemoryTokenStorage()
    async with protected() as setup:
        await add_numbers(setup.url, headless_client(storage=storage))
        setup.auth_server.clients.clear()  # the server restarted and forgot its clients
        setup.auth_server.tokens.clear()
        assert await add_numbers(setup.url, headless_client(storage=storage)) == 5
        assert len(events(setup.auth_server, "register")) == 2


async def test_challenges_in_separate_headers_are_all_read() -> None:
    async with protected(scope_hint="read") as setup:
        bearer = setup.gate.challenge()
        setup.gate.check = lambda request: (  # type: ignore[method-assign]
            json_reply(
                401,
                {"error": "invalid_token"},
                [("www-authenticate", 'Basic realm="x"'), ("www-authenticate", bearer)],
            )
            if request.headers.get("authorization", "").partition(" ")[2] not in setup.auth_server.tokens
            else None
        )
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "authorize")[0]["scope"] == "read"


async def test_a_web_page_at_a_well_known_url_is_passed_over() -> None:
    def page(request: HttpRequest) -> Reply:
        return 200, [("content-type", "text/html")], b"<!doctype html><p>app</p>"

    def root_metadata(request: HttpRequest) -> Reply:
        origin = f"http://{request.headers['host']}"
        return json_reply(200, {"resource": f"{origin}/mcp", "authorization_servers": [origin]})

    routes = {
        "/.well-known/oauth-protected-resource/mcp": Route(page),
        "/.well-known/oauth-protected-resource": Route(root_metadata),
    }
    async with protected(prm=False, extra_routes=routes) as setup:
        assert await add_numbers(setup.url, headless_client()) == 5
        assert events(setup.auth_server, "authorize")[0]["resource"] == setup.url
