"""The high-level MCP client: ``Client``, ``open_client`` and the ``connect_*`` entry points.

The modules of this package split the client by job; everything public is
re-exported here; the result types are in :mod:`mcp_trio.client.results`, what the
handlers of the server's asks receive and return in :mod:`mcp_trio.client.asks`.
"""

from . import asks as asks
from . import results as results
from ._cache import ResultCache as ResultCache
from ._client import Client as Client
from ._connect import ServesSessions as ServesSessions
from ._connect import connect as connect
from ._connect import connect_http as connect_http
from ._connect import connect_server as connect_server
from ._connect import connect_stdio as connect_stdio
from ._connect import connect_websocket as connect_websocket
from ._connect import open_client as open_client
from ._handlers import HandlerError as HandlerError
from ._handlers import elicitation_defaults as elicitation_defaults
from ._listen import Subscription as Subscription
from ._options import ClientOptions as ClientOptions
from ._options import ConnectOptions as ConnectOptions
from ._options import RequestOptions as RequestOptions
from ._options import SessionOptions as SessionOptions
from ._output import OutputDecodeError as OutputDecodeError
from ._output import OutputValidationError as OutputValidationError
from ._output import ToolCallError as ToolCallError

__all__ = [
    "Client",
    "ClientOptions",
    "ConnectOptions",
    "HandlerError",
    "OutputDecodeError",
    "OutputValidationError",
    "RequestOptions",
    "ResultCache",
    "ServesSessions",
    "SessionOptions",
    "Subscription",
    "ToolCallError",
    "asks",
    "connect",
    "connect_http",
    "connect_server",
    "connect_stdio",
    "connect_websocket",
    "elicitation_defaults",
    "open_client",
    "results",
]
