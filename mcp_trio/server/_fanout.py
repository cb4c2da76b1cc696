"""Resource updates and list changes told to every worker serving a server through one store.

With a store (``serve_http(store=...)``), each worker's ``Server`` publishes on the store's
bus what its sessions everywhere must hear, and every worker tells its own:

* ``Server.notify_resource_updated(uri)`` on one worker reaches the sessions (and
  ``subscriptions/listen`` streams) subscribed to ``uri`` on every worker;
* a change of the tools, prompts or resources (``add_tool`` ...) announces its
  ``notifications/*/list_changed`` on every worker: at once on its own, within
  ``COALESCE`` seconds on the others.  The same change made on every worker (each
  reacting to one source of truth) is announced once: a worker announces a list's
  change from another only if it announced none of that list within ``COALESCE``
  seconds, before or after.

A session replicated on several workers hears each of these once, from the worker that
holds (or last held) its GET stream, else the one that answered its ``initialize``
(``announces`` of its HTTP session); if that worker is gone (nobody listens on its bus
channel), the first other worker to find out takes its place (``adopted``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import msgspec
import trio

from .._engine._session import Session
from ..store import Store, StoreError
from ..transports._base import SharedSession
from ..transports.http._bus import listen

log = logging.getLogger("mcp_trio.server")

_CHANNEL = "mcp-trio:resources"
_OUTBOX = 256  # list changes waiting to be published, at most
COALESCE = 0.1  # seconds within which the announcements of one list's change are one


def announces(session: Session) -> bool:
    """Whether this worker tells ``session`` of list changes and resource updates (a session
    not shared by workers: always)."""
    channel = session.channel
    return channel.announces() if isinstance(channel, SharedSession) else True


async def adopted(session: Session) -> bool:
    """Whether the worker announcing to ``session`` is gone and this one took its place."""
    channel = session.channel
    return await channel.adopted() if isinstance(channel, SharedSession) else False


class _Updated(msgspec.Struct, omit_defaults=True):
    origin: str  # the worker that published it
    uri: str = ""  # a resource update: the resource
    method: str = ""  # a list change: its notification's method


_decode = msgspec.json.Decoder(_Updated).decode


class Fanout:
    """One worker's side of the resource updates and list changes shared through ``store``."""

    def __init__(
        self,
        store: Store,
        worker_id: str,
        updated_here: Callable[[str], Awaitable[None]],
        list_changed_here: Callable[[str], None],
    ) -> None:
        self.store = store
        self.worker = worker_id
        self.updated_here = updated_here
        self.list_changed_here = list_changed_here
        self._pending: set[str] = set()  # the lists whose change elsewhere is about to be announced here
        self._announced: dict[str, float] = {}  # when each list's change was last announced here
        self._nursery: trio.Nursery | None = None
        self._outbox_send, self._outbox = trio.open_memory_channel[bytes](_OUTBOX)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Tell this worker's sessions what the others publish, and publish this
        worker's list changes, until cancelled."""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._publisher)
            await nursery.start(self._listen)
            self._nursery = nursery
            task_status.started()

    async def _listen(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await listen(
            self.store, (_CHANNEL,), self._take, f"the fan-out of {self.worker}", task_status=task_status
        )

    async def publish(self, uri: str) -> None:
        """Tell the other workers that ``uri`` changed."""
        try:
            await self.store.bus.publish(_CHANNEL, msgspec.json.encode(_Updated(self.worker, uri=uri)))
        except StoreError as exc:
            log.warning("the other workers were not told that %s changed: %s", uri, exc)

    def list_changed(self, method: str) -> None:
        """Announce ``method`` (``notifications/tools/list_changed`` ...) here at once,
        and on every other worker."""
        try:
            self._outbox_send.send_nowait(msgspec.json.encode(_Updated(self.worker, method=method)))
        except trio.WouldBlock:
            log.warning("the other workers were not told of %s: too many changes at once", method)
        self._announce_here(method)

    def _announce_here(self, method: str) -> None:
        self._pending.discard(method)  # (a change elsewhere waiting is announced by this)
        self._announced[method] = trio.current_time()
        self.list_changed_here(method)

    def _changed_elsewhere(self, method: str) -> None:
        if method in self._pending or self._nursery is None:
            return
        if trio.current_time() - self._announced.get(method, -math.inf) < COALESCE:
            return  # announced here just now
        self._pending.add(method)
        self._nursery.start_soon(self._announce_later, method)

    async def _announce_later(self, method: str) -> None:
        await trio.sleep(COALESCE)
        if method in self._pending:
            self._announce_here(method)

    async def _publisher(self) -> None:
        async for data in self._outbox:
            try:
                await self.store.bus.publish(_CHANNEL, data)
            except StoreError as exc:
                log.warning("the other workers were not told of a list change: %s", exc)

    async def _take(self, data: bytes) -> None:
        try:
            updated = _decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        if updated.origin == self.worker:
            return
        if updated.method:
            self._changed_elsewhere(updated.method)
        elif updated.uri:
            await self.updated_here(updated.uri)
