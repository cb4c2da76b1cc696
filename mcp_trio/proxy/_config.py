"""A gateway from a configuration file: TOML, or the ``mcpServers`` JSON that clients (Claude
Desktop, Cursor, VS Code) keep their servers in.  ``mcp-trio serve FILE.toml`` (or ``.json``)
serves it.

TOML::

    [gateway]                 # optional
    name = "gateway"          # serverInfo.name
    offer = ["2025-11-25"]    # the revisions offered (proxy()'s offer), for every backend
    page_size = 100
    validate = "count"        # the default validate of every server (none by default)

    [servers.notes]           # the prefix: notes_add, notes://notes/...
    command = "python"        # a stdio server: command, args, env, cwd
    args = ["notes.py"]
    tools = ["add"]           # the tools offered (default: all)
    timeout = 30              # seconds per request (default 60)
    validate = "log"          # check its messages (proxy()'s validate; needs the fuzz extra)

    [servers.weather]
    url = "https://weather.example/mcp"   # Streamable HTTP (or ws:// wss://)

JSON: ``{"mcpServers": {"notes": {"command": ..., "args": [...], "env": {...}}, "weather":
{"url": ...}}}`` with the same optional ``tools``, ``timeout``, ``versions``, ``validate`` and ``cwd`` per
server, and an optional top-level ``"gateway"`` object.  A relative ``cwd``, and the working
directory of a command without one, is the file's directory.  Any other key is refused, naming
the file and the key.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from ..server import Server
from ._gateway import Backend, gateway
from ._proxy import validating

__all__ = ["ConfigError", "load_gateway"]

_SERVER_KEYS = {"command", "args", "env", "cwd", "url", "type", "tools", "timeout", "versions", "validate"}
_GATEWAY_KEYS = {"name", "offer", "page_size", "validate"}


class ConfigError(ValueError):
    """A gateway configuration that cannot be used: the message names the file and what to fix."""


def load_gateway(path: str | Path) -> Server:
    """The gateway a configuration file describes (see the module's documentation).

    Raises:
        ConfigError: the file cannot be read, or describes no valid gateway.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        data: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object at the top")
    name = "mcpServers" if path.suffix == ".json" else "servers"
    extra = set(data) - {name, "gateway"}
    if extra:
        raise ConfigError(
            f"{path}: unknown top-level key(s) {', '.join(sorted(map(repr, extra)))} "
            f"(the servers go under {name!r}, the gateway's settings under 'gateway')"
        )
    servers = data.get(name)
    if not isinstance(servers, dict) or not servers:
        raise ConfigError(f"{path}: no servers: describe each under {name!r}")
    settings = data.get("gateway", {})
    if not isinstance(settings, dict) or set(settings) - _GATEWAY_KEYS:
        raise ConfigError(f"{path}: 'gateway' takes {', '.join(sorted(_GATEWAY_KEYS))}")
    default_validate = (
        _policy(path, "gateway.validate", settings["validate"]) if "validate" in settings else None
    )
    backends = {
        str(name): _backend(path, str(name), entry, default_validate) for name, entry in servers.items()
    }
    options: dict[str, Any] = {}
    if "name" in settings:
        options["server_name"] = _typed(path, "gateway.name", settings["name"], str)
    if "offer" in settings:
        options["offer"] = _strings(path, "gateway.offer", settings["offer"])
    if "page_size" in settings:
        options["page_size"] = _typed(path, "gateway.page_size", settings["page_size"], int)
    try:
        return gateway(backends, **options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _backend(path: Path, name: str, entry: Any, default_validate: str | None = None) -> Backend:
    where = f"server {name!r}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{path}: {where} must be an object")
    unknown = set(entry) - _SERVER_KEYS
    if unknown:
        raise ConfigError(
            f"{path}: {where} has unknown key(s) {', '.join(sorted(map(repr, unknown)))} "
            f"(known: {', '.join(sorted(_SERVER_KEYS))})"
        )
    options: dict[str, Any] = {}
    target: str | list[str]
    if ("command" in entry) == ("url" in entry):
        raise ConfigError(f"{path}: {where} needs either a command (a stdio server) or a url")
    if "url" in entry:
        target = _typed(path, f"{where} url", entry["url"], str)
        if entry.get("type") == "sse":
            raise ConfigError(f"{path}: {where}: the SSE transport of 2024-11-05 is not proxied; use its URL")
    else:
        command = _typed(path, f"{where} command", entry["command"], str)
        target = [command, *_strings(path, f"{where} args", entry.get("args", []))]
        env = entry.get("env")
        if env is not None:
            if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
                raise ConfigError(f"{path}: {where} env must map names to strings")
            options["env"] = dict(env)
        cwd = Path(_typed(path, f"{where} cwd", entry.get("cwd", "."), str))
        options["cwd"] = str(cwd if cwd.is_absolute() else (path.parent / cwd).resolve())
    if "versions" in entry:
        options["versions"] = _strings(path, f"{where} versions", entry["versions"])
    tools = _strings(path, f"{where} tools", entry["tools"]) if "tools" in entry else None
    timeout = entry.get("timeout", 60.0)
    if timeout is not None and (
        not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0
    ):
        raise ConfigError(f"{path}: {where} timeout must be a positive number of seconds")
    validate = entry.get("validate", default_validate)
    if validate is not None:
        validate = _policy(path, f"{where} validate", validate)
    return Backend(
        target,
        tools=tools,
        timeout=None if timeout is None else float(timeout),
        options=options,
        validate=validate,
    )


def _policy(path: Path, what: str, value: Any) -> str:
    """A ``validate`` policy's text, checked now (a ConfigError naming what is wrong)."""
    text = _typed(path, what, value, str)
    try:
        validating(text)
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"{path}: {what}: {exc}") from None
    return str(text)


def _typed(path: Path, what: str, value: Any, kind: type) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(f"{path}: {what} must be a {kind.__name__}, not {type(value).__name__}")
    return value


def _strings(path: Path, what: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: {what} must be a list of strings")
    return list(value)
