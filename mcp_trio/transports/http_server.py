"""Deprecated alias of :mod:`mcp_trio.transports.http.server`, where this module moved in 0.1.0;
the alias goes in the next release. Import from ``mcp_trio.transports.http.server`` instead."""

import warnings

from .http.server import *  # noqa: F403
from .http.server import __all__ as __all__

warnings.warn(
    "mcp_trio.transports.http_server moved to mcp_trio.transports.http.server; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
