"""Deprecated alias of :mod:`mcp_trio.transports.http.client`, where this module moved in 0.1.0;
the alias goes in the next release. Import from ``mcp_trio.transports.http.client`` instead."""

import warnings

from .http.client import *  # noqa: F403
from .http.client import __all__ as __all__

warnings.warn(
    "mcp_trio.transports.http_client moved to mcp_trio.transports.http.client; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
