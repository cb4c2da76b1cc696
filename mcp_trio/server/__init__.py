"""The high-level MCP server: ``Server`` and what its handlers see.

The modules of this package split the server by feature; everything public is
re-exported here.
"""

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
from ._server import (
    Server as Server,
)
from ._shutdown import GracefulShutdown as GracefulShutdown
from ._tasks import TaskManager as TaskManager

__all__ = [
    "Audio",
    "Context",
    "Elicited",
    "GracefulShutdown",
    "Image",
    "LogLevel",
    "MissingClientCapability",
    "Server",
    "TaskManager",
]
