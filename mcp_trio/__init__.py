"""mcp_trio: a fast, strict Model Context Protocol core for trio.

The public API is re-exported here; modules whose names start with ``_`` are
private.
"""

from ._context import RequestContext as RequestContext
from ._exceptions import (
    ConnectionClosed as ConnectionClosed,
    LocalProtocolError as LocalProtocolError,
    McpError as McpError,
    ProtocolError as ProtocolError,
    RemoteProtocolError as RemoteProtocolError,
)
from ._jsonrpc import (
    HEADER_MISMATCH as HEADER_MISMATCH,
    INTERNAL_ERROR as INTERNAL_ERROR,
    INVALID_PARAMS as INVALID_PARAMS,
    INVALID_REQUEST as INVALID_REQUEST,
    METHOD_NOT_FOUND as METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY as MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR as PARSE_ERROR,
    RESOURCE_NOT_FOUND as RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION as UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED as URL_ELICITATION_REQUIRED,
)
from ._session import (
    RequestTimeout as RequestTimeout,
    Session as Session,
    new_session as new_session,
    open_session as open_session,
)
from ._version import __version__ as __version__
from .transports import (
    Frame as Frame,
    open_memory_transport_pair as open_memory_transport_pair,
    open_stdio_client as open_stdio_client,
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
