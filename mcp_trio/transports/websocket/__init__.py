"""MCP over WebSocket (a custom transport): the wsproto server, the ASGI endpoint and the client.

Everything public is re-exported here (see docs/websocket.md).
"""

from ._websocket import (
    DEFAULT_SERVER_MAX_MESSAGE_SIZE as DEFAULT_SERVER_MAX_MESSAGE_SIZE,
)
from ._websocket import (
    SUBPROTOCOL as SUBPROTOCOL,
)
from ._websocket import (
    Admission as Admission,
)
from ._websocket import (
    CloseReason as CloseReason,
)
from ._websocket import (
    HandshakeAuth as HandshakeAuth,
)
from ._websocket import (
    WebSocketASGI as WebSocketASGI,
)
from ._websocket import (
    WebSocketChannel as WebSocketChannel,
)
from ._websocket import (
    WebSocketConnectError as WebSocketConnectError,
)
from ._websocket import (
    WebSocketEndpoint as WebSocketEndpoint,
)
from ._websocket import (
    open_websocket_client as open_websocket_client,
)
from ._websocket import (
    serve_hypercorn_websocket as serve_hypercorn_websocket,
)
from ._websocket import (
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
    "WebSocketConnectError",
    "WebSocketEndpoint",
    "open_websocket_client",
    "serve_hypercorn_websocket",
    "serve_wsproto",
]
