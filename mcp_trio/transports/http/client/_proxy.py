"""HTTP proxies for the HTTP and WebSocket clients: which one a URL goes through, and the CONNECT tunnel.

Rules:

* An explicit ``proxy`` URL is used for every request.  Otherwise, with
  ``trust_env`` (the default), the environment decides as
  :func:`urllib.request.getproxies_environment` reads it: ``HTTP_PROXY`` for
  ``http://`` (and ``ws://``) targets, ``HTTPS_PROXY`` for ``https://`` (and
  ``wss://``), lower-case forms first, and ``NO_PROXY`` (host names, domain
  suffixes, ``host:port``, ``*``) bypasses the proxy as
  :func:`urllib.request.proxy_bypass_environment` decides.  Loopback
  addresses are not bypassed by themselves: list them in ``NO_PROXY``.
* The proxy is an ``http://`` URL (a bare ``host:port`` means that) or an
  ``https://`` one (TLS to the proxy, verified with the system's CA
  settings); its user and password become a ``Proxy-Authorization: Basic``
  header.
* Plain ``http://`` requests go to the proxy in absolute form
  (``POST http://host/mcp``); ``https://`` and WebSocket connections are
  tunnelled with ``CONNECT host:port``, then TLS (for https/wss) runs to the
  origin through the tunnel.
"""

from __future__ import annotations

import base64
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import cast

import h11
import trio

__all__ = ["Proxy", "ProxyError", "choose_proxy", "open_tunnel"]

_MAX_HEAD = 64 * 1024  # bytes of the proxy's answer to CONNECT
_READ_SIZE = 4096


# NO_PROXY as urllib reads it (public at run time, absent from the type stubs)
_bypass = cast(Callable[[str, dict[str, str]], bool], vars(urllib.request)["proxy_bypass_environment"])


class ProxyError(OSError):
    """The proxy refused or broke the tunnel (the connection's pool reports it as a failure to connect)."""


class Proxy:
    """An HTTP proxy: where it is and the credentials it wants."""

    def __init__(self, url: str) -> None:
        given = url if "://" in url else f"http://{url}"
        parts = urllib.parse.urlsplit(given)
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(
                f"unsupported proxy {_hide_password(given)!r}: only http:// and https:// proxies work"
            )
        if not parts.hostname:
            raise ValueError(f"the proxy URL names no host: {_hide_password(given)!r}")
        self.host = parts.hostname
        try:
            self.port = parts.port or (443 if scheme == "https" else 80)
        except ValueError:
            raise ValueError(f"the proxy URL has an invalid port: {_hide_password(given)!r}") from None
        self.tls = scheme == "https"  # TLS to the proxy itself (then TLS in TLS for https targets)
        self.url = _hide_password(given)
        self.authorization: str | None = None
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            self.authorization = f"Basic {token}"

    def headers(self) -> list[tuple[str, str]]:
        """What every request to the proxy carries (its credentials, if any)."""
        return [("Proxy-Authorization", self.authorization)] if self.authorization else []


def _hide_password(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc}"))


def choose_proxy(scheme: str, host: str, port: int, proxy: str | None, trust_env: bool) -> Proxy | None:
    """The proxy for requests to ``scheme://host:port`` (``http`` or ``https``):
    ``proxy`` if given, else the environment's (with ``trust_env``) unless
    ``NO_PROXY`` bypasses it."""
    if proxy is not None:
        return Proxy(proxy)
    if not trust_env:
        return None
    proxies = urllib.request.getproxies_environment()
    url = proxies.get(scheme)
    if not url:
        return None
    if _bypass(host if ":" in host else f"{host}:{port}", proxies):
        return None
    return Proxy(url)


async def open_tunnel(stream: trio.abc.Stream, proxy: Proxy, host: str, port: int) -> None:
    """Ask the proxy on ``stream`` for a tunnel to ``host:port`` (``CONNECT``);
    once this returns, ``stream`` leads to the origin.

    Raises:
        ProxyError: the proxy refused (its status is named) or broke HTTP.
    """
    authority = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=_MAX_HEAD)
    headers = [("Host", authority), *proxy.headers()]
    request = h11.Request(method="CONNECT", target=authority, headers=headers)
    await stream.send_all((conn.send(request) or b"") + (conn.send(h11.EndOfMessage()) or b""))
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as exc:
            raise ProxyError(f"the proxy {proxy.url} broke HTTP/1.1: {exc}") from None
        if event is h11.NEED_DATA:
            data = await stream.receive_some(_READ_SIZE)
            if not data:
                raise ProxyError(f"the proxy {proxy.url} closed the connection instead of answering CONNECT")
            conn.receive_data(cast(bytes, data))
        elif isinstance(event, h11.Response):
            if not 200 <= event.status_code < 300:
                reason = event.reason.decode("latin-1", "replace")
                status = f"HTTP {event.status_code} {reason}".rstrip()
                raise ProxyError(f"the proxy {proxy.url} refused CONNECT {authority}: {status}")
            if conn.trailing_data[0]:
                raise ProxyError(f"the proxy {proxy.url} sent data into the tunnel before it was used")
            return
