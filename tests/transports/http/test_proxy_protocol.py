"""The PROXY protocol (v1 and v2) on the lean doors: a trusted load balancer's header names the
client; a peer that is not one speaks plain HTTP; a missing or broken header ends the connection."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import pytest
import trio

from mcp_trio.server import HttpRequest, Server
from mcp_trio.transports.http.doors._proxy_protocol import (
    V2_SIGNATURE,
    ProxyHeader,
    ProxyProtocolError,
    parse_proxy_header,
)
from tests._support.doors import LEAN_DOORS

GET = b"GET /whoami HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def v2(command: int, family: int, addresses: bytes, tlvs: bytes = b"") -> bytes:
    body = addresses + tlvs
    return V2_SIGNATURE + bytes([0x20 | command, family]) + len(body).to_bytes(2, "big") + body


def v2_tcp4(source: str, tlvs: bytes = b"") -> bytes:
    addresses = ipaddress.IPv4Address(source).packed + ipaddress.IPv4Address("10.0.0.2").packed
    return v2(1, 0x11, addresses + (51234).to_bytes(2, "big") + (443).to_bytes(2, "big"), tlvs)


def v2_tcp6(source: str) -> bytes:
    addresses = ipaddress.IPv6Address(source).packed + ipaddress.IPv6Address("2001:db8::2").packed
    return v2(1, 0x21, addresses + (51234).to_bytes(2, "big") + (443).to_bytes(2, "big"))


# ------------------------------------------------------------------ the parser


@pytest.mark.parametrize(
    ("data", "client"),
    [
        (b"PROXY TCP4 203.0.113.7 10.0.0.2 51234 443\r\n", "203.0.113.7"),
        (b"PROXY TCP6 2001:db8::1 2001:db8::2 51234 443\r\n", "2001:db8::1"),
        (b"PROXY UNKNOWN\r\n", None),
        (b"PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n", None),
        (v2_tcp4("203.0.113.7"), "203.0.113.7"),
        (v2_tcp4("203.0.113.7", tlvs=b"\x03\x00\x04abcd"), "203.0.113.7"),  # (a TLV, skipped)
        (v2_tcp6("2001:db8::1"), "2001:db8::1"),
        (v2(0, 0x00, b""), None),  # LOCAL: the balancer's own health check
        (v2(1, 0x00, b""), None),  # UNSPEC
    ],
)
def test_whole_headers(data: bytes, client: str | None) -> None:
    assert parse_proxy_header(data + GET) == ProxyHeader(client, len(data))
    for cut in range(len(data)):  # a header arrives in pieces: more is needed until it is whole
        assert parse_proxy_header(data[:cut]) is None, cut


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (GET, "did not start with a PROXY protocol header"),
        (b"PROXY TCP4 203.0.113.7 10.0.0.2 51234\r\n", "malformed"),
        (b"PROXY TCP4 2001:db8::1 10.0.0.2 1 2\r\n", "not an IPv4 address"),
        (b"PROXY TCP4 0x7f.1 10.0.0.2 1 2\r\n", "not an IP address"),
        (b"PROXY TCP4 1.2.3.4 10.0.0.2 65536 2\r\n", "bad port"),
        (b"PROXY TCP4 1.2.3.4 10.0.0.2 080 2\r\n", "bad port"),
        (b"PROXY UDP4 1.2.3.4 10.0.0.2 1 2\r\n", "malformed"),
        (b"PROXY " + b"x" * 120, "longer than 107"),
        (V2_SIGNATURE[:5] + b"X", "did not start"),
        (v2(1, 0x11, b"\x01\x02"), "family 0x11 with 2 bytes"),
        (v2(1, 0x31, b"\x00" * 216), "family 0x31"),  # (unix sockets: no address to count)
        (v2(2, 0x11, b"\x00" * 12), "command 2"),
        (V2_SIGNATURE + b"\x31\x11\x00\x0c" + b"\x00" * 12, "version 3"),
        (V2_SIGNATURE + b"\x21\x11\xff\xff", "65535 bytes"),
    ],
)
def test_what_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(ProxyProtocolError, match=why):
        parse_proxy_header(data)


# ------------------------------------------------------------------ the doors


def whoami_server() -> Server:
    server = Server("proxied", "1")

    @server.route("/whoami")
    def whoami(request: HttpRequest) -> str:
        return f"client={request.client}"

    return server


@asynccontextmanager
async def serving(door: str, allowed: str) -> AsyncIterator[int]:
    server = whoami_server()
    async with trio.open_nursery() as nursery:
        serve = partial(server.serve_http, "127.0.0.1", 0, front_door=door, proxy_protocol_allow_ips=allowed)
        urls = await nursery.start(serve)
        yield int(urls[0].rsplit(":", 1)[1].split("/")[0])
        nursery.cancel_scope.cancel()


async def exchange(port: int, *pieces: bytes) -> bytes:
    """Send ``pieces`` (a pause between them), then read until the server closes or answers."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        for piece in pieces:
            await stream.send_all(piece)
            await trio.sleep(0.02)
        got = b""
        with trio.move_on_after(5):
            while b"client=" not in got:
                data = await stream.receive_some(65536)
                if not data:
                    break
                got += data
        return got


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_a_trusted_balancer_names_the_client(door: str) -> None:
    with trio.fail_after(20):
        async with serving(door, "127.0.0.1") as port:
            v1 = b"PROXY TCP4 203.0.113.7 10.0.0.2 51234 443\r\n"
            assert b"client=203.0.113.7" in await exchange(port, v1 + GET)
            assert b"client=203.0.113.7" in await exchange(port, v1[:9], v1[9:] + GET[:5], GET[5:])
            assert b"client=2001:db8::1" in await exchange(port, v2_tcp6("2001:db8::1") + GET)
            assert b"client=198.51.100.9" in await exchange(port, v2_tcp4("198.51.100.9"), GET)
            assert b"client=127.0.0.1" in await exchange(port, v2(0, 0x00, b"") + GET)  # LOCAL
            assert b"client=127.0.0.1" in await exchange(port, b"PROXY UNKNOWN\r\n" + GET)
            # kept alive: the next request on the connection keeps the client the header named
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            async with stream:
                await stream.send_all(v1 + GET + GET)
                got = b""
                with trio.move_on_after(5):
                    while got.count(b"client=203.0.113.7") < 2:
                        got += await stream.receive_some(65536)
                assert got.count(b"client=203.0.113.7") == 2, got


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_no_header_or_a_broken_one_ends_the_connection_unanswered(door: str) -> None:
    with trio.fail_after(20):
        async with serving(door, "127.0.0.0/8") as port:
            assert await exchange(port, GET) == b""  # a trusted balancer must send one
            assert await exchange(port, b"PROXY TCP4 203.0.113.7 10.0.0.2 1\r\n" + GET) == b""
            assert await exchange(port, V2_SIGNATURE + b"\x21\x11\xff\xff") == b""
            assert b"client=203.0.113.7" in await exchange(port, v2_tcp4("203.0.113.7") + GET)  # (goes on)


@pytest.mark.parametrize("door", LEAN_DOORS)
async def test_a_peer_that_is_no_trusted_balancer_speaks_plain_http(door: str) -> None:
    with trio.fail_after(20):
        async with serving(door, "10.0.0.0/8") as port:
            assert b"client=127.0.0.1" in await exchange(port, GET)
            refused = await exchange(port, b"PROXY TCP4 203.0.113.7 10.0.0.2 51234 443\r\n" + GET)
            assert refused.startswith(b"HTTP/1.1 400 "), refused  # (not HTTP: nobody's header is believed)


async def test_hypercorn_takes_no_proxy_protocol() -> None:
    with pytest.raises(ValueError, match="needs a lean door"):
        await whoami_server().serve_http("127.0.0.1", 0, front_door="hypercorn", proxy_protocol_allow_ips="*")
