"""The user-facing step of the authorization code grant: open the authorization
URL and bring back the parameters of the redirect (``code``, ``state``,
``iss``, or ``error``).

* :class:`LoopbackRedirect`: a tiny HTTP listener on ``127.0.0.1`` (RFC 8252
  section 7.3) receives the redirect; the URL is opened with a callable you
  give (default: the system browser).
* :class:`HeadlessRedirect`: no browser; the authorization URL is fetched and
  its redirects followed until one points at the redirect URI.  For
  authorization servers that approve without a user (tests, pre-approved
  clients).

Both are bounded: a time limit on the wait, a size limit on what is read.
The loopback listener answers a callback whose ``state`` is not the one of the
authorization URL with a 400 page and keeps waiting: anyone on the machine
can send a request to it, and a forged one must not end the login.
"""

from __future__ import annotations

import hmac
import socket
import urllib.parse
import webbrowser
from collections.abc import Callable
from typing import Protocol

import h11
import trio

from ._client_http import OAuthHttp

__all__ = ["HeadlessRedirect", "LoopbackRedirect", "RedirectHandler", "RedirectError"]

_MAX_HOPS = 5
_MAX_REQUEST = 16 * 1024
_PAGE = (
    b"<!doctype html><title>Authorization</title><p>Authorization finished. You can close this window.</p>"
)
_WRONG_STATE = (
    b"<!doctype html><title>Authorization</title>"
    b"<p>This response does not belong to the authorization in progress.</p>"
)


class RedirectError(Exception):
    """The authorization step did not bring back a redirect."""


class RedirectHandler(Protocol):
    """Opens the authorization URL and returns the redirect's query parameters."""

    @property
    def redirect_uri(self) -> str: ...

    async def authorize(self, url: str) -> dict[str, str]: ...


def _params_of(location: str) -> dict[str, str]:
    query = urllib.parse.urlsplit(location).query
    return dict(urllib.parse.parse_qsl(query, keep_blank_values=True))


def _is_redirect_target(location: str, redirect_uri: str) -> bool:
    loc, want = urllib.parse.urlsplit(location), urllib.parse.urlsplit(redirect_uri)
    return (loc.scheme, loc.netloc, loc.path) == (want.scheme, want.netloc, want.path)


class HeadlessRedirect:
    """Follow the authorization endpoint's redirects without a browser."""

    def __init__(
        self, redirect_uri: str = "http://127.0.0.1/callback", *, http: OAuthHttp | None = None
    ) -> None:
        self._redirect_uri = redirect_uri
        self._http = http or OAuthHttp()

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def authorize(self, url: str) -> dict[str, str]:
        for _ in range(_MAX_HOPS):
            reply = await self._http.request("GET", url)
            location = reply.location()
            if location is None:
                raise RedirectError(
                    f"the authorization endpoint answered HTTP {reply.status} instead of "
                    "redirecting; it needs a user (use LoopbackRedirect)"
                )
            if _is_redirect_target(location, self._redirect_uri):
                return _params_of(location)
            url = location
        raise RedirectError(f"more than {_MAX_HOPS} redirects from the authorization endpoint")


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LoopbackRedirect:
    """Receive the redirect on ``http://127.0.0.1:PORT/callback``.

    ``port=0`` picks a free port when the handler is made, so the redirect
    URI is known before registration (authorization servers accept any
    port for a loopback redirect, RFC 8252 section 7.3).  The listener runs
    only while :meth:`authorize` waits, at most ``timeout`` seconds; callbacks
    with another ``state`` than the authorization URL's are refused (400) and
    the wait goes on.
    """

    def __init__(
        self,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        path: str = "/callback",
        open_url: Callable[[str], object] | None = None,
        timeout: float = 300.0,
    ) -> None:
        self.host = host
        self.port = port or _free_port(host)
        self.path = path
        self.timeout = timeout
        self._open = open_url or webbrowser.open

    @property
    def redirect_uri(self) -> str:
        return f"http://{self.host}:{self.port}{self.path}"

    async def authorize(self, url: str) -> dict[str, str]:
        state = _params_of(url).get("state")
        listeners = await trio.open_tcp_listeners(self.port, host=self.host)
        received: dict[str, str] | None = None
        try:
            with trio.move_on_after(self.timeout):
                self._open(url)
                while received is None:
                    stream = await listeners[0].accept()
                    async with stream:
                        received = await self._one_request(stream, state)
        finally:
            for listener in listeners:
                await listener.aclose()
        if received is None:
            raise RedirectError(f"no redirect arrived within {self.timeout} s")
        return received

    async def _one_request(self, stream: trio.SocketStream, state: str | None) -> dict[str, str] | None:
        """Read one request; the callback's parameters, or ``None`` for anything
        else (another path, or another ``state`` than the expected one)."""
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=_MAX_REQUEST)
        with trio.move_on_after(10):
            try:
                return await self._answer(conn, stream, state)
            except (h11.ProtocolError, trio.BrokenResourceError, OSError):
                return None
        return None

    async def _answer(
        self, conn: h11.Connection, stream: trio.SocketStream, state: str | None
    ) -> dict[str, str] | None:
        """Answer one request (200 on the callback path, 400 for another
        ``state``, 404 elsewhere)."""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await stream.receive_some(4096)
                if not data:
                    return None
                conn.receive_data(data)
                continue
            if not isinstance(event, h11.Request):
                return None
            target = event.target.decode("latin-1")
            params = _params_of(target)
            if urllib.parse.urlsplit(target).path != self.path:
                status, body = 404, b"not found"
            elif state is not None and not hmac.compare_digest(
                params.get("state", "").encode(), state.encode()
            ):
                status, body = 400, _WRONG_STATE
            else:
                status, body = 200, _PAGE
            head = [("content-type", "text/html"), ("content-length", str(len(body)))]
            out = conn.send(h11.Response(status_code=status, headers=head)) or b""
            out += conn.send(h11.Data(data=body)) or b""
            out += conn.send(h11.EndOfMessage()) or b""
            await stream.send_all(out)
            return params if status == 200 else None
