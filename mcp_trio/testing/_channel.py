"""``check_message_channel``: the contract of transports/_base.py, checked on a pair of channels."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TypeAlias

import trio
import trio.lowlevel

from ..transports._base import (
    BatchedOutput,
    BufferedInput,
    ChannelTraits,
    DirectOutput,
    Frame,
    MessageChannel,
)

__all__ = ["MakePair", "check_message_channel"]

#: Makes two connected ends of one connection, closed when the context ends.
MakePair: TypeAlias = Callable[[], AbstractAsyncContextManager[tuple[MessageChannel, MessageChannel]]]

_TIMEOUT = 10.0  # seconds any one step may take before the check fails (no check hangs)


def _messages(count: int, start: int = 0) -> list[bytes]:
    """JSON-RPC notifications whose order shows: every transport carries them unchanged."""
    made = []
    for n in range(start, start + count):
        params = {"n": n, "data": "é" * (n % 7)}
        made.append(
            json.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": params}).encode()
        )
    return made


async def check_message_channel(make_pair: MakePair, *, count: int = 200) -> None:
    """Check that the channels ``make_pair()`` gives, two ends of one connection, keep the
    contract the engine relies on; raise :class:`AssertionError` naming the rule broken.

    * Frames arrive whole and in order, each way, ``count`` of them, while the sender runs
      ahead of a slow receiver (backpressure loses nothing).
    * A ``receive`` cancelled while it waits loses no frame: the next one gets it.
    * ``aclose`` ends the channel: then ``send`` and ``receive`` raise
      :class:`trio.ClosedResourceError`, and the other end's ``receive`` ends
      (:class:`trio.EndOfChannel` or :class:`trio.BrokenResourceError`) instead of waiting.
    * What a channel declares it keeps: a :class:`DirectOutput`'s ``send_nowait`` writes a frame
      whole or raises :class:`trio.WouldBlock` having written nothing; a :class:`BatchedOutput`'s
      ``send_many`` keeps the order; a :class:`BufferedInput`'s ``buffered()`` is a count that
      is 0 once everything sent was received; a :class:`ChannelTraits`' members have their types.

    Every step is bounded in time: a channel that hangs fails the check instead.
    """
    for check in (_order_and_backpressure, _cancelled_receive, _close, _declared):
        try:
            with trio.fail_after(_TIMEOUT * 3):
                async with make_pair() as (left, right):
                    await check(left, right, count)
        except BaseExceptionGroup as group:  # (a task's failure: the one that says what broke)
            raise _first_failure(group) from None


async def _receive_all(channel: MessageChannel, expected: list[bytes], rule: str) -> None:
    for number, data in enumerate(expected):
        with trio.fail_after(_TIMEOUT):
            frame = await channel.receive()
        assert frame.error is None, f"{rule}: frame {number} came with an error: {frame.error}"
        assert frame.data == data, f"{rule}: frame {number} is {frame.data[:80]!r}, not {data[:80]!r}"


async def _order_and_backpressure(left: MessageChannel, right: MessageChannel, count: int) -> None:
    for sender, receiver in ((left, right), (right, left)):
        sent = _messages(count)

        async def send_all(sender: MessageChannel = sender, sent: list[bytes] = sent) -> None:
            for data in sent:
                with trio.fail_after(_TIMEOUT):
                    await sender.send(Frame(data))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(send_all)
            for _ in range(3):  # (the sender runs ahead: whatever the channel buffers, it buffers)
                await trio.lowlevel.checkpoint()
            await _receive_all(receiver, sent, "frames arrive whole and in order")


async def _cancelled_receive(left: MessageChannel, right: MessageChannel, count: int) -> None:
    for attempt in range(5):
        with trio.CancelScope() as scope:
            scope.cancel()  # (cancelled at its first checkpoint, before anything came)
            await right.receive()
        with trio.move_on_after(0.01 * (attempt + 1)):
            await right.receive()  # (nothing sent: it times out waiting)
    sent = _messages(3, start=count)
    for data in sent:
        await left.send(Frame(data))
    await _receive_all(right, sent, "a cancelled receive loses no frame")


async def _close(left: MessageChannel, right: MessageChannel, count: int) -> None:
    await left.send(Frame(_messages(1)[0]))
    await _receive_all(right, _messages(1), "a frame before the close arrives")
    await left.aclose()
    for name in ("send", "receive"):
        try:
            await (left.send(Frame(b"{}")) if name == "send" else left.receive())
        except trio.ClosedResourceError:
            continue
        raise AssertionError(f"{name} after aclose() did not raise trio.ClosedResourceError")
    with trio.fail_after(_TIMEOUT):
        try:
            frame = await right.receive()
        except (trio.EndOfChannel, trio.BrokenResourceError, trio.ClosedResourceError):
            return
    raise AssertionError(f"the other end received {frame.data[:80]!r} after the close, instead of its end")


async def _declared(left: MessageChannel, right: MessageChannel, count: int) -> None:
    for channel in (left, right):
        if isinstance(channel, ChannelTraits):
            _check_traits(channel)
    for sender, receiver in ((left, right), (right, left)):
        expected: list[bytes] = []
        if isinstance(sender, DirectOutput):
            for data in _messages(20, start=count):
                try:
                    sender.send_nowait(Frame(data))
                except trio.WouldBlock:
                    continue  # (nothing was written: nothing to expect)
                expected.append(data)
        batch = _messages(50, start=2 * count) if isinstance(sender, BatchedOutput) else []
        marker = _messages(1, start=3 * count)[0]  # (sent last: nothing else may come after it)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(_send_rest, sender, batch, marker)
            rule = "what a declared capability sends arrives whole, in order"
            await _receive_all(receiver, [*expected, *batch, marker], rule)
        if isinstance(receiver, BufferedInput):
            held = receiver.buffered()
            assert isinstance(held, int) and held == 0, f"buffered() is {held!r} with nothing left to take"


def _check_traits(traits: ChannelTraits) -> None:
    assert isinstance(traits.output_outlives_input, bool), "output_outlives_input is not a bool"
    described = {"end_reason": traits.end_reason, "url": traits.url, "session_id": traits.session_id}
    described["client"] = traits.client
    for name, value in described.items():
        assert value is None or isinstance(value, str), f"{name} is {value!r}, not a str or None"


def _first_failure(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The check's own failure inside ``group`` if there is one, else the first exception."""
    assertion = group.subgroup(AssertionError)
    found: BaseException = assertion if assertion is not None else group
    while isinstance(found, BaseExceptionGroup):
        found = found.exceptions[0]
    return found


async def _send_rest(sender: MessageChannel, batch: list[bytes], marker: bytes) -> None:
    if batch:
        assert isinstance(sender, BatchedOutput)
        await sender.send_many([Frame(data) for data in batch])
    await sender.send(Frame(marker))
