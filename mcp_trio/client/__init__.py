"""The high-level MCP client: ``Client``, ``open_client`` and the ``connect_*`` entry points.

The modules of this package split the client by job; everything public is
re-exported here.
"""

from ._client import (
    Client as Client,
)
from ._client import (
    ResultCache as ResultCache,
)
from ._client import (
    Subscription as Subscription,
)
from ._client import (
    connect_http as connect_http,
)
from ._client import (
    connect_stdio as connect_stdio,
)
from ._client import (
    connect_websocket as connect_websocket,
)
from ._client import (
    elicitation_defaults as elicitation_defaults,
)
from ._client import (
    open_client as open_client,
)

__all__ = [
    "Client",
    "ResultCache",
    "Subscription",
    "connect_http",
    "connect_stdio",
    "connect_websocket",
    "elicitation_defaults",
    "open_client",
]
