"""How ``mcp-trio serve`` stops on SIGINT and SIGTERM: gracefully, then at once.

On the first signal the server stops taking requests (the listening sockets
close: new clients are refused; requests on connections and sessions still
open are refused), the requests in flight get ``grace_period`` seconds to
finish and be answered, then those left are answered with an error
("cancelled by server shutdown"), cancelled, and every session ends.  One
line on stderr says so; the command exits 0.  A second signal during the
grace period cancels at once.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import trio

from ..server import GracefulShutdown

__all__ = ["serve_until_signalled"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_CUT_WRITE = 1.0  # seconds the answers of the requests cut at the end have to be written


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


async def serve_until_signalled(
    serve: Callable[[GracefulShutdown], Awaitable[None]], grace_period: float
) -> None:
    """Run ``serve(shutdown)`` until it returns, or until SIGINT / SIGTERM
    (see the module's docstring)."""
    shutdown = GracefulShutdown()
    first: int | None = None
    how = ""
    with trio.open_signal_receiver(*_SIGNALS) as signals:
        async with trio.open_nursery() as nursery:

            async def serving() -> None:
                await serve(shutdown)
                nursery.cancel_scope.cancel()  # (it ended on its own: stdin closed)

            nursery.start_soon(serving)
            first = await anext(signals)
            shutdown.stop()
            how = await _drain(shutdown, signals, grace_period)
            nursery.cancel_scope.cancel()
    if first is None:
        return
    counts = f"{_plural(shutdown.finished, 'request')} finished, {shutdown.cancelled} cancelled"
    if shutdown.refused:
        counts += f", {shutdown.refused} refused"
    line = f"mcp-trio serve: stopped after {signal.Signals(first).name}{how} ({counts})"
    print(line, file=sys.stderr, flush=True)


async def _drain(shutdown: GracefulShutdown, signals: AsyncIterator[int], grace_period: float) -> str:
    """Wait for the requests in flight, within ``grace_period`` and until a
    second signal; what cut the wait short, for the log line."""
    how = ""
    with trio.move_on_after(grace_period) as grace:
        async with trio.open_nursery() as waiting:

            async def second_signal() -> None:
                nonlocal how
                number = await anext(signals)
                how = f", then {signal.Signals(number).name}: not waiting"
                waiting.cancel_scope.cancel()

            waiting.start_soon(second_signal)
            await shutdown.wait_idle()
            waiting.cancel_scope.cancel()
    if grace.cancelled_caught:
        how = f": the grace period of {grace_period:g} s is over"
        shutdown.cut()  # the requests left are answered so, and given a moment to be written
        with trio.move_on_after(_CUT_WRITE):
            await shutdown.wait_idle()
    return how
