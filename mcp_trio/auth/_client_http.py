"""The HTTP requests an OAuth client makes besides its MCP traffic: metadata
documents, client registration, token requests, and a headless walk to the
authorization endpoint.

They go through the project's own HTTP/1.1 client
(:mod:`mcp_trio.transports.http.client._http11`), one short-lived connection each (these
requests are rare, and the servers are often different origins), with every
read bounded: response size, time, and the number of redirects followed.  They
honour ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` as the MCP channel does
(:mod:`mcp_trio.transports.http.client._proxy`).

The OAuth client's requests also pass a :class:`UrlGuard` (the MCP security
best practices on SSRF): the URLs come from servers, and a hostile one must
not make the client reach into its network.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

import trio

from .._version import __version__
from ..transports.http.client._http11 import Failure, Pool, Target
from ..transports.http.client._proxy import choose_proxy

__all__ = ["HttpReply", "OAuthHttp", "UrlGuard"]

_USER_AGENT = f"mcp-trio/{__version__}"
_MAX_REDIRECTS = 5


class HttpReply:
    """A whole response: status, headers (lower-case names), body."""

    def __init__(self, url: str, status: int, headers: dict[str, str], body: bytes) -> None:
        self.url = url
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json(self) -> Any:
        """The body as JSON, or ``None`` when it is not JSON."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def location(self) -> str | None:
        """The absolute target of a redirect, if this is one."""
        if 300 <= self.status < 400 and self.headers.get("location"):
            return urllib.parse.urljoin(self.url, self.headers["location"])
        return None


def _loopback_name(host: str) -> bool:
    """``localhost`` and its subdomains (RFC 6761 section 6.3)."""
    return host == "localhost" or host.endswith(".localhost")


class UrlGuard:
    """Which URLs the OAuth client may fetch (or send a browser to).

    * ``https`` only; ``http`` only to a loopback host, and only with
      ``allow_insecure_loopback`` (development and tests).
    * No IP literal outside the public address space: private, shared,
      link-local, loopback, unspecified, multicast or reserved addresses
      (IPv4-mapped IPv6 included) are refused, except loopback with
      ``allow_insecure_loopback``.  ``localhost`` names count as loopback.
    * Other host names are not resolved (no second lookup an attacker's DNS
      could answer differently): a name that points into a private network
      is not caught here; use an egress proxy or firewall for that.
    """

    def __init__(self, *, allow_insecure_loopback: bool = False) -> None:
        self.allow_insecure_loopback = allow_insecure_loopback

    def check(self, url: str) -> None:
        """Raise :class:`Failure` (``"url"``) if ``url`` must not be fetched."""
        try:
            parts = urllib.parse.urlsplit(url)
            host = (parts.hostname or "").rstrip(".")
            parts.port  # noqa: B018 (a malformed port raises here)
        except ValueError:
            raise Failure("url", f"refusing to fetch {url!r}: not a valid URL") from None
        if parts.scheme not in ("http", "https") or not host:
            raise Failure("url", f"refusing to fetch {url!r}: not an absolute http(s) URL")
        if parts.username is not None or parts.password is not None:
            raise Failure("url", f"refusing to fetch {url!r}: credentials in the URL")
        loopback = _loopback_name(host)
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is None and (spelled := _ipv4_spelling(host)) is not None:
            # 2130706433, 0x7f000001, 0177.0.0.1, 127.1 or 0: an address resolvers read the way
            # inet_aton does, written so that it does not look like one
            raise Failure(
                "url", f"refusing to fetch {url!r}: {host} is the IPv4 address {spelled} written another way"
            )
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address is not None:
            loopback = address.is_loopback
            if not loopback and not address.is_global:
                raise Failure("url", f"refusing to fetch {url!r}: {host} is not a public address")
        if loopback and not self.allow_insecure_loopback:
            raise Failure(
                "url",
                f"refusing to fetch {url!r}: a loopback address "
                "(allowed only with allow_insecure_loopback=True, for development)",
            )
        if parts.scheme == "http" and not loopback:
            raise Failure("url", f"refusing to fetch {url!r}: not https")


def _ipv4_spelling(host: str) -> str | None:
    """The dotted-decimal IPv4 address that ``host`` spells in one of the other forms ``inet_aton``
    (and the resolvers built on it) reads: a number, hexadecimal or octal parts, fewer than four
    parts; None for a host name."""
    if not host or not all(c in "0123456789abcdefxABCDEFX." for c in host):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None


def same_origin(a: str, b: str) -> bool:
    """Whether two URLs have the same scheme, host and port."""
    try:
        pa, pb = urllib.parse.urlsplit(a), urllib.parse.urlsplit(b)
        ports = (pa.port, pb.port)
    except ValueError:
        return False
    default = {"http": 80, "https": 443}
    return (
        pa.scheme.lower() == pb.scheme.lower()
        and (pa.hostname or "") == (pb.hostname or "")
        and (ports[0] or default.get(pa.scheme.lower())) == (ports[1] or default.get(pb.scheme.lower()))
    )


class OAuthHttp:
    """Bounded one-shot HTTP requests (``timeout`` seconds each, ``max_size`` bytes).

    With a ``guard``, every URL must pass it and redirects are followed only
    on the same origin.
    """

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_size: int = 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
        guard: UrlGuard | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_size = max_size
        self.ssl_context = ssl_context
        self.guard = guard

    def guarded(self, guard: UrlGuard) -> OAuthHttp:
        """The same settings, with ``guard``."""
        return OAuthHttp(
            timeout=self.timeout, max_size=self.max_size, ssl_context=self.ssl_context, guard=guard
        )

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
        json_body: Any = None,
    ) -> HttpReply:
        """One request, no redirect followed; :class:`Failure` if it cannot be made."""
        if self.guard is not None:
            self.guard.check(url)
        target = Target(url)
        body: bytes | None = None
        head: list[tuple[str, str | bytes]] = [
            ("Host", target.host_header),
            ("User-Agent", _USER_AGENT),
            ("Accept", "application/json"),
            ("Connection", "close"),
        ]
        if form is not None:
            body = urllib.parse.urlencode(form).encode()
            head.append(("Content-Type", "application/x-www-form-urlencoded"))
        elif json_body is not None:
            body = json.dumps(json_body).encode()
            head.append(("Content-Type", "application/json"))
        if body is not None or method == "POST":
            head.append(("Content-Length", str(len(body or b""))))
        head.extend((headers or {}).items())
        pool = Pool(
            target,
            ssl_context=self.ssl_context if target.scheme == "https" else None,
            connect_timeout=self.timeout,
            read_timeout=self.timeout,
            max_idle=0,
            proxy=choose_proxy(
                target.scheme, target.host, target.port, None, True
            ),  # HTTP(S)_PROXY, NO_PROXY
        )
        try:
            with trio.fail_after(self.timeout):
                resp = await pool.request(method, target.path, head, body)
                try:
                    data = await resp.read(self.max_size)
                finally:
                    resp.finish()
        except trio.TooSlowError:
            raise Failure("connection", f"{method} {url}: no answer within {self.timeout} s") from None
        finally:
            pool.close()
        return HttpReply(url, resp.status, dict(resp.headers), data)

    async def get(self, url: str, *, follow: int = _MAX_REDIRECTS) -> HttpReply:
        """GET, following up to ``follow`` redirects (never from https to http;
        with a guard, never to another origin)."""
        reply = await self.request("GET", url)
        for _ in range(follow):
            location = reply.location()
            if location is None:
                break
            if url.startswith("https:") and not location.startswith("https:"):
                raise Failure("redirect", f"{url} redirected to a non-https URL: {location}")
            if self.guard is not None and not same_origin(url, location):
                raise Failure("redirect", f"{url} redirected to another origin ({location}); not followed")
            url = location
            reply = await self.request("GET", url)
        return reply
