"""Proxying: ``proxy(target)`` serves another MCP server (a command, a URL, a server object) as
if it were local, over one long-lived session to it (docs/guide/composition.md, "Proxying")."""

from ._proxy import proxy as proxy
from ._upstream import UpstreamUnavailable as UpstreamUnavailable

__all__ = ["UpstreamUnavailable", "proxy"]
