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

from typing import Literal

#: The front doors ``Server.serve_http(front_door=...)`` and ``mcp-trio serve
#: --front-door`` accept: the lean door parsing with h11, the same door parsing
#: with llhttp (the ``fast`` extra), and hypercorn.
FrontDoor = Literal["h11", "httptools", "hypercorn"]
FRONT_DOORS: tuple[FrontDoor, ...] = ("h11", "httptools", "hypercorn")
