"""The one session a proxy keeps to the server it proxies: opened when the proxy starts serving,
watched, and opened again after a loss, with backoff.

Rules:

* The first connection is made when the proxy's lifespan is entered; failing it (within
  ``connect_timeout``) is an :class:`UpstreamUnavailable` that the way of serving raises.
* A loss (the process exits, the HTTP session ends) ends the requests forwarded over it (each
  gets :class:`~mcp_trio.ConnectionClosed`, which the forwarding answers with an error); the
  session is then opened again after ``backoff`` seconds, doubling up to ``max_backoff``, for
  as long as the proxy serves.  A request arriving meanwhile waits at most ``wait`` seconds for
  it, then is answered with an error naming the last failure.
* Every reconnection pins the revision first negotiated (the proxy's clients speak that one).
* From 2026-07-28 on, the upstream's list changes come on a ``subscriptions/listen`` stream the
  proxy holds for the lists whose capability says ``listChanged``, and the updates of the
  resources its clients' own listen streams watch (:meth:`Upstream.watching`): when those
  change, a new stream is opened, and the old one closed once the new one is acknowledged.
* Notifications of the upstream go through a bounded queue (``queue_size``) to one relaying
  task: a flood fills it and the excess is dropped and counted, never waited for.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial
from typing import Any

import trio

from ..client import Client

__all__ = ["Upstream", "UpstreamUnavailable", "Upstreams"]

log = logging.getLogger("mcp_trio.proxy")

#: Opens one upstream client (``connect(target, **options)`` with the options given).
Opener = Callable[[dict[str, Any]], AbstractAsyncContextManager[Client]]
#: What a relayed notification goes to: ``(revision of the session it came on, method, params)``.
Relay = Callable[[str, str, Any], Awaitable[None]]


class UpstreamUnavailable(Exception):
    """The proxied server cannot be reached (now): the message says why."""


class Upstream:
    """The proxy's session to the server it proxies, and its reconnections."""

    __slots__ = (
        "_open",
        "_where",
        "_options",
        "_client",
        "_ready",
        "_last_error",
        "_backoff",
        "_max_backoff",
        "wait",
        "_notes_send",
        "_notes_receive",
        "dropped",
        "connections",
        "_on_reconnect",
        "version",
        "_watched",
        "_covered",
        "_covering",
        "_rewatch",
    )

    def __init__(
        self,
        open_client: Opener,
        where: str,
        options: dict[str, Any],
        *,
        backoff: float,
        max_backoff: float,
        wait: float,
        queue_size: int,
        on_reconnect: Callable[[Upstream], Awaitable[None]],
    ) -> None:
        self._open = open_client
        self._where = where
        self._options = options
        self._client: Client | None = None
        self._ready = trio.Event()  # (set while connected)
        self._last_error = "not connected yet"
        self._backoff = backoff
        self._max_backoff = max_backoff
        #: Seconds a request waits for a connection before it is answered with an error.
        self.wait = wait
        self._notes_send, self._notes_receive = trio.open_memory_channel[tuple[str, Any]](queue_size)
        #: Upstream notifications dropped because the queue was full.
        self.dropped = 0
        #: Connections opened so far.
        self.connections = 0
        self._on_reconnect = on_reconnect
        #: The revision negotiated (pinned for the reconnections), once connected.
        self.version = ""
        self._watched: Counter[str] = Counter()  # (the URIs whose updates are wanted: by how many)
        self._covered: set[str] = set()  # (those the open listen stream acknowledged)
        self._covering = trio.Event()  # (set when _covered changes)
        self._rewatch = trio.Event()  # (set when _watched changes)

    @property
    def where(self) -> str:
        """The proxied server, as the messages name it."""
        return self._where

    def current(self) -> Client | None:
        """The connected client (None: not connected now)."""
        client = self._client
        return client if client is not None and not client.session.closed.is_set() else None

    async def client(self) -> Client:
        """The connected client, waiting at most :attr:`wait` seconds for one.

        Raises:
            UpstreamUnavailable: none in time (naming the last failure).
        """
        client = self.current()
        if client is not None:
            return client
        with trio.move_on_after(self.wait):
            while client is None:
                if self._ready.is_set():  # (lost, and run() has not seen it yet)
                    await trio.sleep(0.01)
                else:
                    await self._ready.wait()
                client = self.current()
        if client is None:
            raise UpstreamUnavailable(
                f"the proxied server {self._where} is not connected ({self._last_error}); "
                f"no connection within {self.wait} s"
            )
        return client

    def queue_notification(self, method: str, params: Any) -> None:
        """Queue one upstream notification for relaying (dropped, and counted, when full)."""
        try:
            self._notes_send.send_nowait((method, params))
        except trio.WouldBlock:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning(
                    "proxy: %d notification(s) of %s dropped: more arrived than its clients took",
                    self.dropped,
                    self._where,
                )

    async def relay(self, to: Relay) -> None:
        """Pass the queued notifications to ``to``, one at a time, forever (a failure is logged)."""
        async for method, params in self._notes_receive:
            try:
                await to(self.version, method, params)
            except Exception:
                log.exception("proxy: relaying %s from %s failed", method, self._where)

    def watched(self) -> int:
        """How many URIs the upstream listen stream is to watch now."""
        return len(self._watched)

    @asynccontextmanager
    async def watching(self, uris: Collection[str]) -> AsyncIterator[None]:
        """Hold ``uris`` among those the upstream ``subscriptions/listen`` stream watches
        (2026-07-28: their ``notifications/resources/updated`` are queued as any other) while the
        block runs; it is entered once a stream acknowledging them is open (or after
        :attr:`wait` seconds, logged)."""
        if not set(uris) <= self._watched.keys():  # (a stream that watches them is opened)
            self._rewatch.set()
        self._watched.update(uris)
        try:
            with trio.move_on_after(self.wait) as waited:
                # (and no change pending: the stream about to replace it might not watch them)
                while not set(uris) <= self._covered or self._rewatch.is_set():
                    await self._covering.wait()
            if waited.cancelled_caught:
                log.warning(
                    "proxy: %s did not acknowledge the updates of %s in time", self._where, sorted(uris)
                )
            yield
        finally:
            self._watched.subtract(uris)
            if any(self._watched[uri] <= 0 for uri in uris):  # (no longer watched by anyone)
                self._watched = +self._watched
                self._rewatch.set()

    async def _listen(self, client: Client, again: bool = False) -> None:
        """Hold a ``subscriptions/listen`` stream (2026-07-28) for the lists the upstream says
        change and the resources watched (:meth:`watching`), queueing each notification; when
        the resources watched change, a new stream is opened, then the old one closed.  On a
        session opened ``again``, every resource watched is told updated once its stream is
        acknowledged (it may have changed while the session was lost)."""
        caps = client.server_capabilities

        def declared(kind: str, flag: str) -> bool:
            value = caps.get(kind)
            return isinstance(value, dict) and bool(value.get(flag))

        lists = {kind: declared(kind, "listChanged") for kind in ("tools", "prompts", "resources")}
        subscribe = declared("resources", "subscribe")
        async with trio.open_nursery() as nursery:
            previous: trio.CancelScope | None = None
            while True:
                self._rewatch = trio.Event()
                uris = sorted(self._watched) if subscribe else []
                if any(lists.values()) or uris:
                    hold = partial(self._hold, client, lists, uris)
                    scope: trio.CancelScope = await nursery.start(hold)
                    if previous is not None:
                        previous.cancel()
                    previous = scope
                    if again:
                        for uri in sorted(self._covered):
                            self.queue_notification("notifications/resources/updated", {"uri": uri})
                        again = False
                elif previous is not None:
                    previous.cancel()
                    previous, self._covered = None, set()
                await self._rewatch.wait()

    async def _hold(
        self,
        client: Client,
        lists: dict[str, bool],
        uris: list[str],
        *,
        task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """One listen stream, started once acknowledged (or failed: logged)."""
        started = False
        with trio.CancelScope() as scope:
            try:
                listening = client.listen(
                    tools=lists["tools"],
                    prompts=lists["prompts"],
                    resources=lists["resources"],
                    resource_uris=uris,
                )
                async with listening as subscription:
                    agreed = (subscription.acknowledged or {}).get("resourceSubscriptions", ())
                    self._covered = {str(uri) for uri in agreed}
                    self._covering.set()
                    self._covering = trio.Event()
                    started = True
                    task_status.started(scope)
                    async for method, notice in subscription:
                        self.queue_notification(method, None if notice.uri is None else {"uri": notice.uri})
            except Exception as exc:
                log.warning("proxy: the listen stream to %s ended: %s", self._where, exc)
            finally:
                if not started:
                    task_status.started(scope)

    async def run(self, *, task_status: trio.TaskStatus[Client] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the session, opening it again after each loss, until cancelled.  Started with
        ``nursery.start``: started once the first connection is made (its failure is raised)."""
        delay = self._backoff
        first = True
        while True:
            try:
                async with self._open(self._options) as client:
                    self.connections += 1
                    again = not first
                    if first:
                        self.version = client.protocol_version
                        pins: Sequence[str] = [self.version]
                        self._options = {**self._options, "versions": pins}
                    self._client = client
                    self._ready.set()
                    delay = self._backoff
                    if first:
                        first = False
                        task_status.started(client)
                    else:
                        log.info("proxy: reconnected to %s", self._where)
                        await self._on_reconnect(self)
                    async with trio.open_nursery() as nursery:
                        if client.modern:  # (its list changes come on a listen stream)
                            nursery.start_soon(self._listen, client, again)
                        await client.session.closed.wait()
                        nursery.cancel_scope.cancel()
                    self._covered = set()
                    self._last_error = "the connection was lost"
                    self._client = None
                    self._ready = trio.Event()
            except Exception as exc:
                self._last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
                if first:
                    raise UpstreamUnavailable(
                        f"cannot connect to the proxied server {self._where}: {self._last_error}"
                    ) from exc
            finally:
                self._client = None
                if self._ready.is_set():
                    self._ready = trio.Event()
            log.warning("proxy: %s: %s; connecting again in %.1f s", self._where, self._last_error, delay)
            await trio.sleep(delay)
            delay = min(self._max_backoff, delay * 2 if math.isfinite(delay) else delay)


class Upstreams:
    """The proxy's upstream sessions, one per revision it speaks to its clients: the one
    negotiated with the ``versions`` given to ``connect`` (the primary: its info, instructions and
    capabilities are the proxy's), or, when the proxy is told which revisions to offer, one
    pinned to each of them that the upstream speaks."""

    __slots__ = ("_make", "_offered", "_by_version", "primary")

    def __init__(
        self, make: Callable[[Sequence[str] | None], Upstream], offered: Sequence[str] | None
    ) -> None:
        self._make = make
        self._offered = offered
        self._by_version: dict[str, Upstream] = {}
        self.primary: Upstream | None = None

    def versions(self) -> list[str]:
        """The revisions connected at the start, the newest first."""
        return sorted(self._by_version, reverse=True)

    def all(self) -> list[Upstream]:
        return list(self._by_version.values())

    def get(self, version: str) -> Upstream | None:
        return self._by_version.get(version)

    async def start(self, nursery: trio.Nursery, relay: Relay) -> Client:
        """Open the sessions (in ``nursery``, which holds them) and their relays; the primary's
        client.  Raises :class:`UpstreamUnavailable` when none opens (naming each failure)."""
        wanted: list[Sequence[str] | None] = [None] if self._offered is None else [[v] for v in self._offered]
        failures: list[str] = []
        clients: list[Client] = []
        for versions in wanted:
            upstream = self._make(versions)
            try:
                client: Client = await nursery.start(upstream.run)
            except UpstreamUnavailable as exc:
                failures.append(str(exc))
                continue
            clients.append(client)
            self._by_version[client.protocol_version] = upstream
            nursery.start_soon(upstream.relay, relay)
        if not clients:
            raise UpstreamUnavailable("; ".join(failures))
        for failure in failures:
            log.warning("proxy: %s (that revision is not offered)", failure)
        primary = max(clients, key=lambda c: c.protocol_version)
        self.primary = self._by_version[primary.protocol_version]
        return primary

    async def client(self, version: str) -> Client:
        """The client of the session of ``version`` (see :meth:`Upstream.client`)."""
        upstream = self._by_version.get(version)
        if upstream is None:  # (the proxy's sessions accept only the revisions connected)
            raise UpstreamUnavailable(f"the proxy has no session to its upstream in revision {version}")
        return await upstream.client()
