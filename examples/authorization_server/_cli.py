"""The command line of the example authorization server
(``python -m examples.authorization_server``): its options, and ``main``, which
builds the server (pre-registering the ``--client``) and serves until interrupted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import trio

from ._common import AUTH_METHODS, OAuthError
from ._server import AuthorizationServer


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.authorization_server",
        description="Run the example OAuth 2.1 authorization server (state in memory; for tests and demos).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 (default) picks a free port")
    parser.add_argument("--issuer", help="issuer URL (default: the URL it listens on)")
    parser.add_argument("--scopes", help="space-separated scopes_supported (default: any)")
    parser.add_argument(
        "--resource", action="append", help="a resource tokens may be issued for (repeatable)"
    )
    parser.add_argument("--client", help="pre-register a client with this client_id")
    parser.add_argument("--client-secret", help="its secret (then it authenticates with client_secret_basic)")
    parser.add_argument(
        "--auth-method",
        choices=AUTH_METHODS,
        help="its token endpoint auth method (default: none, or basic with a secret)",
    )
    parser.add_argument("--redirect-uri", action="append", default=[], help="its redirect URI (repeatable)")
    parser.add_argument(
        "--auth-methods",
        help=f"comma-separated client authentication methods accepted (default: {','.join(AUTH_METHODS)})",
    )
    parser.add_argument(
        "--deny", action="store_true", help="deny every authorization request (access_denied)"
    )
    parser.add_argument("--algorithm", choices=("RS256", "ES256"), default="RS256")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: serve until interrupted."""
    args = _parser().parse_args(argv)
    try:
        server = _server_from(args)
    except (OAuthError, ValueError) as exc:
        print(f"error: {getattr(exc, 'description', exc)}", file=sys.stderr)
        return 2

    async def run() -> None:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(server.serve, args.host, args.port)
            print(f"authorization server at {url}", file=sys.stderr, flush=True)

    try:
        trio.run(run)
    except KeyboardInterrupt:
        pass
    return 0


def _server_from(args: argparse.Namespace) -> AuthorizationServer:
    server = AuthorizationServer(
        args.issuer,
        scopes_supported=args.scopes.split() if args.scopes else None,
        resources=args.resource,
        auto_approve=not args.deny,
        algorithm=args.algorithm,
        auth_methods=args.auth_methods.split(",") if args.auth_methods else AUTH_METHODS,
    )
    if args.client:
        method = args.auth_method or ("client_secret_basic" if args.client_secret else "none")
        grants = ["authorization_code", "refresh_token"] if args.redirect_uri else []
        if method != "none":
            grants.append("client_credentials")
        if not grants:
            raise ValueError("a public client needs --redirect-uri")
        server.register_client(
            client_id=args.client,
            client_secret=args.client_secret,
            redirect_uris=args.redirect_uri,
            token_endpoint_auth_method=method,
            grant_types=grants,
        )
    return server
