"""A transport of your own, checked against the contract mcp-trio's engine relies on (what
mcp-trio's own channels pass): check_message_channel takes a function that opens two connected
ends."""

from contextlib import asynccontextmanager

import trio

from mcp_trio.testing import check_message_channel
from mcp_trio.transports import Frame


class QueueChannel(trio.abc.Channel[Frame]):
    """Frames over a pair of trio memory channels: the smallest transport there is."""

    def __init__(self, send, receive):
        self._send, self._receive = send, receive

    async def send(self, value):
        await self._send.send(value)

    async def receive(self):
        return await self._receive.receive()

    async def aclose(self):
        await self._send.aclose()
        await self._receive.aclose()


@asynccontextmanager
async def queue_pair():
    a_send, b_receive = trio.open_memory_channel(16)
    b_send, a_receive = trio.open_memory_channel(16)
    left, right = QueueChannel(a_send, a_receive), QueueChannel(b_send, b_receive)
    try:
        yield left, right
    finally:
        await left.aclose()
        await right.aclose()


async def test_my_channel_keeps_the_contract():
    await check_message_channel(queue_pair)
