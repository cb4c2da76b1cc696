"""A server's lifespan: what it opens for as long as it serves (a database pool, an HTTP
client), once per process, and the value handlers reach with ``ctx.lifespan_value(Type)``.

``Server(lifespan=factory)`` takes a function of the server returning an async context
manager (an ``@asynccontextmanager`` generator, typically).  Every way of serving holds the
lifespan while it runs (``serve_http``, ``serve_stdio``, ``serve_websocket``, and
``serve_session`` for a session served on its own, as ``connect_server`` does): the first to
start enters it, before anything is served, and the last to end leaves it, after its last
request.  Ways of serving that overlap share one entry, so a process serving HTTP and WebSocket
at once opens its pool once; under ``mcp-trio serve --workers`` each worker process has its own.

The context manager runs in a task of its own (a trio system task), not in the task of
whichever way of serving entered it: what it opens (a nursery, a cancel scope) may outlive
that one, and its exit runs when the last user leaves, which waits for it (at most
:data:`EXIT_TIMEOUT` seconds).  An exception entering it is raised to every way of serving
waiting for it, which then serves nothing; one leaving it, to the last user.

The lifespans of the servers mounted in a server (``server.mount``) are entered inside its own,
once it is entered, and left before it is.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

import trio

if TYPE_CHECKING:
    from ._server import Server

__all__ = ["EXIT_TIMEOUT", "Lifespan", "LifespanFactory"]

log = logging.getLogger("mcp_trio.server")

T = TypeVar("T")

#: What ``Server(lifespan=...)`` takes: a function of the server giving an async context manager.
LifespanFactory = Callable[["Server"], AbstractAsyncContextManager[object]]

#: Seconds the last user waits for the lifespan's exit before cancelling it.
EXIT_TIMEOUT = 30.0


class _Run:
    """One entry into the lifespan, from its start to its exit."""

    __slots__ = ("users", "value", "error", "entered", "leave", "left", "scope")

    def __init__(self) -> None:
        self.users = 1
        self.value: object = None
        #: What entering (``entered`` set, nothing to use) or leaving it raised.
        self.error: Exception | None = None
        self.entered = trio.Event()
        self.leave = trio.Event()
        self.left = trio.Event()
        self.scope = trio.CancelScope()


class Lifespan:
    """The lifespan of a server: entered by the first way of serving, left by the last."""

    __slots__ = ("_factory", "_server", "_run")

    def __init__(self, factory: LifespanFactory | None, server: Server) -> None:
        if factory is not None and not callable(factory):
            raise TypeError(
                "lifespan must be a function of the server returning an async context manager "
                f"(an @asynccontextmanager function), not {type(factory).__name__}"
            )
        self._factory = factory
        self._server = server
        self._run: _Run | None = None

    def value(self, kind: type[T]) -> T:
        """What the lifespan's ``async with`` gave, checked to be a ``kind``."""
        if self._factory is None:
            raise LookupError("this server has no lifespan: give it one with Server(lifespan=...)")
        run = self._run
        if run is None or not run.entered.is_set():
            raise LookupError("the server's lifespan is not running (it runs while the server serves)")
        value = run.value
        if not isinstance(value, kind):
            raise TypeError(f"the server's lifespan gave a {type(value).__name__}, not a {kind.__name__}")
        return value

    def held(self) -> _Held:
        """An async context manager holding the lifespan while a way of serving runs."""
        return _Held(self)

    async def _enter(self) -> _Run:
        run = self._run
        while run is not None and run.leave.is_set():  # (still leaving: a new run starts after)
            await run.left.wait()
            run = self._run
        if run is None:
            run = self._run = _Run()
            trio.lowlevel.spawn_system_task(self._hold, run, name="mcp_trio.server.lifespan")
        else:
            run.users += 1
        try:
            await run.entered.wait()
        except BaseException:
            await self._exit(run)
            raise
        if run.left.is_set():  # (it failed to start)
            await self._exit(run)
            assert run.error is not None
            raise run.error
        return run

    async def _exit(self, run: _Run) -> None:
        run.users -= 1
        if run.users:
            return
        run.leave.set()
        with trio.CancelScope(shield=True):
            with trio.move_on_after(EXIT_TIMEOUT):
                await run.left.wait()
            if not run.left.is_set():
                log.error(
                    "the server's lifespan did not end %s s after its last user: cancelled", EXIT_TIMEOUT
                )
                run.scope.cancel()
                await run.left.wait()

    @property
    def needed(self) -> bool:
        """Whether there is anything to enter: a lifespan of its own, or servers mounted in it."""
        return self._factory is not None or self._server._mounts.any()

    async def _hold(self, run: _Run) -> None:
        try:
            with run.scope:
                own = self._factory(self._server) if self._factory is not None else nullcontext(None)
                # (the lifespans of the servers mounted in this one nest inside its own)
                async with own as value, self._server._mounts.lifespans_held():
                    run.value = value
                    run.entered.set()
                    await run.leave.wait()
        except Exception as exc:  # (raised to who waits: a system task's error would end the run)
            run.error = exc
        finally:
            if self._run is run:
                self._run = None
            run.entered.set()
            run.left.set()


class _Held:
    """``async with lifespan.held():`` (a class, not a generator: it wraps every session)."""

    __slots__ = ("_lifespan", "_run")

    def __init__(self, lifespan: Lifespan) -> None:
        self._lifespan = lifespan
        self._run: _Run | None = None

    async def __aenter__(self) -> None:
        if self._lifespan.needed:
            self._run = await self._lifespan._enter()

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        run = self._run
        if run is not None:
            await self._lifespan._exit(run)
            if run.error is not None and run.left.is_set() and not run.users:
                log.error("the server's lifespan failed as it ended", exc_info=run.error)
                if exc is None or _cancelled(exc):  # (else: what ended the serving, which goes on)
                    raise run.error


def _cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is only a cancellation (a group of nothing else too)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return isinstance(exc, trio.Cancelled)
