"""The high-level MCP server: ``Server`` and what its handlers see.

The modules of this package split the server by feature; everything public is
re-exported here.
"""

from ._server import (
    Audio as Audio,
)
from ._server import (
    Context as Context,
)
from ._server import (
    Image as Image,
)
from ._server import (
    MissingClientCapability as MissingClientCapability,
)
from ._server import (
    Server as Server,
)
from ._tasks import TaskManager as TaskManager

__all__ = ["Audio", "Context", "Image", "MissingClientCapability", "Server", "TaskManager"]
