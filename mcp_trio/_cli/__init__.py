"""The ``mcp-trio`` command.

Subcommands:

* ``versions``: list the supported protocol revisions.
* ``codegen``: regenerate the message types from the MCP schemas.
* ``serve FILE[:ATTRIBUTE]`` or ``serve package.module[:ATTRIBUTE]``: load a
  :class:`~mcp_trio.server.Server` and serve it over stdio.  stdout carries the
  protocol, so everything else (logging, warnings, stray ``print`` calls while
  the module is imported) goes to stderr.
* ``fuzz --stdio CMD | --http URL | --client CMD``: hypothesis-driven campaigns
  against any MCP server or client (needs the ``fuzz`` extra); ``fuzz replay FILE`` runs a saved
  finding again.
* ``list | call | inspect | read | prompt TARGET``: poke any MCP server (a
  command, an ``http(s)://`` or ``ws(s)://`` URL); see :mod:`._client_cmds`.
* ``install {claude-desktop,cursor,vscode} FILE``: add a server to a client's
  configuration; see :mod:`._install`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import _client_cmds, _fuzz, _install, _serve
from ._serve import load_server as load_server

__all__ = ["load_server", "main"]


def _cmd_versions(args: argparse.Namespace) -> int:
    from ..types import _versions

    print("Supported MCP protocol revisions (newest first):")
    for version in _versions.SUPPORTED_VERSIONS:
        module = _versions.module_for(version)
        methods = module.METHODS.values()
        requests = sum(1 for m in methods if m.kind == "request")
        notifications = sum(1 for m in methods if m.kind == "notification")
        era = "stateless" if _versions.is_stateless(version) else "initialize handshake"
        extra = ", batching" if _versions.supports_batching(version) else ""
        print(
            f"  {version}  {era}{extra}; {requests} requests, {notifications} notifications "
            f"({module.__name__})"
        )
    return 0


def _cmd_codegen(args: argparse.Namespace) -> int:
    try:
        from mcp_trio_codegen.__main__ import main as codegen_main  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:  # pragma: no cover - depends on the install
        print(
            f"mcp-trio codegen: the code generator is not available ({exc}); "
            "install the 'codegen' extra: pip install 'mcp-trio[codegen]'",
            file=sys.stderr,
        )
        return 2
    return int(codegen_main(list(args.rest), prog="mcp-trio codegen") or 0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp-trio", description="Model Context Protocol on trio.")
    parser.add_argument("--version", action="version", version=_serve.VERSION)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("versions", help="list the supported protocol revisions")
    p.set_defaults(func=_cmd_versions)
    p = sub.add_parser(
        "codegen",
        help="regenerate the message types from the MCP schemas (see 'mcp-trio codegen --help')",
        add_help=False,
    )
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_cmd_codegen)
    _serve.add_parser(sub)
    sub.add_parser(
        "fuzz",
        help="fuzz an MCP server (see 'mcp-trio fuzz --help'); 'mcp-trio fuzz replay FILE' replays a finding",
        add_help=False,
    )
    _client_cmds.add_parsers(sub)
    _install.add_parser(sub)
    whole_process = argv is None  # (the command line is this process's: serve may re-execute it)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in _client_cmds.COMMANDS:
        return _client_cmds.command(argv)
    if argv[:1] == ["fuzz"]:
        return _fuzz.command(argv[1:])
    if argv[:1] == ["codegen"]:
        # Everything after "codegen" belongs to the generator (options included).
        return _cmd_codegen(argparse.Namespace(rest=argv[1:]))
    args = parser.parse_args(argv)
    args.whole_process = whole_process
    return int(args.func(args))
