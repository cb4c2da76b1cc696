"""What the client commands share: where to connect and how (TLS included), the errors that
end a command with exit code 2, and showing a server's text without letting it act on the
terminal."""

from __future__ import annotations

import json
import re
import shlex
import ssl
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .._exceptions import ConnectionClosed, McpError
from .._version import __version__

if TYPE_CHECKING:  # (the client is imported when a command runs, not for every mcp-trio command)
    from ..client import Client
    from ..client.asks import ElicitationHandler

__all__ = [
    "Connection",
    "Fatal",
    "dumps",
    "is_transport_failure",
    "reason",
    "tls_context",
    "visible",
    "warn_insecure",
]


class Fatal(Exception):
    """A problem that ends the command with exit code 2 (the message says what)."""


def tls_context(cacert: str | None, insecure: bool) -> ssl.SSLContext | None:
    """The TLS settings ``--cacert FILE`` / ``--insecure`` ask for (``None``: the system's)."""
    if cacert is not None and insecure:
        raise Fatal("--cacert and --insecure contradict each other: give one")
    if cacert is not None:
        try:
            return ssl.create_default_context(cafile=cacert)
        except (OSError, ssl.SSLError) as exc:
            raise Fatal(f"--cacert: cannot load {cacert}: {exc}") from None
    if insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return None


class Connection:
    """Where to connect and how."""

    def __init__(
        self,
        target: str | list[str],
        headers: dict[str, str],
        timeout: float,
        tls: ssl.SSLContext | None = None,
        tls_flag: str = "--cacert",
    ) -> None:
        if timeout <= 0:
            raise Fatal("--timeout must be positive")
        self.timeout = timeout
        self.headers = headers
        self.tls = tls
        self.url: str | None = None
        self.argv: list[str] = []
        scheme = target.split(":", 1)[0].lower() if isinstance(target, str) else ""
        if scheme in ("http", "https", "ws", "wss"):
            self.url = target if isinstance(target, str) else None
            if tls is not None and scheme not in ("https", "wss"):
                raise Fatal(f"{tls_flag} applies to https:// and wss:// URLs only, not to {scheme}://")
        else:
            self.argv = shlex.split(target) if isinstance(target, str) else target
            if not self.argv:
                raise Fatal("the TARGET command is empty")
            if headers:
                raise Fatal("--header applies to URL targets only, not to a command")
            if tls is not None:
                raise Fatal(f"{tls_flag} applies to https:// and wss:// URLs only, not to a command")
        self.shown = self.url or shlex.join(self.argv)

    @asynccontextmanager
    async def open(self, elicitation: ElicitationHandler | None = None) -> AsyncIterator[Client]:
        """The connected client; failures to connect become :class:`Fatal`.  Requests have no
        timeout of their own: the command's ``--timeout`` bounds them all."""
        from ..client import connect, open_client
        from ..transports.stdio import open_stdio_client
        from ..transports.websocket import WebSocketConnectError

        options: dict[str, Any] = {"name": "mcp-trio-cli", "version": __version__}
        options.update(connect_timeout=self.timeout, default_timeout=None)
        if elicitation is not None:
            options["elicitation"] = elicitation
        async with AsyncExitStack() as stack:
            if self.url is not None:
                transport: dict[str, Any] = {}
                if self.headers:
                    transport["headers"] = self.headers
                if self.tls is not None:
                    transport["ssl_context"] = self.tls
                if transport:
                    key = "websocket_options" if self.url.lower().startswith("ws") else "http_options"
                    options[key] = transport
                try:
                    client = await stack.enter_async_context(connect(self.url, **options))
                except (McpError, ConnectionClosed, WebSocketConnectError, OSError, ValueError) as exc:
                    raise Fatal(_unreachable(self.url, reason(exc))) from None
            else:
                try:
                    process = await stack.enter_async_context(open_stdio_client(self.argv))
                except OSError as exc:
                    problem = f"{exc.strerror}: {self.argv[0]!r}" if exc.strerror else str(exc)
                    if self.argv[0].endswith(".py"):
                        problem += f" (to run a Python file: 'python {self.shown}')"
                    raise Fatal(f"cannot start {self.shown!r}: {problem}") from None
                try:
                    client = await stack.enter_async_context(open_client(process.channel, **options))
                except (McpError, ConnectionClosed) as exc:
                    with trio.move_on_after(2):
                        await process.process.wait()
                    code = process.process.returncode
                    if code is None:
                        raise Fatal(f"cannot start {self.shown!r}: {reason(exc)}") from None
                    raise Fatal(
                        f"cannot start {self.shown!r}: exited with code {code} before initialize"
                    ) from None
            yield client


def _unreachable(url: str, why: str) -> str:
    return f"{url}: {why}" if why.startswith("cannot connect") else f"cannot connect to {url}: {why}"


def reason(exc: BaseException) -> str:
    if isinstance(exc, McpError):
        return exc.message
    return str(exc) or type(exc).__name__


def is_transport_failure(exc: McpError) -> bool:
    return isinstance(exc.data, dict) and "transport" in exc.data


def warn_insecure(name: str) -> None:
    print(
        f"mcp-trio {name}: warning: --insecure: the server's TLS certificate is not verified "
        "(anyone on the path can read and change this connection)",
        file=sys.stderr,
    )


def dumps(value: Any) -> str:
    return visible(json.dumps(msgspec.to_builtins(value), indent=2, ensure_ascii=False), keep="\n")


#: What a server's text must not send to a terminal as it is: control characters (C0 but for
#: newline and tab, DEL, C1: escape sequences that set the clipboard, clear the screen, retitle
#: the window ...) and the format characters that reorder text (bidirectional overrides).
_HIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character in :data:`_HIDDEN` written as a ``\\uXXXX`` escape (also
    valid inside a JSON string), newlines kept where ``keep`` says."""
    return _HIDDEN.sub(lambda m: m[0] if m[0] in keep else f"\\u{ord(m[0]):04x}", text)
