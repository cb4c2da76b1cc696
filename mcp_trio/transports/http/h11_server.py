"""Deprecated alias of :mod:`mcp_trio.transports.http.doors.h11`, where this module moved after
0.1.0; the alias goes in the next release.  Import from ``mcp_trio.transports.http.doors.h11``
(or the public names from ``mcp_trio.transports.http.server``) instead."""

import warnings

from .doors.h11 import *  # noqa: F403
from .doors.h11 import __all__ as __all__

warnings.warn(
    "mcp_trio.transports.http.h11_server moved to mcp_trio.transports.http.doors.h11; "
    "the old name goes in the next release",
    DeprecationWarning,
    stacklevel=2,
)
