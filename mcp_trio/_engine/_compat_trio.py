"""Every use of trio's private protocol, in one place (``trio>=0.30,<0.36`` in pyproject.toml;
tests/engine/test_compat_trio.py exercises it against the installed trio and fails loudly when
trio changes shape).

The reader relay (:mod:`._handlers`) runs a request's handler in the reader's own task until the
handler first waits. That means stepping the handler's coroutine by hand and passing on to trio
whatever it yields (trio's traps, a private protocol between ``trio.lowlevel`` and the run loop)
and whatever trio sends or throws back: what ``await coro`` does, with a hook at the first wait.
"""

from __future__ import annotations

import contextvars
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, TypeVar

__all__ = ["until_it_waits"]

_T = TypeVar("_T")


@types.coroutine
def until_it_waits(
    coro: Coroutine[Any, Any, _T], context: contextvars.Context, on_wait: Callable[[], None]
) -> Generator[Any, Any, tuple[bool, _T]]:
    """Run ``coro`` to its end, each step in ``context``, and return (whether
    it ever yielded to trio, its result).  The first time it yields (a
    checkpoint, a wait), call ``on_wait()``, then go on exactly as ``await
    coro`` would (what trio sends or throws in is passed on)."""
    send = coro.send
    try:
        value = context.run(send, None)
    except StopIteration as end:
        return False, end.value
    on_wait()
    while True:
        try:
            sent = yield value
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # trio resumes the task with an error (a Cancelled, say)
            try:
                value = context.run(coro.throw, exc)
            except StopIteration as end:
                return True, end.value
        else:
            try:
                value = context.run(send, sent)
            except StopIteration as end:
                return True, end.value
