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
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .server import Server

__all__ = ["main"]

_LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


def _cmd_versions(args: argparse.Namespace) -> int:
    from .types import _versions

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
        from codegen.__main__ import main as codegen_main
    except ImportError as exc:  # pragma: no cover - depends on the install
        print(
            f"mcp-trio codegen: the code generator is not available ({exc}); "
            "install the 'codegen' extra: pip install 'mcp-trio[codegen]'",
            file=sys.stderr,
        )
        return 2
    return int(codegen_main(list(args.rest)) or 0)


class _ServeError(Exception):
    """A target that cannot be served; the message is for the user."""


def _split_target(target: str) -> tuple[str, str | None]:
    """``"where:attr"`` -> ``("where", "attr")``; ``"where"`` -> ``("where", None)``."""
    where, sep, attribute = target.rpartition(":")
    if not sep:
        return target, None
    if not where or not attribute:
        raise _ServeError(f"{target!r} is not FILE[:ATTRIBUTE] or MODULE[:ATTRIBUTE]")
    return where, attribute


def _is_file_reference(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where or Path(where).is_file()


def _import_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise _ServeError(f"no such file: {path}")
    path = path.resolve()
    name = path.stem
    if not name.isidentifier() or name in sys.modules:
        name = "_mcp_trio_served"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise _ServeError(f"cannot load {path} as a Python module")
    module = importlib.util.module_from_spec(spec)
    # Like ``python FILE``: the file's directory comes first on the import path,
    # so the file can import its neighbours.
    sys.path.insert(0, str(path.parent))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _import_module(name: str) -> ModuleType:
    # Like ``python -m``: modules are looked up from the current directory first.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise _ServeError(f"no such file or module: {name}") from None
        raise


def _find_server(module: ModuleType, where: str, attribute: str | None) -> Server:
    from .server import Server

    if attribute is not None:
        value: Any = module
        for part in attribute.split("."):
            try:
                value = getattr(value, part)
            except AttributeError:
                raise _ServeError(f"{where} has no attribute {attribute!r}") from None
        if not isinstance(value, Server):
            raise _ServeError(
                f"{where}:{attribute} is a {type(value).__name__}, not a mcp_trio.server.Server"
            )
        return value
    default = getattr(module, "server", None)
    if isinstance(default, Server):
        return default
    found: dict[int, tuple[str, Server]] = {}
    for name, value in vars(module).items():
        if isinstance(value, Server) and id(value) not in found:
            found[id(value)] = (name, value)
    if len(found) == 1:
        return next(iter(found.values()))[1]
    if not found:
        raise _ServeError(
            f"no Server found in {where}: create one at module level "
            f"(server = Server(...)) or name it with {where}:ATTRIBUTE"
        )
    names = sorted(name for name, _ in found.values())
    raise _ServeError(
        f"{where} defines several Servers ({', '.join(names)}); choose one with {where}:{names[0]}"
    )


def load_server(target: str) -> Server:
    """The :class:`~mcp_trio.server.Server` that ``target`` names.

    ``target`` is ``FILE[:ATTRIBUTE]`` or ``MODULE[:ATTRIBUTE]`` (dotted,
    importable).  Without an attribute, the module-level ``server`` is used,
    else the only Server instance among the module's globals.

    Raises:
        _ServeError: the target cannot be found or holds no single Server.
        Exception: whatever importing the module raised.
    """
    where, attribute = _split_target(target)
    # Output while the module is imported must not reach stdout (the protocol).
    with contextlib.redirect_stdout(sys.stderr):
        if _is_file_reference(where):
            module = _import_file(Path(where))
        else:
            module = _import_module(where)
    return _find_server(module, where, attribute)


def _parse_host_port(text: str, option: str = "--http") -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise SystemExit(f"mcp-trio serve: error: {option} wants HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


async def _serve_http(
    server: Any,
    host: str,
    port: int,
    path: str,
    front_door: str,
    legacy_sse: bool = False,
    stateless: bool = False,
    auth: Any = None,
) -> None:
    import trio

    serve = partial(
        server.serve_http, host, port, path=path, front_door=front_door, legacy_sse=legacy_sse, stateless=stateless
    )
    if auth is not None:
        serve = partial(serve, auth=auth)
    async with trio.open_nursery() as nursery:
        urls = await nursery.start(serve)
        for url in urls:
            print(f"mcp-trio serve: Streamable HTTP at {url} ({front_door})", file=sys.stderr, flush=True)
            if legacy_sse:
                base = url[: len(url) - len(path)] if path and url.endswith(path) else url
                print(f"mcp-trio serve: HTTP+SSE (2024-11-05) at {base}/sse", file=sys.stderr, flush=True)


async def _serve_websocket(server: Any, host: str, port: int, path: str, auth: Any = None) -> None:
    import trio

    try:
        async with trio.open_nursery() as nursery:
            urls = await nursery.start(partial(server.serve_websocket, host, port, path=path, auth=auth))
            for url in urls:
                print(f"mcp-trio serve: WebSocket at {url}", file=sys.stderr, flush=True)
    except BaseExceptionGroup as group:
        if group.split(KeyboardInterrupt)[1] is None:  # Ctrl+C, wherever it landed
            raise KeyboardInterrupt from None
        raise


def _resource_server(args: argparse.Namespace) -> Any:
    """With --auth-issuer: the endpoint accepts only JWT access tokens of that issuer."""
    if args.auth_issuer is None:
        return None
    from .auth.server import JWTVerifier, ResourceServer

    verifier = JWTVerifier(args.auth_jwks, issuer=args.auth_issuer)
    return ResourceServer(
        args.auth_resource,
        authorization_servers=[args.auth_issuer],
        verifier=verifier,
        required_scopes=args.auth_scope,
    )


def _cmd_serve(args: argparse.Namespace) -> int:
    import trio

    # Log records go to stderr (stdout is the protocol), for as long as the command runs.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    saved_level = root.level
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    try:
        try:
            server = load_server(args.target)
        except _ServeError as exc:
            print(f"mcp-trio serve: error: {exc}", file=sys.stderr)
            return 2
        except Exception:
            print(f"mcp-trio serve: error: importing {args.target} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            return 1
        try:
            if args.ws is not None:
                if args.http is not None:
                    print("mcp-trio serve: error: use --http or --ws, not both", file=sys.stderr)
                    return 2
                host, port = _parse_host_port(args.ws, "--ws")
                trio.run(_serve_websocket, server, host, port, args.path, _resource_server(args))
            elif args.http is None:
                trio.run(server.serve_stdio)
            else:
                host, port = _parse_host_port(args.http)
                serve = partial(_serve_http, server, host, port, args.path, args.front_door)
                trio.run(serve, args.legacy_sse, args.stateless, _resource_server(args))
        except KeyboardInterrupt:
            return 130
        return 0
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_level)


def _fuzz_progress(line: str) -> None:
    print(f"mcp-trio fuzz: {line}", file=sys.stderr, flush=True)


def _import_fuzzing() -> Any:
    try:
        from . import fuzzing
    except ImportError as exc:
        print(f"mcp-trio fuzz: error: {exc}", file=sys.stderr)
        return None
    return fuzzing


def _cmd_fuzz_replay(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="mcp-trio fuzz replay",
                                     description="Send a saved finding's case again, on a fresh session.")
    parser.add_argument("file", help="a transcript written by 'mcp-trio fuzz'")
    parser.add_argument("--stdio", metavar="CMD", help="replay against this command instead")
    parser.add_argument("--http", metavar="URL", help="replay against this endpoint instead")
    parser.add_argument("--client", metavar="CMD", help="replay a client transcript against this client instead")
    parser.add_argument("--client-transport", choices=("http", "stdio"), default=None,
                        help="with --client: how the client reaches the fuzzing server (default: the transcript's)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds to wait for answers")
    parser.add_argument("--out", metavar="FILE", help="write the new transcript here")
    args = parser.parse_args(argv)
    fuzzing = _import_fuzzing()
    if fuzzing is None:
        return 2
    import json

    try:
        target = (fuzzing.StdioTarget(args.stdio) if args.stdio else
                  fuzzing.HttpTarget(args.http) if args.http else
                  None)
        saved = fuzzing.load_transcript(args.file)
        if args.client:
            transport = args.client_transport or saved.get("target", {}).get("transport", "http")
            target = fuzzing.ClientTarget(args.client, transport=transport)
        transcript, violations = fuzzing.replay(args.file, target=target, timeout=args.timeout)
    except (OSError, ValueError, KeyError) as exc:
        print(f"mcp-trio fuzz replay: error: {exc}", file=sys.stderr)
        return 2
    except fuzzing.runner.TargetError as exc:
        print(f"mcp-trio fuzz replay: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        Path(args.out).write_text(json.dumps(transcript, indent=1, ensure_ascii=False) + "\n")
    wanted = (saved.get("finding") or {}).get("key")
    for v in violations:
        print(f"{v.key}: {v.message}")
    if not violations:
        print("no violation")
    if wanted is not None:
        reproduced = any(v.key == wanted for v in violations)
        print(f"{'reproduced' if reproduced else 'did not reproduce'}: {wanted}", file=sys.stderr)
        return 1 if reproduced else 0
    return 1 if violations else 0


def _cmd_fuzz(argv: Sequence[str]) -> int:
    if argv[:1] == ["replay"]:
        return _cmd_fuzz_replay(argv[1:])
    from .types import _versions

    parser = argparse.ArgumentParser(
        prog="mcp-trio fuzz",
        description="Fuzz an MCP server or client with hypothesis-driven campaigns; each violation is "
        "shrunk, replayed on a fresh session and saved as a transcript "
        "('mcp-trio fuzz replay FILE' runs it again).",
    )
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", metavar="CMD", help='launch this server command ("CMD ARGS")')
    where.add_argument("--http", metavar="URL", help="a running Streamable HTTP endpoint")
    where.add_argument("--client", metavar="CMD", help='launch this client ("CMD ARGS"; the URL of a fuzzing '
                       "server on 127.0.0.1 is appended, or with --client-transport stdio the command of a "
                       "server to launch; an argument {server} is replaced instead), once per example")
    parser.add_argument("--client-transport", choices=("http", "stdio"), default="http",
                        help="--client: Streamable HTTP (default) or stdio")
    parser.add_argument("--revision", action="append", choices=_versions.SUPPORTED_VERSIONS,
                        help="revision to speak (repeatable; default 2025-11-25)")
    parser.add_argument("--campaign", action="append",
                        choices=("valid", "invalid", "lifecycle", "capabilities", "http", "stateful", "client"),
                        help="campaign to run (repeatable; default: valid, invalid, lifecycle, capabilities, "
                        "and http with --http; client with --client; stateful only when asked)")
    parser.add_argument("--seed", type=int, default=0, help="hypothesis seed (default 0)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--max-examples", type=int, default=None,
                        help="examples per campaign and revision (default 100)")
    budget.add_argument("--time", type=float, default=None, metavar="SECONDS",
                        help="time per campaign and revision instead of an example count")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for answers (default 5)")
    parser.add_argument("--max-findings", type=int, default=5, metavar="N",
                        help="stop a campaign after N findings (default 5; the summary says when it did)")
    parser.add_argument("--shrink-time", type=float, default=20.0, metavar="SECONDS",
                        help="seconds of shrinking per finding (default 20)")
    parser.add_argument("--run-time", type=float, default=30.0, metavar="SECONDS",
                        help="--client: seconds one client run may take before it counts as hung (default 30)")
    parser.add_argument("--all-revisions", action="store_true",
                        help="fuzz every --revision even if the server's initialize answer names another")
    parser.add_argument("--skip", action="append", default=[], metavar="PROBE",
                        help="leave out a probe kind, e.g. deep_nesting (repeatable)")
    parser.add_argument("--out", metavar="DIR", default="fuzz-results",
                        help="where the report, summary and transcripts go (default ./fuzz-results)")
    args = parser.parse_args(argv)
    if args.max_findings < 1:
        parser.error("--max-findings must be at least 1")
    fuzzing = _import_fuzzing()
    if fuzzing is None:
        return 2
    try:
        target = (fuzzing.StdioTarget(args.stdio) if args.stdio else
                  fuzzing.ClientTarget(args.client, transport=args.client_transport) if args.client else
                  fuzzing.HttpTarget(args.http))
    except ValueError as exc:
        print(f"mcp-trio fuzz: error: {exc}", file=sys.stderr)
        return 2
    campaigns = args.campaign or (["client"] if args.client else
                                  ["valid", "invalid", "lifecycle", "capabilities", *(["http"] if args.http else [])])
    cfg = fuzzing.FuzzConfig(
        target=target,
        revisions=args.revision or ["2025-11-25"],
        campaigns=campaigns,
        seed=args.seed,
        max_examples=None if args.time is not None else (args.max_examples or 100),
        time_budget=args.time,
        timeout=args.timeout,
        skip_probes=frozenset(args.skip),
        max_findings=args.max_findings,
        run_time=args.run_time,
        shrink_time=args.shrink_time,
        all_revisions=args.all_revisions,
        out_dir=Path(args.out),
        progress=_fuzz_progress,
    )
    try:
        stats = fuzzing.run(cfg)
    except KeyboardInterrupt:
        return 130
    print(fuzzing.runner.summary(cfg, stats), end="")
    print(f"mcp-trio fuzz: report in {Path(args.out) / 'report.json'}", file=sys.stderr)
    return 1 if fuzzing.runner.violations_found(stats) else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mcp-trio", description="Model Context Protocol on trio.")
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
    p = sub.add_parser(
        "serve",
        help="serve a mcp_trio Server over stdio or Streamable HTTP",
        description="Load a mcp_trio.server.Server and serve it over stdin/stdout, or over "
        "Streamable HTTP with --http. Logging goes to stderr.",
    )
    p.add_argument(
        "target",
        metavar="FILE[:ATTRIBUTE]",
        help="a Python file or an importable module (package.module), optionally followed by "
        "the name of the Server in it; by default the module-level 'server', else the only "
        "Server instance in the module",
    )
    p.add_argument(
        "--log-level",
        choices=_LOG_LEVELS,
        default="warning",
        help="threshold for log records written to stderr (default: warning)",
    )
    p.add_argument(
        "--http",
        metavar="HOST:PORT",
        help="serve Streamable HTTP on HOST:PORT instead of stdio (port 0 picks a free port; "
        "the URL is printed to stderr)",
    )
    p.add_argument(
        "--ws",
        metavar="HOST:PORT",
        help="serve MCP over WebSocket (a custom transport, subprotocol 'mcp') on HOST:PORT "
        "instead of stdio; the URL is printed to stderr",
    )
    p.add_argument("--path", default="/mcp", help="the HTTP endpoint path (default: /mcp)")
    p.add_argument(
        "--front-door",
        choices=("h11", "hypercorn"),
        default="h11",
        help="HTTP server: the lean HTTP/1.1 one on h11 (default) or hypercorn (ASGI: HTTP/2, TLS)",
    )
    p.add_argument(
        "--stateless",
        action="store_true",
        help="with --http, keep no sessions: every request stands alone (no Mcp-Session-Id, "
        "no GET stream, no server-to-client requests)",
    )
    p.add_argument(
        "--legacy-sse",
        action="store_true",
        help="with --http, also serve the 2024-11-05 HTTP+SSE transport for old clients "
        "(GET /sse, POST /messages)",
    )
    p.add_argument(
        "--auth-issuer",
        metavar="URL",
        help="with --http or --ws, require OAuth access tokens (JWTs) from this authorization server; "
        "serves the protected resource metadata (see docs/authorization.md)",
    )
    p.add_argument(
        "--auth-jwks", metavar="URL", help="its signing keys (default: its metadata's jwks_uri)"
    )
    p.add_argument(
        "--auth-scope", action="append", default=[], metavar="SCOPE",
        help="a scope every request needs (repeatable)",
    )
    p.add_argument(
        "--auth-resource", metavar="URL",
        help="this server's resource identifier, the tokens' audience (default: the endpoint URL)",
    )
    p.set_defaults(func=_cmd_serve)
    sub.add_parser("fuzz", help="fuzz an MCP server (see 'mcp-trio fuzz --help'); "
                   "'mcp-trio fuzz replay FILE' replays a finding", add_help=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["fuzz"]:
        return _cmd_fuzz(argv[1:])
    if argv[:1] == ["codegen"]:
        # Everything after "codegen" belongs to the generator (options included).
        return _cmd_codegen(argparse.Namespace(rest=argv[1:]))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
