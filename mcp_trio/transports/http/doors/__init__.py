"""The front doors: the web servers that take HTTP connections and hand each
request to an endpoint (:class:`~mcp_trio.transports.http.server.StreamableHTTP`,
the legacy HTTP+SSE one, extra routes).

Public modules: ``h11`` (:func:`~.h11.serve_h11`, the lean HTTP/1.1 door,
parsing with h11 or llhttp) and ``asgi`` (:class:`~.asgi.ASGIApp`, and
:func:`~.asgi.serve_hypercorn`).  What every door bounds per connection is in
``_gate``; the client's address behind trusted proxies in ``_forwarded``;
every use of a dependency's private API in ``_compat_h11`` and
``_compat_hypercorn``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Literal

#: The front doors ``Server.serve_http(front_door=...)`` and ``mcp-trio serve
#: --front-door`` accept: the lean door parsing with h11, the same door parsing
#: with llhttp (the ``fast`` extra), and hypercorn.
FrontDoor = Literal["h11", "httptools", "hypercorn"]
FRONT_DOORS: tuple[FrontDoor, ...] = ("h11", "httptools", "hypercorn")


#: The doors' ``max_connections`` unless given (``mcp-trio serve`` lowers it to what the
#: process's limit on open files allows).
DEFAULT_MAX_CONNECTIONS = 1024
#: The other bounds every door takes, unless given (seconds).
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_KEEPALIVE_TIMEOUT = 60.0
DEFAULT_REQUEST_TIMEOUT = 30.0
DEFAULT_WRITE_TIMEOUT = 30.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """What a front door bounds per connection, with the defaults every door and
    ``mcp-trio serve`` take: the keywords of ``serve_h11``, ``serve_hypercorn``
    and ``Server.serve_http`` (``serve_wsproto`` and ``Server.serve_websocket``
    take the first two).  ``max_connections_per_client`` None: a quarter of
    ``max_connections``.  See docs/http.md."""

    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_connections_per_client: int | None = None
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The keywords, in order."""
        return tuple(f.name for f in fields(cls))
