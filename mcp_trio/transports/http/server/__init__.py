"""Streamable HTTP, server side: the public names, each from the module that
does its job.

* :class:`StreamableHTTP` (``_endpoint``): runs what ``_planner`` decides
  for each request (the rules are in the planner's docstring), independent
  of the web server.  A session's SSE streams and the channel its engine sees
  are in ``_streams``; sessions shared between workers in ``_sharing``.
* :class:`EventStore`, :class:`InMemoryEventStore` (``_event_store``): events
  kept for clients that resume a lost stream.
* :class:`HttpRequest`, :class:`Responder`, :class:`Handler`,
  :class:`HostGuard`, :class:`StreamSlots`, ``DEFAULT_ALLOWED_HOSTS``
  (``transports/http/_request``): what endpoints and front doors share.
* The front doors: :func:`serve_h11` (``doors.h11``, the lean HTTP/1.1 one;
  :func:`server_ssl_context` for its TLS) and :class:`ASGIApp` with
  :func:`serve_hypercorn` (``doors.asgi``).
"""

from __future__ import annotations

from .._request import DEFAULT_ALLOWED_HOSTS as DEFAULT_ALLOWED_HOSTS
from .._request import Handler as Handler
from .._request import HostGuard as HostGuard
from .._request import HttpRequest as HttpRequest
from .._request import Responder as Responder
from .._request import ServeSession as ServeSession
from .._request import StreamSlots as StreamSlots
from ..doors.asgi import ASGIApp as ASGIApp
from ..doors.asgi import serve_hypercorn as serve_hypercorn
from ..doors.h11 import serve_h11 as serve_h11
from ..doors.h11 import server_ssl_context as server_ssl_context
from ._endpoint import StreamableHTTP as StreamableHTTP
from ._event_store import EventStore as EventStore
from ._event_store import InMemoryEventStore as InMemoryEventStore

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
