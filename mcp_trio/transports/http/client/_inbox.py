"""The incoming side of the Streamable HTTP client: what the engine receives, and who waits.

:class:`_Inbox` owns the buffer of incoming messages, the table of requests
waiting for their answer (request id -> its :class:`_Exchange`) and, once the
channel ended, why.  Every incoming message goes through :meth:`_Inbox.deliver`
(a batch is split), which takes an answer off the table and has the session
state learn from it (the negotiated version, the tools' header annotations).
A request whose exchange fails gets an error response for its id from here, so
that none hangs; when the channel ends, every waiting request fails at once.
"""

from __future__ import annotations

from collections.abc import Iterable

import trio
from msgspec import UNSET

from .... import _jsonrpc as rpc
from ..._base import Frame, RequestId
from ._channel import _Exchange
from ._http11 import Failure
from ._peek import _BAD_JSON
from ._session_state import _SessionState

_INCOMING_BUFFER = 64


class _Inbox:
    """Incoming messages, the requests waiting for their answer, and the channel's end."""

    __slots__ = ("_state", "_send", "_recv", "_pending", "ended")

    def __init__(self, state: _SessionState) -> None:
        self._state = state
        self._send, self._recv = trio.open_memory_channel[Frame](_INCOMING_BUFFER)
        self._pending: dict[RequestId, _Exchange] = {}
        self.ended: str | None = None  # why the channel ended, once it has

    async def receive(self) -> Frame:
        return await self._recv.receive()

    def close(self) -> None:
        self._send.close()
        self._recv.close()

    async def put(self, frame: Frame) -> None:
        try:
            await self._send.send(frame)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            pass

    # ------------------------------------------------------------ incoming

    async def deliver(self, data: bytes) -> None:
        """Hand one incoming message (or a batch, split) to the engine, learning from it.

        An empty batch goes whole: it is an invalid request the engine answers (-32600, id null)."""
        if data.lstrip()[:1] == b"[":
            try:
                items = rpc.decode_batch(data)
            except _BAD_JSON:
                await self.put(Frame(data))  # the engine answers the parse error
                return
            if not items:
                await self.put(Frame(data))
                return
            for raw in items:
                await self._deliver_one(bytes(raw))
            return
        await self._deliver_one(data)

    async def _deliver_one(self, data: bytes) -> None:
        try:
            env = rpc.decode_envelope(data)
        except _BAD_JSON:
            await self.put(Frame(data))
            return
        if env.method is UNSET and isinstance(env.id, int | str):
            owner = self._pending.pop(env.id, None)
            if owner is not None:
                owner.remaining.discard(env.id)
                method = owner.msg.methods.get(env.id)
                if env.result is not UNSET:
                    if method == "initialize":
                        self._state.learn_version(env.result)
                    elif method == "tools/list" and owner.modern:
                        data = self._state.learn_tools(env.id, env.result, data)
        await self.put(Frame(data))

    # ------------------------------------------------------------ waiting requests

    def expect(self, exchange: _Exchange) -> None:
        """The exchange's requests wait for their answers (an earlier wait for an id ends)."""
        for id in exchange.msg.methods:
            previous = self._pending.get(id)
            if previous is not None:
                self.abandon(previous, id)
            self._pending[id] = exchange

    def track(self, id: RequestId, exchange: _Exchange) -> None:
        """Request ``id`` waits for its answer (legacy HTTP+SSE: on the SSE stream)."""
        self._pending[id] = exchange

    def exchange_for(self, id: RequestId) -> _Exchange | None:
        return self._pending.get(id)

    def forget(self, id: RequestId) -> None:
        self._pending.pop(id, None)

    def abandon(self, exchange: _Exchange, id: RequestId) -> None:
        """The engine no longer waits for ``id``: stop the exchange once it waits for nothing."""
        if self._pending.get(id) is exchange:
            del self._pending[id]
        exchange.remaining.discard(id)
        if not exchange.remaining:
            exchange.abandoned = True
            exchange.scope.cancel()

    async def answer(self, exchange: _Exchange, id: RequestId, frame: Frame) -> None:
        """Deliver the answer to request ``id`` of ``exchange`` that the transport made."""
        exchange.remaining.discard(id)
        if self._pending.get(id) is exchange:
            del self._pending[id]
        await self.put(frame)

    async def fail(self, exchange: _Exchange, failure: Failure) -> None:
        """Every request of the exchange still without an answer gets ``failure``."""
        for id in sorted(exchange.remaining, key=str):
            if self._pending.get(id) is exchange:
                del self._pending[id]
            await self.put(failure.frame(id))
        exchange.remaining.clear()

    async def fail_ids(self, ids: Iterable[RequestId], failure: Failure) -> None:
        """Those of ``ids`` still waiting get ``failure``."""
        for id in ids:
            if self._pending.pop(id, None) is not None:
                await self.put(failure.frame(id))

    async def end(self, reason: str, failure: Failure, *, abandon: bool) -> list[_Exchange]:
        """No more incoming messages: every waiting request gets ``failure``, then the engine
        reads what is buffered and EndOfChannel.  The exchanges that were waiting are returned
        (with ``abandon``, marked abandoned and waiting for nothing first)."""
        self.ended = reason
        victims = list(self._pending.items())
        self._pending.clear()
        exchanges = list({id(ex): ex for _, ex in victims}.values())
        if abandon:
            for ex in exchanges:
                ex.abandoned = True
                ex.remaining.clear()
        for request_id, _ in victims:
            await self.put(failure.frame(request_id))
        self._send.close()
        return exchanges
