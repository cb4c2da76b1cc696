"""The high-level MCP server: ``Server`` and what its handlers see.

The modules of this package split the server by feature; everything public is
re-exported here.
"""

from .._exceptions import ToolError as ToolError
from ._context import (
    Context as Context,
)
from ._context import (
    LogLevel as LogLevel,
)
from ._context import (
    MissingClientCapability as MissingClientCapability,
)
from ._elicit import (
    Elicited as Elicited,
)
from ._results import (
    Audio as Audio,
)
from ._results import (
    Image as Image,
)
from ._routes import HttpRequest as HttpRequest
from ._routes import HttpResponse as HttpResponse
from ._routes import Route as Route
from ._routes import RouteHandler as RouteHandler
from ._routes import RouteResult as RouteResult
from ._server import (
    Server as Server,
)
from ._shutdown import GracefulShutdown as GracefulShutdown
from ._stats import ServerStatistics as ServerStatistics
from ._stats import TransportStatistics as TransportStatistics
from ._stats import prometheus_text as prometheus_text
from ._tasks import TaskManager as TaskManager
from ._tools import ToolOptions as ToolOptions

__all__ = [
    "Audio",
    "Context",
    "Elicited",
    "HttpRequest",
    "HttpResponse",
    "GracefulShutdown",
    "Image",
    "LogLevel",
    "MissingClientCapability",
    "Route",
    "RouteHandler",
    "RouteResult",
    "Server",
    "ServerStatistics",
    "TaskManager",
    "ToolError",
    "ToolOptions",
    "TransportStatistics",
    "prometheus_text",
]
