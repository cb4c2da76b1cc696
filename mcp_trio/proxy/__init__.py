"""Proxying: ``proxy(target)`` serves another MCP server (a command, a URL, a server object) as
if it were local, over one long-lived session to it; ``gateway(backends)`` serves several, each
under a prefix, and ``load_gateway(file)`` makes one from a TOML or ``mcpServers`` JSON file
(docs/guide/composition.md, "Proxying" and "A gateway")."""

from ._config import ConfigError as ConfigError
from ._config import load_gateway as load_gateway
from ._gateway import Backend as Backend
from ._gateway import gateway as gateway
from ._proxy import proxy as proxy
from ._upstream import UpstreamUnavailable as UpstreamUnavailable

__all__ = ["Backend", "ConfigError", "UpstreamUnavailable", "gateway", "load_gateway", "proxy"]
