"""The OAuth client against hostile servers: the URLs it is told to fetch
(SSRF, the MCP security best practices) and forged loopback callbacks.

The servers are the ones of :mod:`tests.auth.test_client_flows` (a gate in
front of an mcp-trio server and a small authorization server, on 127.0.0.1);
a second listener on another local port stands for an internal service and
counts the connections it gets.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from mcp_trio.auth._client_discovery import _error_text
from mcp_trio.auth._client_http import HttpReply, OAuthHttp, UrlGuard
from mcp_trio.auth.client import AuthorizationCodeGrant, LoopbackRedirect
from mcp_trio.transports.http.client._http11 import Failure
from mcp_trio.transports.http.server import HttpRequest
from tests._support.auth_flows import (
    AS,
    Reply,
    Route,
    add_numbers,
    events,
    headless_client,
    protected,
    refused,
)

SECRET = b"internal admin: everything deleted"


@asynccontextmanager
async def internal_service() -> AsyncIterator[tuple[str, list[bytes]]]:
    """A service on another local port: its base URL, and what each connection sent."""
    hits: list[bytes] = []

    async def serve(stream: trio.SocketStream) -> None:
        async with stream:
            with trio.move_on_after(2):
                hits.append(await stream.receive_some(4096))
                await stream.send_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s"
                    % (len(SECRET), SECRET)
                )

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(partial(trio.serve_tcp, serve, 0, host="127.0.0.1"))
        port = listener.socket.getsockname()[1]
        yield f"http://127.0.0.1:{port}", hits
        nursery.cancel_scope.cancel()


async def test_resource_metadata_on_another_origin_is_not_fetched() -> None:
    async with internal_service() as (internal, hits), protected() as setup:
        setup.gate.prm_url = f"{internal}/internal/admin?delete=1"
        message = await refused(setup.url, headless_client())
        assert "not on its own origin" in message and internal in message
        assert SECRET.decode() not in message
        assert hits == []
        assert not events(setup.auth_server, "authorize")


async def test_redirects_to_another_origin_are_not_followed() -> None:
    async with internal_service() as (internal, hits):

        def elsewhere(request: HttpRequest) -> Reply:
            return 302, [("location", f"{internal}/internal/admin?delete=1")], b""

        async with protected(extra_routes={"/moved": Route(elsewhere)}) as setup:
            setup.gate.prm_url = setup.url.replace("/mcp", "/moved")
            # the redirect is not followed; the well-known URL has the metadata
            assert await add_numbers(setup.url, headless_client(timeout=2)) == 5
            assert hits == []
            http = OAuthHttp(timeout=2).guarded(UrlGuard(allow_insecure_loopback=True))
            with pytest.raises(Failure, match="another origin"):
                await http.get(setup.gate.prm_url)
            assert hits == []


@pytest.mark.parametrize(
    ("issuer", "why"),
    [
        ("http://auth.example", "not https"),
        ("https://10.0.0.1", "not a public address"),
        ("https://169.254.169.254/latest", "not a public address"),
        ("https://[::ffff:192.168.1.1]", "not a public address"),
        ("https://[fd00::1]", "not a public address"),
    ],
)
async def test_authorization_servers_outside_the_rules_are_refused(issuer: str, why: str) -> None:
    async with protected(prm={"authorization_servers": [issuer]}) as setup:
        message = await refused(setup.url, headless_client(timeout=1))
        assert why in message and "the authorization server" in message


class InwardAS(AS):
    """An authorization server whose metadata points an endpoint into a private network."""

    endpoint = "authorization_endpoint"

    def metadata(self, request: HttpRequest) -> Reply:
        status, headers, body = super().metadata(request)
        doc = json.loads(body)
        doc[self.endpoint] = "https://192.168.1.1/admin"
        return status, headers, json.dumps(doc).encode()


@pytest.mark.parametrize("endpoint", ["authorization_endpoint", "token_endpoint"])
async def test_endpoints_outside_the_rules_are_refused(endpoint: str) -> None:
    auth_server = InwardAS()
    auth_server.endpoint = endpoint
    async with protected(auth_server=auth_server) as setup:
        message = await refused(setup.url, headless_client(timeout=1))
        assert "https://192.168.1.1/admin" in message and "not a public address" in message


async def test_loopback_http_needs_the_development_option() -> None:
    async with protected() as setup:
        message = await refused(setup.url, headless_client(allow_insecure_loopback=False))
        assert "allow_insecure_loopback" in message
        assert setup.auth_server.log == []  # nothing was fetched, not even the metadata


@pytest.mark.parametrize(
    ("url", "loopback_ok", "allowed"),
    [
        ("https://auth.example.com/x", False, True),
        ("https://93.184.216.34", False, True),
        ("http://auth.example.com", True, False),  # http only for loopback
        ("https://127.0.0.1:8443", False, False),
        ("https://127.0.0.1:8443", True, True),
        ("http://127.0.0.2", True, True),
        ("http://localhost:3000", True, True),
        ("http://app.localhost", False, False),
        ("http://[::1]:80", True, True),
        ("https://[::ffff:127.0.0.1]", False, False),
        ("https://0.0.0.0", True, False),
        ("https://192.168.0.1", True, False),
        ("https://172.16.5.5", True, False),
        ("https://100.64.0.1", True, False),  # shared address space
        ("https://[fe80::1]", True, False),
        ("https://user:pw@auth.example.com", False, False),
        ("ftp://auth.example.com", True, False),
        ("https://auth.example.com:99999", False, False),
        ("https:///nohost", False, False),
    ],
)
def test_url_guard(url: str, loopback_ok: bool, allowed: bool) -> None:
    guard = UrlGuard(allow_insecure_loopback=loopback_ok)
    if allowed:
        guard.check(url)
    else:
        with pytest.raises(Failure, match="refusing to fetch"):
            guard.check(url)


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("2852039166", "169.254.169.254"),  # (the cloud metadata address)
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("1572395042", "93.184.216.34"),  # (a public address, written so as not to look like one)
    ],
)
@pytest.mark.parametrize("loopback_ok", [False, True])
def test_numeric_hex_and_octal_spellings_of_an_address_are_refused(
    host: str, address: str, loopback_ok: bool
) -> None:
    guard = UrlGuard(allow_insecure_loopback=loopback_ok)
    for scheme in ("http", "https"):
        with pytest.raises(Failure, match=f"{host} is the IPv4 address {address} written another way"):
            guard.check(f"{scheme}://{host}/.well-known/oauth-authorization-server")
    guard.check("https://0x.example.com/x")  # (a host name that only starts like a number)
    guard.check("https://deadbeef.example/x")


def test_a_failed_response_is_not_echoed() -> None:
    text = _error_text(HttpReply("https://as.example/register", 500, {}, SECRET))
    assert text == "HTTP 500 from https://as.example/register"
    refusal = b'{"error": "invalid_client", "error_description": "unknown client"}'
    assert _error_text(HttpReply("u", 400, {}, refusal)) == "invalid_client (unknown client)"


async def test_a_forged_loopback_callback_does_not_end_the_login() -> None:
    """A callback with another state gets a 400 and the listener waits for the real one."""
    http = OAuthHttp(timeout=5)
    forged: list[int] = []
    async with protected() as setup, trio.open_nursery() as nursery:

        async def callback(location: str) -> None:
            for _ in range(50):  # the listener may not be accepting yet
                try:
                    forged.append((await http.request("GET", location)).status)
                    return
                except Failure:
                    await trio.sleep(0.02)

        async def browser(url: str) -> None:
            reply = await http.request("GET", url)
            location = reply.location()
            assert location is not None and "state=" in location
            base, _, query = location.partition("?")
            await callback(f"{base}?code=attacker-code&state=forged")
            await callback(f"{base}?{query}")

        redirect = LoopbackRedirect(open_url=lambda url: nursery.start_soon(browser, url), timeout=5)
        auth = headless_client(grant=AuthorizationCodeGrant(redirect))
        assert await add_numbers(setup.url, auth) == 5
        assert forged == [400, 200]
