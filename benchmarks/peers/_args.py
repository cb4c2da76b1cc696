"""Command line shared by the peers: ``stdio`` or ``http PORT [--json]``."""

from __future__ import annotations

import argparse
import sys


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="transport", required=True)
    sub.add_parser("stdio")
    http = sub.add_parser("http")
    http.add_argument("port", type=int)
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--json", action="store_true", help="JSON bodies instead of SSE streams")
    return parser.parse_args(sys.argv[1:] if argv is None else argv)
