"""``mcp-trio serve``: load a ``Server`` from a file or module and serve it (stdio, Streamable
HTTP, WebSocket), logging to stderr."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import logging
import os
import re
import sys
import traceback
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..transports.http.doors import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEPALIVE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT,
    FRONT_DOORS,
    ConnectionLimits,
)
from ._config import ConfigError, layered, resolve
from ._deploy import add_deploy_arguments, guard_options, tls_options
from ._shutdown import serve_until_signalled
from ._tuning import (
    connections_within_open_files,
    raise_open_files_limit,
    run_on_allocator,
    serve_tidying_after_bursts,
    settle_heap,
)
from ._workers import (
    add_worker_arguments,
    apply_state_key,
    check_workers,
    open_store_options,
    supervise,
    wants_supervisor,
    worker_serving,
)

if TYPE_CHECKING:
    from ..server import GracefulShutdown, Server

__all__ = ["add_parser", "load_server"]

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
VERSION = f"mcp-trio {__version__}"


def add_parser(sub: Any) -> None:
    """Add the ``serve`` subcommand to ``sub`` (the main parser's subparsers)."""
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
        "Server instance in the module; or a gateway's configuration, a .toml file or an "
        "mcpServers .json file (several servers, each under a prefix)",
    )
    p.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="warning",
        help="threshold for log records written to stderr (default: warning)",
    )
    p.add_argument(
        "--access-log",
        action="store_true",
        help="log one line per request at INFO on 'mcp_trio.access' (method, tool/resource/prompt, "
        "id, session, outcome, duration), whatever --log-level; with --http also one per HTTP "
        "request on 'mcp_trio.access.http' (method, path, status, bytes, duration, client, session)",
    )
    for flag, what in _ADDRESS_FLAGS.items():
        p.add_argument(
            flag, metavar="HOST:PORT", help=f"serve {what} on HOST:PORT instead of stdio{_URL_NOTE}"
        )
    p.add_argument("--path", default="/mcp", help="the HTTP endpoint path (default: /mcp)")
    p.add_argument(
        "--metrics-path",
        metavar="PATH",
        help="with --http, also serve Prometheus metrics at PATH, such as /metrics",
    )
    p.add_argument(
        "--forwarded-allow-ips",
        metavar="IPS",
        help="with --http, believe Forwarded / X-Forwarded-For from these reverse proxies "
        "(comma-separated addresses or networks, or '*'): the per-client bounds then count the "
        "client's address, not the proxy's",
    )
    p.add_argument(
        "--proxy-protocol-allow-ips",
        metavar="IPS",
        help="with --http (the lean doors), connections from these TCP load balancers "
        "(comma-separated addresses or networks, or '*') start with a PROXY protocol header "
        "(v1 or v2) naming the client, whose address the per-client bounds then count",
    )
    p.add_argument(
        "--metrics-token",
        metavar="TOKEN",
        help="with --metrics-path, serve the metrics only to requests with 'Authorization: Bearer "
        "TOKEN' (401 otherwise); give it as MCP_TRIO_METRICS_TOKEN or in --config, not on the "
        "command line, which any local user can read",
    )
    p.add_argument(
        "--front-door",
        choices=FRONT_DOORS,
        default="h11",
        help="HTTP server: the lean HTTP/1.1 one on h11 (default), the same parsing with llhttp "
        "(httptools: less CPU per request, needs pip install 'mcp-trio[fast]') or hypercorn "
        "(ASGI: HTTP/2, TLS)",
    )
    p.add_argument(
        "--stateless",
        action="store_true",
        help="with --http, keep no sessions: every request stands alone (no Mcp-Session-Id, "
        "no GET stream, no server-to-client requests)",
    )
    p.add_argument(
        "--max-sessions",
        type=_positive_int,
        metavar="N",
        help="with --http, sessions at once (default: 10000); when full, a new client evicts the "
        "oldest session that never got past initialize, else gets 503",
    )
    p.add_argument(
        "--session-idle-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, a session with no request and no open stream for this long ends (default: 1800)",
    )
    _add_door_arguments(p)
    p.add_argument(
        "--max-sessions-per-client",
        type=_positive_int,
        metavar="N",
        help="with --http, sessions opened from one client address (default: 128); past it, "
        "that address's oldest session that never got past initialize (if 10 s old) is "
        "evicted, else 429",
    )
    p.add_argument(
        "--max-body-size",
        type=_positive_int,
        metavar="BYTES",
        help="with --http, bytes in a POST body (default: 4194304); a larger body gets 413",
    )
    p.add_argument(
        "--max-streams",
        type=_positive_int,
        metavar="N",
        help="with --http, open GET/SSE streams in the process (default: 512); when full, the "
        "oldest stream of the address holding the most is closed for a new one (its client "
        "reconnects), else 503 with Retry-After",
    )
    p.add_argument(
        "--max-posts-per-session",
        type=_positive_int,
        metavar="N",
        help="with --http, POSTs of one session whose answers are still open (default: 64); "
        "past it, 429 (agents that fan out many calls at once may need more)",
    )
    p.add_argument(
        "--max-streams-per-client",
        type=_positive_int,
        metavar="N",
        help="with --http, open GET/SSE streams of one client address (default: 64); past it, "
        "429 with Retry-After",
    )
    p.add_argument(
        "--stream-idle-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, a GET/SSE stream that sent nothing for this long is closed after an "
        "SSE retry hint, and the client reconnects (default: 300); an HTTP+SSE (--legacy-sse) "
        "session without messages or POSTs for this long ends",
    )
    p.add_argument(
        "--max-queued",
        type=_count,
        metavar="N",
        help="requests of one session that may wait for a free handler slot (default: 1024 over "
        "--http, 64 (max_in_flight) over stdio and --ws); past it an HTTP request (a batch member, "
        "say) is answered at once with JSON-RPC error -32603 and the session goes on, while stdio "
        "and --ws stop reading until a slot frees",
    )
    p.add_argument(
        "--max-queued-total",
        type=_count,
        metavar="N",
        help="requests of all sessions together that may wait for a free handler slot "
        "(default: 16384); past it a request is answered at once with JSON-RPC error -32603",
    )
    p.add_argument(
        "--reader-relay",
        action="store_true",
        help="over stdio and --ws, run a request read last in the task that read it, stepping its "
        "handler by hand through trio's private protocol: less CPU per sequential call, off by "
        'default (docs/engine.md, "Reader relay")',
    )
    p.add_argument(
        "--event-store-bytes",
        type=_count,
        metavar="N",
        help="with --http, bytes of SSE events kept per session for clients resuming a stream "
        "(default: 1048576; 64 MiB for all sessions); past it the oldest are dropped, and a "
        "Last-Event-ID naming a dropped event resumes nothing",
    )
    p.add_argument(
        "--legacy-sse",
        action="store_true",
        help="with --http, also serve the 2024-11-05 HTTP+SSE transport for old clients "
        "(GET /sse, POST /messages)",
    )
    for flag, (metavar, text) in _AUTH_FLAGS.items():
        p.add_argument(flag, metavar=metavar, help=text)
    p.add_argument(
        "--auth-scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope every request needs (repeatable)",
    )
    add_deploy_arguments(p)
    add_worker_arguments(p)
    p.add_argument("--version", action="version", version=VERSION)
    p.set_defaults(func=partial(_cmd_serve, p))
    # Last: every flag above is also MCP_TRIO_<FLAG> and a key of --config FILE.
    layered(p)


#: The flags naming where to listen instead of stdio -> what is served there.
_ADDRESS_FLAGS = {
    "--http": "Streamable HTTP",
    "--ws": "MCP over WebSocket (a custom transport, subprotocol 'mcp')",
}
_URL_NOTE = " (port 0 picks a free port; the URL is printed to stderr)"
_AUTH_FLAGS = {
    "--auth-issuer": (
        "URL",
        "with --http or --ws, require OAuth access tokens (JWTs) from this authorization server; "
        "serves the protected resource metadata (see docs/authorization.md)",
    ),
    "--auth-jwks": ("URL", "its signing keys (default: its metadata's jwks_uri)"),
    "--auth-resource": (
        "URL",
        "this server's resource identifier, the tokens' audience (default: the endpoint URL)",
    ),
}


def _add_door_arguments(p: Any) -> None:
    """The connection limits of the HTTP front doors (both of them)."""
    p.add_argument(
        "--max-connections",
        type=_positive_int,
        metavar="N",
        help=f"with --http or --ws, connections at once (default: {DEFAULT_MAX_CONNECTIONS}); "
        "further clients wait in the listen backlog until one ends",
    )
    p.add_argument(
        "--max-connections-per-client",
        type=_positive_int,
        metavar="N",
        help="with --http or --ws, connections at once from one IP address (default: a quarter "
        "of --max-connections); further ones are closed at once",
    )
    p.add_argument(
        "--header-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, a request head must arrive whole within this time of the accept "
        "(or of its first byte on a kept-alive connection) "
        f"(default: {DEFAULT_HEADER_TIMEOUT:g}); else 408 and the connection is closed",
    )
    p.add_argument(
        "--keepalive-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, an idle keep-alive connection is closed after this long "
        f"(default: {DEFAULT_KEEPALIVE_TIMEOUT:g}; the hypercorn door uses the smaller of this "
        "and --header-timeout)",
    )
    p.add_argument(
        "--request-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, a request body must arrive whole within this time of its head "
        f"(default: {DEFAULT_REQUEST_TIMEOUT:g}); else 408 and the connection is closed",
    )
    p.add_argument(
        "--write-timeout",
        type=_positive_float,
        metavar="SECONDS",
        help="with --http, a write to a client that does not read waits this long at most "
        f"(default: {DEFAULT_WRITE_TIMEOUT:g}); then the response is abandoned and the connection closed",
    )


_DOOR_OPTIONS = ConnectionLimits.names()


def _door_options(args: argparse.Namespace) -> dict[str, Any]:
    """The front door's connection limits given on the command line, as serve_http keywords."""
    return {name: getattr(args, name) for name in _DOOR_OPTIONS if getattr(args, name) is not None}


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


class _ServeError(Exception):
    """A target that cannot be served; the message is for the user."""


_DRIVE = re.compile(r"[A-Za-z]:[\\/]")


def _split_target(target: str) -> tuple[str, str | None]:
    """``"where:attr"`` -> ``("where", "attr")``; ``"where"`` -> ``("where", None)``.  A Windows
    drive (``C:\\srv\\app.py``, ``C:/srv/app.py``) is part of ``where``, not an attribute."""
    drive = 2 if _DRIVE.match(target) else 0
    where, sep, attribute = target[drive:].rpartition(":")
    if not sep:
        return target, None
    where = target[:drive] + where
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
    from ..server import Server

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
    else the only Server instance among the module's globals.  A ``.toml`` or
    ``.json`` file is a gateway's configuration (:func:`mcp_trio.proxy.load_gateway`).

    Raises:
        _ServeError: the target cannot be found or holds no single Server.
        Exception: whatever importing the module raised.
    """
    where, attribute = _split_target(target)
    if attribute is None and where.endswith((".toml", ".json")):  # (a gateway's configuration)
        from ..proxy import ConfigError, load_gateway

        try:
            return load_gateway(where)
        except ConfigError as exc:
            raise _ServeError(str(exc)) from None
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


def _fit_open_files(options: dict[str, Any]) -> None:
    """Raise the process's limit on open files to its hard limit, and lower the door's
    ``max_connections`` in ``options`` to what it allows (with a warning)."""
    wanted = options.get("max_connections", DEFAULT_MAX_CONNECTIONS)
    allowed = connections_within_open_files(wanted, raise_open_files_limit())
    if allowed < wanted:
        logging.getLogger("mcp_trio.serve").warning(
            "--max-connections %d is more than this process's limit on open files allows "
            "(ulimit -n, raised to its hard limit); serving at most %d connections at once",
            wanted,
            allowed,
        )
        options["max_connections"] = allowed


async def _serve_http(
    server: Any, host: str, port: int, args: argparse.Namespace, shutdown: GracefulShutdown
) -> None:
    """Serve --http until cancelled, printing the URLs."""
    import trio

    options = {**_session_options(args), **_queue_options(args, http=True), **_door_options(args)}
    _fit_open_files(options)
    options.update(auth=_resource_server(args), shutdown=shutdown, **guard_options(args), **tls_options(args))
    if args.metrics_path is not None:
        options["metrics_path"] = args.metrics_path
        if args.metrics_token:
            options["metrics_token"] = args.metrics_token
    if args.forwarded_allow_ips:
        options["forwarded_allow_ips"] = args.forwarded_allow_ips
    if args.proxy_protocol_allow_ips:
        options["proxy_protocol_allow_ips"] = args.proxy_protocol_allow_ips
    if args.access_log:
        options["access_log"] = True  # (a line per HTTP request too, on mcp_trio.access.http)
    path = args.path
    serve = partial(
        server.serve_http, host, port, path=path, front_door=args.front_door, stateless=args.stateless
    )
    async with open_store_options(args) as store, trio.open_nursery() as nursery:
        options.update(store, reuse_port=args.worker_of is not None)
        urls = await nursery.start(partial(serve, legacy_sse=args.legacy_sse, **options))
        if args.worker_of is not None:  # (the supervisor announces)
            await worker_serving(args, urls, nursery)
            return
        for url in urls:
            _announce(f"Streamable HTTP at {url} ({args.front_door})")
            if args.legacy_sse:
                base = url[: len(url) - len(path)] if path and url.endswith(path) else url
                _announce(f"HTTP+SSE (2024-11-05) at {base}/sse")


async def _serve_websocket(
    server: Any, host: str, port: int, args: argparse.Namespace, shutdown: GracefulShutdown
) -> None:
    """Serve --ws until cancelled, printing the URLs."""
    import trio

    limits = {k: v for k, v in _door_options(args).items() if k.startswith("max_connections")}
    _fit_open_files(limits)
    options = {**guard_options(args), **tls_options(args), **limits}
    serve = partial(server.serve_websocket, host, port, path=args.path, auth=_resource_server(args))
    async with trio.open_nursery() as nursery:
        for url in await nursery.start(partial(serve, shutdown=shutdown, **options)):
            _announce(f"WebSocket at {url}")


def _announce(line: str) -> None:
    print(f"mcp-trio serve: {line}", file=sys.stderr, flush=True)


def _resource_server(args: argparse.Namespace) -> Any:
    """With --auth-issuer: the endpoint accepts only JWT access tokens of that issuer."""
    if args.auth_issuer is None:
        return None
    from ..auth.server import JWTVerifier, ResourceServer

    verifier = JWTVerifier(args.auth_jwks, issuer=args.auth_issuer)
    return ResourceServer(
        args.auth_resource,
        authorization_servers=[args.auth_issuer],
        verifier=verifier,
        required_scopes=args.auth_scope,
    )


#: Endpoint flags of ``serve --http`` -> the StreamableHTTP keyword each sets.
_ENDPOINT_OPTIONS = {
    "max_sessions": "max_sessions",
    "session_idle_timeout": "idle_timeout",
    "max_sessions_per_client": "max_sessions_per_client",
    "max_body_size": "max_body_size",
    "max_streams": "max_streams_total",
    "max_posts_per_session": "max_streams",
    "max_streams_per_client": "max_streams_per_client",
    "stream_idle_timeout": "stream_idle_timeout",
}


def _session_options(args: argparse.Namespace) -> dict[str, Any]:
    """The endpoint flags given (--max-sessions, --max-streams ...), as StreamableHTTP keywords."""
    given = {flag: getattr(args, flag) for flag in _ENDPOINT_OPTIONS}
    return {_ENDPOINT_OPTIONS[flag]: value for flag, value in given.items() if value is not None}


def _queue_options(args: argparse.Namespace, http: bool) -> dict[str, Any]:
    """--max-queued, --max-queued-total (and with --http --event-store-bytes), as keywords of
    StreamableHTTP (``http``) or of each Session (only those given)."""
    names = ["max_queued", "max_queued_total"] + (["event_store_bytes"] if http else [])
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _cmd_serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import trio

    from ..middleware._shipped import ACCESS_LOGGER, AccessLog

    try:
        resolve(parser, args)
    except ConfigError as exc:
        print(f"mcp-trio serve: error: {exc}", file=sys.stderr)
        return 2
    if wants_supervisor(args):
        try:
            check_workers(args)
            host, port = _parse_host_port(str(args.http))
        except ConfigError as exc:
            print(f"mcp-trio serve: error: {exc}", file=sys.stderr)
            return 2
        return supervise(parser, args, host, port)
    # Log records go to stderr (stdout is the protocol), for as long as the command runs.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    saved_level = root.level
    access = logging.getLogger(ACCESS_LOGGER)
    saved_access = access.level
    root.addHandler(handler)
    root.setLevel(args.log_level.upper())
    try:
        try:
            serve = _serving(args)
            if getattr(args, "whole_process", False):
                run_on_allocator(args.allocator)
            server = load_server(args.target)
            apply_state_key(server, args)
        except (_ServeError, ConfigError) as exc:
            print(f"mcp-trio serve: error: {exc}", file=sys.stderr)
            return 2
        except Exception:
            print(f"mcp-trio serve: error: importing {args.target} failed:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            return 1
        if args.http is None:
            server.session_options.update(_queue_options(args, http=False))
        if args.reader_relay:
            server.session_options["reader_relay"] = True
        if args.access_log:
            server.add_middleware(AccessLog(), outermost=True)  # (it sees the refusals of the others)
            access.setLevel(logging.INFO)
        settle_heap()  # (after the import: what it built is never garbage)
        try:
            trio.run(
                serve_until_signalled, serve_tidying_after_bursts(partial(serve, server)), args.grace_period
            )
        except KeyboardInterrupt:  # (before the signals were taken over)
            return 130
        except BaseExceptionGroup as group:
            failed, rest = group.split(OSError)  # cannot listen: the address is taken, say
            if rest is not None or failed is None:
                raise
            reasons = "; ".join(sorted({str(exc) for exc in _leaves(failed)}))
            print(f"mcp-trio serve: error: cannot serve: {reasons}", file=sys.stderr)
            return 1
        return 0
    finally:
        root.removeHandler(handler)
        root.setLevel(saved_level)
        access.setLevel(saved_access)


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    return [
        leaf
        for exc in group.exceptions
        for leaf in (_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    ]


def _serving(args: argparse.Namespace) -> Callable[[Any, GracefulShutdown], Awaitable[None]]:
    """What serves the server (called with it and the shutdown): stdio, --http or --ws."""
    if args.ws is not None and args.http is not None:
        raise _ServeError("use --http or --ws, not both")
    if args.metrics_token is not None and (args.metrics_path is None or not args.metrics_token):
        raise _ServeError("--metrics-token needs --metrics-path, and must not be empty")
    for flag in ("forwarded_allow_ips", "proxy_protocol_allow_ips"):
        if getattr(args, flag) is not None:
            from ..transports.http.doors._forwarded import TrustedProxies

            try:
                TrustedProxies(getattr(args, flag))
            except ValueError as exc:
                option = "--" + flag.replace("_", "-")
                raise _ServeError(str(exc).replace("forwarded_allow_ips", option)) from None
    if args.proxy_protocol_allow_ips is not None and (args.http is None or args.front_door == "hypercorn"):
        raise _ServeError("--proxy-protocol-allow-ips needs --http and a lean door (h11 or httptools)")
    check_workers(args)
    if args.ws is None and args.http is None:
        return lambda server, shutdown: server.serve_stdio(shutdown=shutdown)
    tls_options(args)  # (checked before the import)
    serve = _serve_http if args.ws is None else _serve_websocket
    address = str(args.http if args.ws is None else args.ws)
    host, port = _parse_host_port(address, "--http" if args.ws is None else "--ws")
    return lambda server, shutdown: serve(server, host, port, args, shutdown)
