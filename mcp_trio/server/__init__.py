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
from ._prompts import PromptOptions as PromptOptions
from ._results import AssistantMessage as AssistantMessage
from ._results import (
    Audio as Audio,
)
from ._results import (
    Image as Image,
)
from ._results import Message as Message
from ._results import MessageContent as MessageContent
from ._results import UserMessage as UserMessage
from ._routes import HttpRequest as HttpRequest
from ._routes import HttpResponse as HttpResponse
from ._routes import Route as Route
from ._routes import RouteHandler as RouteHandler
from ._routes import RouteResult as RouteResult
from ._server import (
    Server as Server,
)
from ._shutdown import GracefulShutdown as GracefulShutdown
from ._stats import MetricSource as MetricSource
from ._stats import ServerStatistics as ServerStatistics
from ._stats import TransportStatistics as TransportStatistics
from ._stats import add_metrics as add_metrics
from ._stats import prometheus_text as prometheus_text
from ._tasks import TaskManager as TaskManager
from ._tools import ToolOptions as ToolOptions

__all__ = [
    "AssistantMessage",
    "Audio",
    "Context",
    "Elicited",
    "HttpRequest",
    "HttpResponse",
    "GracefulShutdown",
    "Image",
    "LogLevel",
    "Message",
    "MessageContent",
    "MissingClientCapability",
    "Route",
    "RouteHandler",
    "RouteResult",
    "Server",
    "ServerStatistics",
    "TaskManager",
    "ToolError",
    "PromptOptions",
    "ToolOptions",
    "TransportStatistics",
    "UserMessage",
    "prometheus_text",
    "add_metrics",
    "MetricSource",
]
