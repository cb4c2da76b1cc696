"""What the Python client targets share: the command line (``URL`` or ``--stdio CMD...``), the
calls made one after another (an error is printed, the next call goes on), and the exit status
(0 when the session ended normally, 1 when it broke)."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio

CALL_TIMEOUT = 10.0


async def call_each(calls: Sequence[tuple[str, Callable[[], Awaitable[Any]]]]) -> None:
    """Make each call within :data:`CALL_TIMEOUT`; an error is printed and the next call goes on."""
    for name, call in calls:
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                await call()
        except Exception as exc:  # the server's answer was refused: that is the client working
            print(f"{name}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)


def main(run: Callable[[list[str]], Awaitable[None]], program: str) -> int:
    """Run ``run(server)``, ``server`` being ``[URL]`` or a stdio server's command line."""
    args = sys.argv[1:]
    server = args[args.index("--stdio") + 1 :] if "--stdio" in args else args[-1:]
    if not server:
        print(f"usage: {program} SERVER_URL | --stdio SERVER_COMMAND...", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")  # (deprecation notes on stderr say nothing here)
    try:
        anyio.run(run, server)
    except BaseException as exc:  # the session broke: say how, exit 1
        print(f"session failed: {type(exc).__name__}: {exc!r}"[:2000], file=sys.stderr)
        return 1
    return 0
