"""The HTTP requests an OAuth client makes besides its MCP traffic: metadata
documents, client registration, token requests, and a headless walk to the
authorization endpoint.

They go through the project's own HTTP/1.1 client
(:mod:`mcp_trio.transports.http._http11`), one short-lived connection each (these
requests are rare, and the servers are often different origins), with every
read bounded: response size, time, and the number of redirects followed.
"""

from __future__ import annotations

import json
import ssl
import urllib.parse
from collections.abc import Mapping
from typing import Any

import trio

from .._version import __version__
from ..transports.http._http11 import Failure, Pool, Target

__all__ = ["HttpReply", "OAuthHttp"]

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


class OAuthHttp:
    """Bounded one-shot HTTP requests (``timeout`` seconds each, ``max_size`` bytes)."""

    def __init__(
        self,
        *,
        timeout: float = 30.0,
        max_size: int = 1024 * 1024,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.timeout = timeout
        self.max_size = max_size
        self.ssl_context = ssl_context

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
        )
        try:
            with trio.fail_after(self.timeout):
                resp = await pool.request(method, target.path, head, body)
                try:
                    data = await resp.read(self.max_size)
                finally:
                    resp.finish()
        except trio.TooSlowError:
            raise Failure(
                "connection", f"{method} {url}: no answer within {self.timeout} s"
            ) from None
        finally:
            pool.close()
        return HttpReply(url, resp.status, dict(resp.headers), data)

    async def get(self, url: str, *, follow: int = _MAX_REDIRECTS) -> HttpReply:
        """GET, following up to ``follow`` redirects (never from https to http)."""
        reply = await self.request("GET", url)
        for _ in range(follow):
            location = reply.location()
            if location is None:
                break
            if url.startswith("https:") and not location.startswith("https:"):
                raise Failure("redirect", f"{url} redirected to a non-https URL: {location}")
            url = location
            reply = await self.request("GET", url)
        return reply
