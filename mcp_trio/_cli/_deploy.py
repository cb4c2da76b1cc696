"""The flags of ``mcp-trio serve`` that running it in production takes: the hosts
and origins allowed (DNS rebinding protection), TLS, the grace period of a
graceful stop (see :mod:`._shutdown`)."""

from __future__ import annotations

import argparse
import ssl
from typing import Any

from ._config import ConfigError
from ._tuning import ALLOCATORS

__all__ = ["add_deploy_arguments", "guard_options", "non_negative_float", "tls_options"]


def add_deploy_arguments(p: Any) -> None:
    """What running it in production takes: allowed hosts, TLS, a graceful stop."""
    p.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="HOST",
        help="with --http or --ws, also accept requests whose Host header names HOST (on any port; "
        "HOST:PORT for that port only) besides 127.0.0.1, localhost and [::1] (repeatable; '*' "
        "accepts any Host: only behind a proxy that checks it). Others get 421 (DNS rebinding "
        "protection), logged once per value",
    )
    p.add_argument(
        "--allowed-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="with --http or --ws, accept requests carrying this Origin header (scheme://host[:port]; "
        "repeatable); default: the origins of the allowed hosts on the port of the request. Others "
        "get 403, logged once per value",
    )
    p.add_argument(
        "--certfile",
        metavar="FILE",
        help="with --http or --ws, serve TLS (https://, wss://) with this PEM certificate chain",
    )
    p.add_argument(
        "--keyfile", metavar="FILE", help="the private key of --certfile (PEM; default: in --certfile)"
    )
    p.add_argument(
        "--grace-period",
        type=non_negative_float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGINT or SIGTERM, stop accepting and give the requests in flight this long to "
        "finish before cancelling them (default: 10); a second signal stops at once",
    )
    p.add_argument(
        "--allocator",
        choices=ALLOCATORS,
        default="auto",
        help="the memory allocator: 'auto' (default) keeps the one the interpreter started with "
        "(set PYTHONMALLOC=malloc in the environment for the C library's) and starts the workers "
        "of --workers on the C library's on Linux; 'system' re-executes serve on the C library's "
        "(memory freed after a burst of traffic goes back to the system; a second interpreter "
        "start); 'pymalloc' keeps CPython's (a little faster, keeps arenas a live object pins); "
        "a PYTHONMALLOC in the environment wins",
    )


def non_negative_float(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def guard_options(args: argparse.Namespace) -> dict[str, Any]:
    """--allowed-host / --allowed-origin as the endpoint's keywords (only those given)."""
    from ..transports.http.server import DEFAULT_ALLOWED_HOSTS

    options: dict[str, Any] = {}
    if args.allowed_host:
        hosts = args.allowed_host
        options["allowed_hosts"] = None if "*" in hosts else [*DEFAULT_ALLOWED_HOSTS, *hosts]
    if args.allowed_origin:
        options["allowed_origins"] = list(args.allowed_origin)
    return options


def tls_options(args: argparse.Namespace) -> dict[str, Any]:
    """--certfile / --keyfile as the keywords of serve_http and serve_websocket (checked)."""
    if args.certfile is None:
        if args.keyfile is not None:
            raise ConfigError("--keyfile needs --certfile")
        return {}
    from ..transports.http.server import server_ssl_context

    try:
        server_ssl_context(args.certfile, args.keyfile)  # (so that a bad file is said before serving)
    except (OSError, ssl.SSLError) as exc:
        files = args.certfile if args.keyfile is None else f"{args.certfile} and {args.keyfile}"
        raise ConfigError(f"--certfile/--keyfile: cannot load {files}: {exc}") from None
    return {"certfile": args.certfile, "keyfile": args.keyfile}
