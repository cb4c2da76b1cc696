"""``mcp_trio.testing.check_message_channel`` against every channel mcp-trio ships that carries
frames as they are (in memory, stdio over pipes and over a socket, WebSocket on both doors), and
against channels broken on purpose, each of which it must catch."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from mcp_trio.testing import check_message_channel, open_memory_transport_pair
from mcp_trio.transports import Frame, MessageChannel
from mcp_trio.transports._base import BufferedInput, DirectOutput
from mcp_trio.transports.memory import MemoryChannel
from mcp_trio.transports.stdio import StreamChannel, _PipeStream
from mcp_trio.transports.websocket import open_websocket_client
from tests._support.websocket import serving

Pair = tuple[MessageChannel, MessageChannel]


@asynccontextmanager
async def _closing(left: MessageChannel, right: MessageChannel) -> AsyncIterator[Pair]:
    async with left, right:
        yield left, right


def memory() -> Any:
    return _closing(*open_memory_transport_pair())


def stdio_pipes() -> Any:
    """Two StreamChannels over two pipes, as a stdio client and server have (the pipes' atomic
    writes make ``send_nowait`` work)."""
    from_left, to_right = os.pipe()  # (read end, write end)
    from_right, to_left = os.pipe()
    left = StreamChannel(_PipeStream(from_right), _PipeStream(to_right))
    return _closing(left, StreamChannel(_PipeStream(from_left), _PipeStream(to_left)))


def stdio_socket() -> Any:
    """Two StreamChannels over a socket pair (no atomic write: ``send_nowait`` refuses)."""
    a, b = trio.socket.socketpair()
    left_stream, right_stream = trio.SocketStream(a), trio.SocketStream(b)
    return _closing(StreamChannel(left_stream, left_stream), StreamChannel(right_stream, right_stream))


def websocket(door: str) -> Any:
    @asynccontextmanager
    async def pair() -> AsyncIterator[Pair]:
        server_side: trio.MemorySendChannel[MessageChannel]
        server_side, taken = trio.open_memory_channel[MessageChannel](1)
        done = trio.Event()

        async def serve_session(channel: MessageChannel, **_: Any) -> None:
            await server_side.send(channel)
            await done.wait()

        async with serving(door, serve_session) as (url, _):
            async with open_websocket_client(url, keepalive_interval=None) as client:
                server = await taken.receive()
                try:
                    yield client, server
                finally:
                    done.set()

    return pair


PAIRS = {
    "memory": memory,
    "stdio-pipes": stdio_pipes,
    "stdio-socket": stdio_socket,
    "websocket-wsproto": websocket("wsproto"),
    "websocket-hypercorn": websocket("hypercorn"),
}


@pytest.mark.parametrize("kind", PAIRS)
async def test_every_channel_we_ship_keeps_the_contract(kind: str) -> None:
    await check_message_channel(PAIRS[kind])


async def test_the_pipes_really_write_at_once() -> None:
    """(What the stdio-pipes pair checks of DirectOutput is real: its writes are not refused.)"""
    async with stdio_pipes() as (left, right):
        assert isinstance(left, DirectOutput)
        left.send_nowait(Frame(b"{}"))
        assert (await right.receive()).data == b"{}"


# ------------------------------------------------------------------ channels broken on purpose


class _Dropping(MemoryChannel):
    """Loses every 50th frame."""

    sent = 0

    async def send(self, value: Frame) -> None:
        self.sent += 1
        if self.sent % 50:
            await super().send(value)


class _Torn(MemoryChannel, DirectOutput):
    """A ``send_nowait`` that writes half the frame, then says it could not."""

    def send_nowait(self, frame: Frame) -> None:
        self._send.send_nowait(Frame(frame.data[: len(frame.data) // 2]))
        raise trio.WouldBlock


class _Miscounting(MemoryChannel):
    """Says it holds a frame it does not hold (``buffered``)."""

    def buffered(self) -> int:
        return 1


class _Lingering(MemoryChannel):
    """An ``aclose`` that leaves the channel working."""

    async def aclose(self) -> None:
        pass


def _broken(kind: type[MemoryChannel]) -> Any:
    @asynccontextmanager
    async def pair() -> AsyncIterator[Pair]:
        a_send, b_receive = trio.open_memory_channel[Frame](16)
        b_send, a_receive = trio.open_memory_channel[Frame](16)
        yield kind(a_send, a_receive), kind(b_send, b_receive)

    return pair


@pytest.mark.parametrize(
    ("kind", "rule"),
    [
        (_Dropping, "frames arrive whole and in order"),
        (_Torn, "what a declared capability sends arrives whole"),
        (_Miscounting, "buffered() is 1 with nothing left to take"),
        (_Lingering, "send after aclose() did not raise trio.ClosedResourceError"),
    ],
)
async def test_a_broken_channel_is_caught_and_the_rule_named(kind: type[MemoryChannel], rule: str) -> None:
    assert issubclass(kind, BufferedInput)  # (a MemoryChannel: it declares buffered())
    with pytest.raises(AssertionError, match=re.escape(rule)):
        await check_message_channel(_broken(kind))
