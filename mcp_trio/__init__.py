"""mcp_trio: a fast, strict Model Context Protocol core for trio.

The public API is re-exported here; modules whose names start with ``_`` are
private.
"""

from ._engine._context import RequestContext as RequestContext
from ._engine._queue import QueueBudget as QueueBudget
from ._engine._session import (
    RequestTimeout as RequestTimeout,
)
from ._engine._session import (
    Session as Session,
)
from ._engine._session import (
    new_session as new_session,
)
from ._engine._session import (
    open_session as open_session,
)
from ._exceptions import (
    ConnectionClosed as ConnectionClosed,
)
from ._exceptions import (
    LocalProtocolError as LocalProtocolError,
)
from ._exceptions import (
    McpError as McpError,
)
from ._exceptions import (
    ProtocolError as ProtocolError,
)
from ._exceptions import (
    RemoteProtocolError as RemoteProtocolError,
)
from ._exceptions import (
    ToolError as ToolError,
)
from ._jsonrpc import (
    HEADER_MISMATCH as HEADER_MISMATCH,
)
from ._jsonrpc import (
    INTERNAL_ERROR as INTERNAL_ERROR,
)
from ._jsonrpc import (
    INVALID_PARAMS as INVALID_PARAMS,
)
from ._jsonrpc import (
    INVALID_REQUEST as INVALID_REQUEST,
)
from ._jsonrpc import (
    METHOD_NOT_FOUND as METHOD_NOT_FOUND,
)
from ._jsonrpc import (
    MISSING_REQUIRED_CLIENT_CAPABILITY as MISSING_REQUIRED_CLIENT_CAPABILITY,
)
from ._jsonrpc import (
    PARSE_ERROR as PARSE_ERROR,
)
from ._jsonrpc import (
    RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND,
)
from ._jsonrpc import (
    UNSUPPORTED_PROTOCOL_VERSION as UNSUPPORTED_PROTOCOL_VERSION,
)
from ._jsonrpc import (
    URL_ELICITATION_REQUIRED as URL_ELICITATION_REQUIRED,
)
from ._version import __version__ as __version__
from .transports import (
    Frame as Frame,
)
from .transports import (
    open_memory_transport_pair as open_memory_transport_pair,
)
from .transports import (
    open_stdio_client as open_stdio_client,
)
from .transports import (
    open_stdio_server_channel as open_stdio_server_channel,
)


def _fixup_module_metadata() -> None:
    for name, obj in list(globals().items()):
        if not name.startswith("_") and getattr(obj, "__module__", "").startswith("mcp_trio."):
            try:
                obj.__module__ = "mcp_trio"
            except (AttributeError, TypeError):
                pass


_fixup_module_metadata()
del _fixup_module_metadata
