"""Command line shared by the peers: ``stdio`` or ``http PORT [--json]``; with ``scaling``
(the peers that have them) also ``[--stateless] [--workers N]``."""

from __future__ import annotations

import argparse
import sys


def parse(argv: list[str] | None = None, *, scaling: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio")
    http = sub.add_parser("http")
    http.add_argument("port", type=int)
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--json", action="store_true", help="JSON bodies instead of SSE streams")
    if scaling:
        http.add_argument("--stateless", action="store_true", help="no sessions: every request stands alone")
        http.add_argument("--workers", type=int, default=1, help="server processes (default: 1)")
    return parser.parse_args(sys.argv[1:] if argv is None else argv)
