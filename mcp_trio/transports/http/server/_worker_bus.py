"""One worker's side of the bus the workers sharing sessions talk over (see ``_sharing.py``).

Rules it keeps:

* Notes leave in the order they are posted, from a bounded outbox (``_OUTBOX``): posting never
  waits, and a note that finds the outbox full is dropped with a warning.
* A worker hears its own channel and the one every worker hears.
* Whether a worker is gone (nobody listens on its channel) is asked once at a time per worker,
  and the answer is taken as known for ``_PROBE_EVERY`` seconds.
* A note that must be confirmed waits at most ``_ACK_WAIT`` seconds, and not for a worker found
  gone once its confirmation is late (``_PROBE_AFTER``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable

import msgspec
import trio

from ....store import Store, StoreError
from .._bus import _decode, _encode, _Note, _Outgoing, listen

__all__ = ["WorkerBus"]

log = logging.getLogger("mcp_trio.http")

_CHANNEL = "mcp-trio:http:"  # + worker id; + "*" for every worker
_OUTBOX = 4096  # bus messages waiting to be published by a worker, at most
_PROBE_EVERY = 1.0  # seconds: how long whether a worker is gone is taken as known
_GONE_KEPT = 1024  # workers whose presence is remembered, at most
_ACK_WAIT = 1.0  # seconds a worker waits for others to confirm a note (a session's end ...), at most
_PROBE_AFTER = 0.1  # seconds without a confirmation before asking whether its worker is gone
_PROBE = _encode(_Note("probe", ""))  # published to learn whether a worker listens; ignored


class WorkerBus:
    """What one worker publishes and hears, which workers it found gone, and the confirmations
    it waits for; the notes it hears go to ``take``."""

    __slots__ = (
        "store",
        "worker",
        "channel",
        "_take",
        "_awaiting",
        "_gone",
        "_probing",
        "_outbox_send",
        "_outbox",
    )

    def __init__(self, store: Store, worker: str, take: Callable[[_Note], Awaitable[None]]) -> None:
        self.store = store
        self.worker = worker
        self.channel = _CHANNEL + worker
        self._take = take
        self._awaiting: dict[tuple[str, str], tuple[set[str], trio.Event]] = {}  # (notes: by whom to confirm)
        self._gone: dict[str, tuple[float, bool]] = {}  # (workers found gone or not: when, whether)
        self._probing: dict[str, trio.Event] = {}
        self._outbox_send, self._outbox = trio.open_memory_channel[_Outgoing](_OUTBOX)

    async def listen(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        channels = (self.channel, _CHANNEL + "*")
        await listen(self.store, channels, self._take_data, f"worker {self.worker}", task_status=task_status)

    async def _take_data(self, data: bytes) -> None:
        try:
            note = _decode(data)
        except msgspec.DecodeError:
            log.warning("a bus message that is not a worker's was dropped")
            return
        await self._take(note)

    async def publisher(self) -> None:
        async for channel, data, unheard in self._outbox:
            try:
                heard = await self.store.bus.publish(channel, data)
            except StoreError as exc:
                log.warning("a message for another worker was lost: %s", exc)
                continue
            if not heard and unheard is not None:
                await unheard()

    def post(
        self, worker: str | None, note: _Note, unheard: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        """Publish ``note`` to ``worker`` (``None``: every worker), in order, without
        waiting; ``unheard()`` once published if no worker listens (``worker`` is gone)."""
        try:
            self._outbox_send.send_nowait((_CHANNEL + (worker or "*"), _encode(note), unheard))
        except trio.WouldBlock:
            log.warning("the bus outbox of worker %s is full: a %s message was lost", self.worker, note.kind)

    def mark_gone(self, worker: str) -> None:
        """``worker`` is known to be gone (a note to it found nobody listening)."""
        self._gone[worker] = (trio.current_time(), True)

    async def is_gone(self, holder: str) -> bool:
        """Whether nobody listens on ``holder``'s channel (one probe at a time per worker,
        and its answer taken as known for ``_PROBE_EVERY`` seconds)."""
        while (probing := self._probing.get(holder)) is not None:
            await probing.wait()  # (a change told to thousands of sessions: one probe)
        checked, gone = self._gone.get(holder, (-math.inf, False))
        if trio.current_time() - checked < _PROBE_EVERY:
            return gone
        probing = self._probing[holder] = trio.Event()
        try:
            gone = await self.store.bus.publish(_CHANNEL + holder, _PROBE) == 0
        except StoreError:
            return False
        finally:
            del self._probing[holder]
            probing.set()
        if len(self._gone) >= _GONE_KEPT:
            self._gone.clear()
        self._gone[holder] = (trio.current_time(), gone)
        return gone

    async def post_confirmed(self, note: _Note, workers: set[str]) -> None:
        """Post ``note`` to every worker; return once each of ``workers`` confirmed
        it (at most ``_ACK_WAIT`` seconds: a worker that died does not answer)."""
        key = (note.key or note.kind, note.session)
        waiting = workers - {self.worker}
        if not waiting or key in self._awaiting:  # (the same note already awaited: not again)
            self.post(None, note)
            return
        done = trio.Event()
        self._awaiting[key] = (waiting, done)
        self.post(None, note)
        try:
            with trio.move_on_after(_ACK_WAIT):
                async with trio.open_nursery() as nursery:
                    for worker in list(waiting):  # (a worker that died stays named in records)
                        nursery.start_soon(self._unless_gone, worker, waiting, done)
                    await done.wait()
                    nursery.cancel_scope.cancel()
        finally:
            del self._awaiting[key]
        if waiting:
            who = ", ".join(sorted(waiting))
            log.warning(
                "session %s: worker(s) %s did not confirm %r within %s s",
                note.session,
                who,
                note.kind,
                _ACK_WAIT,
            )

    async def _unless_gone(self, worker: str, waiting: set[str], done: trio.Event) -> None:
        """Stop waiting for ``worker``'s confirmation if, once a confirmation is late
        (``_PROBE_AFTER``), nobody listens on its channel: it died."""
        await trio.sleep(_PROBE_AFTER)
        if worker in waiting and await self.is_gone(worker):
            waiting.discard(worker)
            if not waiting:
                done.set()

    def confirmation(self, note: _Note) -> None:
        """An ``ack`` note: its sender confirmed what :meth:`post_confirmed` waits for."""
        awaiting = self._awaiting.get((note.key or "", note.session))
        if awaiting is not None and note.origin is not None:
            awaiting[0].discard(note.origin)
            if not awaiting[0]:
                awaiting[1].set()
