"""The bus on Redis pub/sub: one subscriber connection per store, shared by
all its subscriptions (a channel is subscribed on Redis while a subscription
of this store wants it), each subscription fed through its own bounded queue.

A message published while the subscriber connection is down is lost, as
pub/sub loses it: so when the connection drops, every open subscription is
cut off with :class:`StoreUnavailable` (rather than missing messages
silently), and the next :meth:`RedisBus.subscribe` connects again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
from coredis.patterns.pubsub import PubSub
from coredis.response.types import PubSubMessage

from .._base import BusMessage, StoreError, StoreUnavailable
from .._memory import QueuedSubscription
from ._conn import RedisConnection, leaf, store_error


class RedisBus:
    """Publish/subscribe between the workers sharing a Redis store (channel
    ``c`` is the Redis channel ``<prefix>b:c``)."""

    def __init__(self, redis: RedisConnection, nursery: trio.Nursery, *, max_queued: int) -> None:
        self.max_queued = max_queued
        self._redis = redis
        self._nursery = nursery
        self._subscribers: dict[str, set[QueuedSubscription]] = {}
        self._pubsub: PubSub[bytes] | None = None
        self._lock = trio.Lock()  # subscribing and unsubscribing, one at a time

    def _channel(self, channel: str) -> str:
        return self._redis.key("b", channel)

    async def publish(self, channel: str, data: bytes) -> int:
        with self._redis.guard("publishing"):
            return await self._redis.client.publish(self._channel(channel), data)

    @asynccontextmanager
    async def subscribe(self, *channels: str) -> AsyncIterator[QueuedSubscription]:
        subscription = QueuedSubscription(channels, self.max_queued)
        async with self._lock:
            pubsub = await self._connected()
            new = [c for c in dict.fromkeys(channels) if c not in self._subscribers]
            for channel in channels:
                self._subscribers.setdefault(channel, set()).add(subscription)
            try:
                if new:
                    with self._redis.guard("subscribing"):
                        await pubsub.subscribe(*map(self._channel, new))
            except BaseException:
                self._leave(subscription)
                raise
        try:
            yield subscription
        finally:
            subscription.close()
            gone = self._leave(subscription)
            if gone and self._pubsub is pubsub:
                with trio.CancelScope(shield=True):
                    await self._unsubscribe(pubsub, gone)

    def _leave(self, subscription: QueuedSubscription) -> list[str]:
        """Forget ``subscription``; the channels no subscription wants any more."""
        gone = []
        for channel in dict.fromkeys(subscription.channels):
            subscribers = self._subscribers.get(channel)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[channel]
                    gone.append(channel)
        return gone

    async def _unsubscribe(self, pubsub: PubSub[bytes], channels: list[str]) -> None:
        async with self._lock:
            channels = [c for c in channels if c not in self._subscribers]  # unless wanted again since
            if not channels or self._pubsub is not pubsub:
                return
            try:
                with self._redis.guard("unsubscribing"):
                    await pubsub.unsubscribe(*map(self._channel, channels))
            except StoreError:
                pass  # the connection is lost: the pump cuts every subscription off

    async def _connected(self) -> PubSub[bytes]:
        pubsub = self._pubsub
        if pubsub is None:
            with self._redis.guard("opening the subscriber connection"):
                pubsub = await self._nursery.start(self._pump)
        return pubsub

    def _deliver(self, message: PubSubMessage, skip: int) -> None:
        """Queue ``message`` on the subscriptions of its channel.  (A method of its own: the
        loop variable, left in _pump's frame, would keep the last subscription, and what it
        holds, alive until the next message, however long after it was closed.)"""
        raw, data = message["channel"], message["data"]
        channel = (raw.decode() if isinstance(raw, bytes) else raw)[skip:]
        payload = data if isinstance(data, bytes) else str(data).encode()
        for subscription in list(self._subscribers.get(channel, ())):
            subscription.offer(BusMessage(channel, payload))

    async def _pump(self, *, task_status: trio.TaskStatus[PubSub[bytes]] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the subscriber connection, and queue each message on the
        subscriptions of its channel, until the connection is lost."""
        error: StoreError = StoreError(f"the Redis store at {self._redis.url} was closed")
        started = False
        skip = len(self._redis.key("b", ""))
        pubsub = self._redis.client.pubsub(
            ignore_subscribe_messages=True,
            retry_policy=None,  # a lost connection cuts the subscriptions off (see the docstring)
            subscription_timeout=self._redis.timeout,
        )
        try:
            async with pubsub:
                self._pubsub = pubsub
                task_status.started(pubsub)
                started = True
                while True:
                    message = await pubsub.get_message(ignore_subscribe_messages=True)
                    if message is None or message["type"] != "message":
                        continue
                    self._deliver(message, skip)
        except Exception as exc:
            if not started:
                raise
            failure = store_error(self._redis.url, "receiving", exc)
            error = (
                failure
                if isinstance(failure, StoreError)
                else StoreUnavailable(f"the Redis store's subscriber connection failed: {leaf(exc)!r}")
            )
        finally:
            if started:
                if self._pubsub is pubsub:
                    self._pubsub = None
                for subscribers in self._subscribers.values():
                    for subscription in subscribers:
                        subscription.fail(error)
                self._subscribers.clear()
