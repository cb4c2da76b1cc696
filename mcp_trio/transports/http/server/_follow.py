"""Following another worker's POST stream: a client resuming, with
``Last-Event-ID``, a stream that a handler on another worker still feeds.  The
worker the client reached keeps a local stream that the other forwards what it
sends to, over the bus (see ``_sharing.py``)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import trio

from .._bus import _Note
from ._streams import _CLOSE, _END, _HttpSession, _Stream
from ._worker_bus import WorkerBus

if TYPE_CHECKING:
    from ._endpoint import StreamableHTTP

_FOLLOWED = object()  # a followed stream's worker forwards what it sends from now on


class Following:
    """The POST streams of other workers that clients follow here, and this worker's streams
    that others follow (a collaborator of :class:`~._sharing.Sharing`): what goes between them
    goes over ``bus``."""

    __slots__ = ("endpoint", "bus")

    def __init__(self, endpoint: StreamableHTTP, bus: WorkerBus) -> None:
        self.endpoint = endpoint
        self.bus = bus

    def follow(self, session: _HttpSession, key: str) -> _Stream | None:
        """A local stream that another worker's POST stream ``key`` feeds from now
        on (a client resuming it here), or None: the stream is not another's."""
        worker = key.rpartition("@")[2]
        if "@" not in key or worker == self.bus.worker or session.id is None:
            return None
        stream = _Stream(key, set(), self.endpoint.stream_buffer)
        stream.followed = worker
        session.out.streams[key] = stream
        self.bus.post(worker, _Note("follow", session.id, key=key, origin=self.bus.worker))
        return stream

    @staticmethod
    async def followed(stream: _Stream) -> list[Any]:
        """Wait until the worker of the followed ``stream`` forwards what it sends
        (then nothing it sends is missing from the event store read after);
        what it forwarded meanwhile.  At most 5 seconds."""
        early: list[Any] = []
        with trio.move_on_after(5):
            while (item := await stream.next()) is not _FOLLOWED:
                early.append(item)
        return early

    def unfollow(self, session: _HttpSession, stream: _Stream) -> None:
        """The client following ``stream`` here left."""
        assert session.id is not None and stream.followed is not None
        session.out.streams.pop(stream.key, None)
        if not stream.complete:
            self.bus.post(stream.followed, _Note("unfollow", session.id, key=stream.key))

    def _forward(self, worker: str, session_id: str, key: str, item: Any) -> None:
        if item is _END:
            self.bus.post(worker, _Note("done", session_id, key=key))
        elif item is _CLOSE:
            self.bus.post(worker, _Note("close", session_id, key=key))
        else:
            event_id, data = item
            self.bus.post(worker, _Note("event", session_id, data, key=key, event_id=event_id or ""))

    def take(self, session: _HttpSession, note: _Note) -> None:
        """A note about a followed stream (follow, followed, unfollow, event, close, done)."""
        assert session.id is not None
        stream = session.out.streams.get(note.key)
        if note.kind == "follow":
            if note.origin is None:
                return
            if stream is None or stream.complete:
                self.bus.post(note.origin, _Note("done", session.id, key=note.key))
            else:
                stream.forward = partial(self._forward, note.origin, session.id, note.key)
                self.bus.post(note.origin, _Note("followed", session.id, key=note.key))
        elif stream is None:
            return
        elif note.kind == "unfollow":
            stream.forward = None
        elif note.kind == "event":
            stream.push((note.event_id or None, note.data))
        elif note.kind == "close":
            stream.push(_CLOSE)
        elif note.kind == "followed":
            stream.push(_FOLLOWED)
        elif note.kind == "done":
            stream.complete = True
            stream.push(_FOLLOWED)
            stream.push(_END)
