"""What mcp-trio serve does to its own process: short GC pauses.

So that a busy server answers every client promptly, the garbage collector's full passes are
kept short.

CPython's full collection walks every tracked object of the process.  A server that imported
its tools, the generated types and the transports holds some 100,000 objects that are never
garbage; under load (hundreds of sessions and connections) a full pass walked them all again
every few seconds, tens of milliseconds each time with every client waiting.
:func:`settle_heap` runs once, after the server is loaded and before it serves: it collects,
then moves what is left into the permanent generation (:func:`gc.freeze`), so that later
collections walk only what the server built since.  The thresholds stay CPython's.
"""

from __future__ import annotations

import gc

__all__ = ["settle_heap"]


def settle_heap() -> None:
    """Collect, then freeze what startup built (see the module's docstring)."""
    gc.collect()
    gc.freeze()
