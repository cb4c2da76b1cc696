"""The peer's notifications that user handlers listen to.

Rules: a notification nobody listens to is dropped as it is read; the others run their
handler one at a time, in arrival order, in one task of the session started with the first
of them (an idle session holds no task for them); a handler's exception is logged and the
session goes on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import trio

from .._core import NotificationReceived
from ._common import log

if TYPE_CHECKING:
    from ._session import Session

__all__ = ["NotificationHandler", "Notifications"]

NotificationHandler = Callable[["Session", str, Any], Awaitable[None]]


class Notifications:
    """The handlers of the peer's notifications, by method, and their queue."""

    __slots__ = ("handlers", "size", "_send")

    def __init__(self, handlers: Mapping[str, NotificationHandler] | None, size: int) -> None:
        #: The handlers by method (the session's ``notification_handlers``: change it freely).
        self.handlers: dict[str, NotificationHandler] = dict(handlers or {})
        self.size = size
        self._send: trio.MemorySendChannel[NotificationReceived] | None = None  # made on the first one

    async def deliver(self, event: NotificationReceived, session: Session, tasks: trio.Nursery) -> None:
        """Queue ``event`` for its handler, if it has one (waits while the queue is full)."""
        if event.method not in self.handlers:
            return  # nobody listens: nothing to queue
        if self._send is None:  # made on the first one: idle sessions stay small
            self._send, received = trio.open_memory_channel[NotificationReceived](self.size)
            tasks.start_soon(self._loop, received, session)
        await self._send.send(event)

    async def _loop(
        self, received: trio.MemoryReceiveChannel[NotificationReceived], session: Session
    ) -> None:
        async for event in received:
            handler = self.handlers.get(event.method)
            if handler is None:
                continue
            try:
                await handler(session, event.method, event.params)
            except Exception:
                log.exception("notification handler for %s failed", event.method)
