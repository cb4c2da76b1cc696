"""Resource updates told to every worker serving a server through one store.

``Server.notify_resource_updated(uri)`` on one worker reaches the sessions
(and ``subscriptions/listen`` streams) subscribed to ``uri`` on every worker:
with a store (``serve_http(store=...)``) it is also published on the store's
bus, and each other worker tells its own subscribers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import msgspec
import trio

from ..store import Store, StoreError
from ..transports.http._shared import listen

log = logging.getLogger("mcp_trio.server")

_CHANNEL = "mcp-trio:resources"


class _Updated(msgspec.Struct):
    origin: str  # the worker that published it
    uri: str


_decode = msgspec.json.Decoder(_Updated).decode


class ResourceFanout:
    """One worker's side of the resource updates shared through ``store``."""

    def __init__(self, store: Store, worker_id: str, updated_here: Callable[[str], Awaitable[None]]) -> None:
        self.store = store
        self.worker = worker_id
        self.updated_here = updated_here

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Tell this worker's subscribers what the others publish, until cancelled."""
        await listen(
            self.store, (_CHANNEL,), self._take, f"the resources of {self.worker}", task_status=task_status
        )

    async def publish(self, uri: str) -> None:
        """Tell the other workers that ``uri`` changed."""
        try:
            await self.store.bus.publish(_CHANNEL, msgspec.json.encode(_Updated(self.worker, uri)))
        except StoreError as exc:
            log.warning("the other workers were not told that %s changed: %s", uri, exc)

    async def _take(self, data: bytes) -> None:
        try:
            updated = _decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if updated.origin != self.worker:
            await self.updated_here(updated.uri)
