"""Streamable HTTP, server side: the public names, each from the module that
does its job.

* :class:`StreamableHTTP` (``_streamable``): the protocol logic, independent of
  the web server; its rules are in that module's docstring.  A session's SSE
  streams and the channel its engine sees are in ``_streams``.
* :class:`EventStore`, :class:`InMemoryEventStore` (``_events``): events kept
  for clients that resume a lost stream.
* :class:`HttpRequest`, :class:`Responder`, :class:`Handler`,
  :class:`HostGuard`, :class:`StreamSlots`, ``DEFAULT_ALLOWED_HOSTS``
  (``_request``): what endpoints and front doors share.
* The front doors: :func:`serve_h11` (``h11_server``, the lean HTTP/1.1 one;
  :func:`server_ssl_context` for its TLS)
  and :class:`ASGIApp` with :func:`serve_hypercorn` (``asgi``).
"""

from __future__ import annotations

from ._events import EventStore as EventStore
from ._events import InMemoryEventStore as InMemoryEventStore
from ._request import DEFAULT_ALLOWED_HOSTS as DEFAULT_ALLOWED_HOSTS
from ._request import Handler as Handler
from ._request import HostGuard as HostGuard
from ._request import HttpRequest as HttpRequest
from ._request import Responder as Responder
from ._request import ServeSession as ServeSession
from ._request import StreamSlots as StreamSlots
from ._streamable import StreamableHTTP as StreamableHTTP
from .asgi import ASGIApp as ASGIApp
from .asgi import serve_hypercorn as serve_hypercorn
from .h11_server import serve_h11 as serve_h11
from .h11_server import server_ssl_context as server_ssl_context

__all__ = [
    "ASGIApp",
    "EventStore",
    "Handler",
    "HostGuard",
    "HttpRequest",
    "InMemoryEventStore",
    "Responder",
    "StreamSlots",
    "StreamableHTTP",
    "serve_h11",
    "serve_hypercorn",
    "server_ssl_context",
]
