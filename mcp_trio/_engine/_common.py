"""What the engine's modules share: the ``mcp_trio`` logger, the default-timeout
marker, the wording of a session's end and the unwrapping of one-member exception groups."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("mcp_trio")

_DEFAULT = object()  # "the session's default_timeout"


def _ended(what: str, channel: Any) -> str:
    """``what`` happened, with the transport's own account (``end_reason``) when it has one,
    such as a WebSocket close code."""
    reason = getattr(channel, "end_reason", None)
    return f"{what} ({reason})" if reason else what


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside (nested) one-member groups, else the group."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
