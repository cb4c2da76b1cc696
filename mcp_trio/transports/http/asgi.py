"""Deprecated alias of :mod:`mcp_trio.transports.http.doors.asgi`, where this module moved after
0.1.0; the alias goes in the next release.  Import from ``mcp_trio.transports.http.doors.asgi``
(or the public names from ``mcp_trio.transports.http.server``) instead."""

import warnings

from .doors.asgi import *  # noqa: F403
from .doors.asgi import __all__ as __all__

warnings.warn(
    "mcp_trio.transports.http.asgi moved to mcp_trio.transports.http.doors.asgi; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
