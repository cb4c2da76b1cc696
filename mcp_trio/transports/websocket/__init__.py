"""MCP over WebSocket (a custom transport): the wsproto server, the ASGI endpoint and the client.

The MCP specification defines stdio and Streamable HTTP; this transport is an
extension for applications that already speak WebSocket (browsers, gateways).
Sessions over it have the same lifecycle and version negotiation as over any
other transport: the engine does not know which transport it runs on.

Framing rules:

* One JSON-RPC message (or a batch, in 2025-03-26) per **text** message,
  UTF-8, possibly fragmented into several frames.  The subprotocol is
  ``mcp``: a client offers it (``Sec-WebSocket-Protocol: mcp``) and the
  server selects it.  A client that offers no subprotocol is accepted
  (browsers and gateways often cannot set one) unless the endpoint has
  ``require_subprotocol=True``; a client that offers only other
  subprotocols is refused with 400.
* Text that is not valid JSON is answered with a -32700 error and the
  session goes on, as on stdio.
* These close the connection, with a close code that says why (RFC 6455,
  section 7.4.1): a binary message 1003 (unsupported data), text that is not
  valid UTF-8 1007 (invalid payload data), a message over
  ``max_message_size`` 1009 (message too big), a framing error 1002
  (protocol error), no pong within ``keepalive_timeout`` 1011, a server
  shutting down 1001 (going away), the end of a session 1000.
* Keepalive: every ``keepalive_interval`` seconds a ping; a peer that does
  not answer within ``keepalive_timeout`` is disconnected.  Time the local
  session spends not reading (its own backpressure) does not count against
  the peer.
* Host and Origin are checked during the handshake, with the allow-lists of
  Streamable HTTP (421 / 403), so a refused browser page never gets a
  connection.
* Authorization (``auth=``, e.g. :class:`mcp_trio.auth.server.ResourceServer`):
  the upgrade request must carry a bearer token; a refusal is the same HTTP
  answer (401 / 403 / 400 with ``WWW-Authenticate``) as Streamable HTTP
  gives, before any upgrade.  What it admits is every request's ``ctx.auth``
  on that connection; each incoming message may be screened (per-tool
  scopes: answered with a JSON-RPC error instead of reaching the session);
  when the grant expires the connection is closed with 1008 (policy
  violation), since a WebSocket cannot be challenged again.  Both front
  doors can also answer plain HTTP ``GET`` requests on extra ``routes``
  (the protected resource metadata).

Server side: a :class:`WebSocketEndpoint` holds the policy and the open
connections; two front doors serve it:

* :class:`WebSocketASGI`, an ASGI application for hypercorn (or any ASGI
  server under trio), which can pass ``http`` and ``lifespan`` scopes to
  another ASGI application, such as the Streamable HTTP
  :class:`~mcp_trio.transports.http.server.ASGIApp`, so one server offers
  both on one port (:func:`serve_hypercorn_websocket` runs it);
* :func:`serve_wsproto`, a lean server on wsproto over trio sockets (TLS
  with ``ssl_context``).

Each connection is served by the ``serve_session`` callable (a
:meth:`Server.serve_session <mcp_trio.server.Server.serve_session>`) until
it ends.  When the server is cancelled or :meth:`WebSocketEndpoint.shutdown`
is called, every connection is closed with 1001 first.

What only the wsproto front door does exactly: hypercorn answers pings and
sends its own (``websocket_ping_interval``) but tells an application neither
about pongs nor about framing errors.  Behind hypercorn, a connection that
sends invalid UTF-8 or breaks the framing is dropped without a close frame,
and a silent peer is disconnected after ``keepalive_interval +
keepalive_timeout`` seconds without any data (hypercorn's ``read_timeout``;
not set when Streamable HTTP shares the server, since an SSE stream's client
sends nothing for long stretches, so there only pings are sent).  hypercorn
also writes without a timeout, in a call that cannot be cancelled, so a peer
that stops reading holds its connection until TCP gives up; the wsproto front
door drops it when the keepalive timeout passes.

Client side: :func:`open_websocket_client` connects (``ws://`` or ``wss://``)
and yields a :class:`WebSocketChannel`.  When the connection drops, the
channel ends at once, so the session fails every pending request with
:class:`~mcp_trio.ConnectionClosed`; reconnecting is the caller's choice
(open a new client).  Leaving the block closes the connection cleanly (1000),
even when the block is cancelled.

Neither side negotiates ``permessage-deflate``.

The modules: ``_channel`` (the channel interface and the shared constants),
``_wsproto_channel`` (the framing over wsproto), ``_endpoint`` (the server's
handshake policy and connections), ``_asgi`` and ``_wsproto_server`` (the two
front doors), ``_client``.  Everything public is re-exported here (see
docs/websocket.md).
"""

from ._asgi import (
    WebSocketASGI as WebSocketASGI,
)
from ._asgi import (
    serve_hypercorn_websocket as serve_hypercorn_websocket,
)
from ._channel import (
    DEFAULT_SERVER_MAX_MESSAGE_SIZE as DEFAULT_SERVER_MAX_MESSAGE_SIZE,
)
from ._channel import (
    SUBPROTOCOL as SUBPROTOCOL,
)
from ._channel import (
    CloseReason as CloseReason,
)
from ._channel import (
    WebSocketChannel as WebSocketChannel,
)
from ._client import (
    WebSocketClientOptions as WebSocketClientOptions,
)
from ._client import (
    WebSocketConnectError as WebSocketConnectError,
)
from ._client import (
    open_websocket_client as open_websocket_client,
)
from ._endpoint import (
    Admission as Admission,
)
from ._endpoint import (
    HandshakeAuth as HandshakeAuth,
)
from ._endpoint import (
    WebSocketEndpoint as WebSocketEndpoint,
)
from ._wsproto_server import (
    serve_wsproto as serve_wsproto,
)

__all__ = [
    "DEFAULT_SERVER_MAX_MESSAGE_SIZE",
    "SUBPROTOCOL",
    "Admission",
    "CloseReason",
    "HandshakeAuth",
    "WebSocketASGI",
    "WebSocketChannel",
    "WebSocketClientOptions",
    "WebSocketConnectError",
    "WebSocketEndpoint",
    "open_websocket_client",
    "serve_hypercorn_websocket",
    "serve_wsproto",
]
