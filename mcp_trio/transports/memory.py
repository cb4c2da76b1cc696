"""An in-memory transport pair, for tests and in-process use."""

from __future__ import annotations

import trio

from ._base import BufferedInput, ChannelTraits, Frame

__all__ = ["MemoryChannel", "open_memory_transport_pair"]


class MemoryChannel(trio.abc.Channel[Frame], ChannelTraits, BufferedInput):
    """One end of an in-memory pair: frames sent here are received at the other end."""

    def __init__(
        self,
        send: trio.MemorySendChannel[Frame],
        receive: trio.MemoryReceiveChannel[Frame],
    ) -> None:
        self._send = send
        self._receive = receive

    async def send(self, value: Frame) -> None:
        await self._send.send(value)

    async def receive(self) -> Frame:
        return await self._receive.receive()

    def buffered(self) -> int:
        """Frames sent to this end and not yet received (the session's reader
        relay, see docs/engine.md, takes a request itself only when none are)."""
        return self._receive.statistics().current_buffer_used

    async def aclose(self) -> None:
        await self._send.aclose()
        await self._receive.aclose()


def open_memory_transport_pair(buffer: int = 64) -> tuple[MemoryChannel, MemoryChannel]:
    """Two connected channels.  Closing one end makes the other see EOF.

    Args:
        buffer: Frames each direction can hold before ``send`` blocks.
    """
    a_send, b_recv = trio.open_memory_channel[Frame](buffer)
    b_send, a_recv = trio.open_memory_channel[Frame](buffer)
    return MemoryChannel(a_send, a_recv), MemoryChannel(b_send, b_recv)
