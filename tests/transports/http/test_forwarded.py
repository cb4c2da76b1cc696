"""Behind trusted reverse proxies, the per-client bounds count the client named in
``Forwarded`` / ``X-Forwarded-For``, never an address a client wrote itself, and never one
from a peer that is not a trusted proxy. Rules first, then real servers on every door."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_trio.transports.http.doors._forwarded import TrustedProxies
from tests._support.doors import DOORS
from tests._support.http_lean import Reader, make_server, post

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"},
    },
}

PROXIES = TrustedProxies("10.0.0.0/8, 127.0.0.1")


@pytest.mark.parametrize(
    ("peer", "headers", "client"),
    [
        ("192.0.2.9", {"x-forwarded-for": "203.0.113.7"}, "192.0.2.9"),  # not a proxy: ignored
        ("10.1.2.3", {"x-forwarded-for": "203.0.113.7"}, "203.0.113.7"),
        ("10.1.2.3", {"x-forwarded-for": "6.6.6.6, 203.0.113.7, 10.9.9.9"}, "203.0.113.7"),  # (spoofed left)
        ("10.1.2.3", {"x-forwarded-for": "203.0.113.7:5555"}, "203.0.113.7"),
        ("10.1.2.3", {"x-forwarded-for": "10.4.4.4, 10.5.5.5"}, "10.4.4.4"),  # every hop a proxy
        ("10.1.2.3", {"x-forwarded-for": "unknown"}, "10.1.2.3"),  # not an address: the proxy's
        ("10.1.2.3", {"x-forwarded-for": "203.0.113.7, garbage"}, "10.1.2.3"),
        ("10.1.2.3", {}, "10.1.2.3"),
        ("10.1.2.3", {"forwarded": 'for="[2001:db8::1]:4711";proto=https, for=192.0.2.60'}, "192.0.2.60"),
        ("10.1.2.3", {"forwarded": 'for="[2001:DB8::1]:4711"'}, "2001:db8::1"),
        ("10.1.2.3", {"forwarded": "for=_hidden"}, "10.1.2.3"),
        ("10.1.2.3", {"forwarded": "for=192.0.2.60", "x-forwarded-for": "203.0.113.7"}, "192.0.2.60"),
        (None, {"x-forwarded-for": "203.0.113.7"}, None),
    ],
)
def test_the_client_is_the_first_untrusted_hop_from_the_right(
    peer: str | None, headers: dict[str, str], client: str | None
) -> None:
    assert PROXIES.client_of(peer, headers) == client


def test_every_peer_is_trusted_with_a_star_and_a_bad_entry_is_named() -> None:
    assert TrustedProxies("*").client_of("192.0.2.9", {"x-forwarded-for": "203.0.113.7"}) == "203.0.113.7"
    with pytest.raises(ValueError, match="'proxy.example' is not an IP address"):
        TrustedProxies("10.0.0.1, proxy.example")
    with pytest.raises(ValueError, match="names no address"):
        TrustedProxies(" , ")


@asynccontextmanager
async def serving(door: str, **options: Any) -> AsyncIterator[int]:
    server, _ = make_server()
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(
            lambda task_status: server.serve_http(
                "127.0.0.1", 0, front_door=door, task_status=task_status, **options
            )
        )
        yield int(urls[0].rsplit(":", 1)[1].split("/")[0])
        nursery.cancel_scope.cancel()


async def initialize_for(port: int, forwarded_for: str) -> int:
    """``initialize`` through a "proxy" (this test, at 127.0.0.1) for ``forwarded_for``: the status."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    request = post(INIT).replace(
        b"host: 127.0.0.1", b"host: 127.0.0.1\r\nx-forwarded-for: " + forwarded_for.encode()
    )
    await stream.send_all(request)
    status, _, _ = await Reader(stream).response()
    await stream.aclose()
    return status


@pytest.mark.parametrize("door", DOORS)
async def test_behind_a_trusted_proxy_each_client_has_its_own_share(door: str) -> None:
    async with serving(door, forwarded_allow_ips="127.0.0.1", max_sessions_per_client=2) as port:
        with trio.fail_after(10):
            assert [await initialize_for(port, "203.0.113.7") for _ in range(3)] == [200, 200, 429]
            assert await initialize_for(port, "203.0.113.8") == 200  # another client: its own share


@pytest.mark.parametrize("door", DOORS)
async def test_a_peer_that_is_no_trusted_proxy_names_no_client(door: str) -> None:
    async with serving(door, forwarded_allow_ips="10.0.0.1", max_sessions_per_client=2) as port:
        with trio.fail_after(10):
            statuses = [await initialize_for(port, f"203.0.113.{n}") for n in range(3)]
            assert statuses == [200, 200, 429]  # one address, whatever it wrote
