"""mcp-trio install: add a server file to the configuration of Claude Desktop, Cursor or VS Code.

The entry starts the server over stdio as ``PYTHON -m mcp_trio serve /absolute/server.py``, with
the absolute path of the interpreter running this command (a virtual environment's stays that
environment's), so the client can launch it from anywhere.  The file is merged into: other
servers and keys are kept, an entry of the same name is replaced only with ``--force``.

Where each client reads its configuration:

* Claude Desktop: ``claude_desktop_config.json`` in ``~/Library/Application Support/Claude``
  (macOS), ``%APPDATA%\\Claude`` (Windows), ``$XDG_CONFIG_HOME/Claude`` or ``~/.config/Claude``
  (Linux); servers under ``"mcpServers"``.
* Cursor: ``~/.cursor/mcp.json``; servers under ``"mcpServers"``.
* VS Code: the user's ``mcp.json`` in ``~/Library/Application Support/Code/User`` (macOS),
  ``%APPDATA%\\Code\\User`` (Windows), ``$XDG_CONFIG_HOME/Code/User`` or ``~/.config/Code/User``
  (Linux), or a workspace's ``.vscode/mcp.json`` (``--workspace DIR``); servers under
  ``"servers"``, each with ``"type": "stdio"``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "add_parser", "config_path", "entry"]

CLIENTS = {"claude-desktop": "Claude Desktop", "cursor": "Cursor", "vscode": "VS Code"}
_REDACTED = "<redacted>"


class _Refused(Exception):
    """The command cannot do what was asked (the message says why and what to do)."""


def add_parser(sub: Any) -> None:
    """Add the ``install`` subcommand to ``sub`` (the main parser's subparsers)."""
    p = sub.add_parser(
        "install",
        help="add a server file to the configuration of Claude Desktop, Cursor or VS Code",
        description="Add a server to a client's MCP configuration: the client starts it over stdio "
        "with this Python interpreter (python -m mcp_trio serve FILE). The file is merged into "
        "(other servers are kept). Exit codes: 0 done, 2 a usage error or a file that cannot be "
        "read or written, or an entry of the same name (--force replaces it).",
    )
    p.add_argument("client", choices=list(CLIENTS), help="the client to configure")
    p.add_argument(
        "target",
        metavar="FILE[:ATTRIBUTE]",
        help="the server's Python file, optionally followed by the name of the Server in it",
    )
    p.add_argument("--name", help="the server's name in the configuration (default: the file's name)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an environment variable for the server (repeatable); written to the file only "
        "(--dry-run shows it redacted)",
    )
    p.add_argument(
        "--env-file",
        metavar="FILE",
        help="environment variables for the server from FILE, a KEY=VALUE a line ('#' comments, "
        "blank lines, 'export ' and quotes around the value allowed); --env goes over it. Keeps "
        "secrets out of the shell's history",
    )
    p.add_argument(
        "--config", metavar="PATH", help="the configuration file to write (default: the client's own)"
    )
    p.add_argument(
        "--workspace",
        metavar="DIR",
        help="vscode only: write DIR/.vscode/mcp.json (the workspace's) instead of the user's mcp.json",
    )
    p.add_argument("--force", action="store_true", help="replace an entry of the same name")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the file as it would be (environment values redacted) and its path; write nothing",
    )
    p.set_defaults(func=command)


def command(args: argparse.Namespace) -> int:
    try:
        return _install(args)
    except _Refused as exc:
        print(f"mcp-trio install: {exc}", file=sys.stderr)
        return 2


def config_path(client: str, workspace: str | None = None) -> Path:
    """Where ``client`` reads its MCP servers on this platform."""
    if client == "vscode" and workspace is not None:
        return Path(workspace).absolute() / ".vscode" / "mcp.json"
    home = Path.home()
    if client == "cursor":
        return home / ".cursor" / "mcp.json"
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("APPDATA") or home / "AppData" / "Roaming")
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    if client == "claude-desktop":
        return base / "Claude" / "claude_desktop_config.json"
    return base / "Code" / "User" / "mcp.json"


def entry(client: str, target: str, env: dict[str, str]) -> dict[str, Any]:
    """The configuration entry that starts ``target`` (made absolute) over stdio."""
    server: dict[str, Any] = {"type": "stdio"} if client == "vscode" else {}
    server["command"] = os.path.abspath(sys.executable)  # (not resolved: a venv's link stays)
    server["args"] = ["-m", "mcp_trio", "serve", target]
    if env:
        server["env"] = env
    return server


def _target(given: str) -> tuple[str, str]:
    """``FILE[:ATTRIBUTE]`` with FILE absolute, and the default name (FILE's stem)."""
    where, sep, attribute = given.rpartition(":")
    if not sep or not Path(where).is_file():
        where, attribute = given, ""
    path = Path(where)
    if not path.is_file():
        raise _Refused(f"no such file: {where} (give the server's Python file)")
    absolute = str(path.absolute())
    return (f"{absolute}:{attribute}" if attribute else absolute), path.stem


def _environment(pairs: list[str], file: str | None) -> dict[str, str]:
    """``--env-file``'s variables with ``--env``'s over them."""
    env: dict[str, str] = {}
    if file is not None:
        try:
            lines = Path(file).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise _Refused(f"--env-file: cannot read {file}: {exc}") from None
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            key, sep, value = text.removeprefix("export ").partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not key or any(c.isspace() for c in key):
                raise _Refused(f"--env-file: {file}, line {number}: not KEY=VALUE")  # (no value shown)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            env[key] = value
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise _Refused(f"--env takes KEY=VALUE, not {pair!r}")
        env[key] = value
    return env


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Refused(f"cannot read {path}: {exc}") from None
    except ValueError as exc:
        raise _Refused(
            f"{path} is not plain JSON ({exc}; comments?): fix it, or add the entry by hand "
            "(--dry-run prints it)"
        ) from None
    if not isinstance(document, dict):
        raise _Refused(f"{path} holds a JSON {type(document).__name__}, not an object")
    return document


def _install(args: argparse.Namespace) -> int:
    if args.workspace is not None and args.client != "vscode":
        raise _Refused("--workspace is for vscode only")
    target, stem = _target(args.target)
    name = args.name if args.name is not None else stem
    if not name:
        raise _Refused("--name must not be empty")
    env = _environment(args.env, args.env_file)
    path = Path(args.config) if args.config is not None else config_path(args.client, args.workspace)
    document = _read(path)
    key = "servers" if args.client == "vscode" else "mcpServers"
    servers = document.setdefault(key, {})
    if not isinstance(servers, dict):
        raise _Refused(f"{path}: {key!r} is a JSON {type(servers).__name__}, not an object")
    new = entry(args.client, target, env)
    if name in servers and servers[name] != new and not args.force:
        raise _Refused(
            f"{path} already has a server named {name!r}: --force replaces it, --name NAME adds another"
        )
    unchanged = servers.get(name) == new
    servers[name] = new
    if args.dry_run:
        print(json.dumps(_redacted(document, key), indent=2, ensure_ascii=False))
        print(
            f"mcp-trio install: --dry-run: {path} would be written as above (environment values "
            "redacted); nothing was written",
            file=sys.stderr,
        )
        return 0
    client = CLIENTS[args.client]
    if unchanged:
        print(f"mcp-trio install: {name!r} is already in {path} as it would be: nothing to do")
        return 0
    _write(path, document, private=bool(env))
    print(f"mcp-trio install: {name!r} added to {path}; restart {client} to load it")
    if os.environ.get("PYTHONPATH") and "PYTHONPATH" not in env:
        print(
            f"mcp-trio install: warning: PYTHONPATH is set here but {client} will not see it; "
            "if the server needs it, install again with --force --env PYTHONPATH=...",
            file=sys.stderr,
        )
    return 0


def _redacted(document: dict[str, Any], key: str) -> dict[str, Any]:
    """``document`` with the value of every server's environment variable hidden."""
    servers = {}
    for name, server in document[key].items():
        if isinstance(server, dict) and isinstance(server.get("env"), dict):
            server = {**server, "env": dict.fromkeys(server["env"], _REDACTED)}
        servers[name] = server
    return {**document, key: servers}


def _write(path: Path, document: dict[str, Any], private: bool) -> None:
    """Write ``document`` to ``path`` whole or not at all (a file beside it, then renamed); a new
    file holding secrets is readable by its owner only, an existing one keeps its mode."""
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o777 if path.exists() else (0o600 if private else 0o644)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, mode)  # (the umask does not narrow an existing file's mode)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise _Refused(f"cannot write {path}: {exc.strerror or exc}") from None
