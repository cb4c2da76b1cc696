"""``subscriptions/listen`` (2026-07-28): :class:`Subscription` and :meth:`Client.listen`.

Rules:

* A subscription is yielded once the server acknowledged it; its
  notifications (routed here by their subscription id) are buffered, and a
  reader ``buffer`` behind loses the newest rather than blocking the session.
* The iteration stops when the server answers the listen request and raises
  what ended it otherwise; leaving the ``listen`` block cancels it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

from .._exceptions import LocalProtocolError
from ..types import _versions
from ..types._versions import SUBSCRIPTION_ID
from ._handlers import _builtins, _unwrap
from .results import Notice

if TYPE_CHECKING:
    from .._engine._session import Session

log = logging.getLogger("mcp_trio.client")


class Subscription:
    """An open ``subscriptions/listen`` stream (see :meth:`Client.listen`).

    Attributes:
        id: The subscription id (the listen request's id).
        acknowledged: The filter the server agreed to honour
            (``toolsListChanged`` ..., ``resourceSubscriptions``).
    """

    def __init__(self, buffer: int) -> None:
        self.id: Any = None
        self.acknowledged: dict[str, Any] | None = None
        self._send, self._receive = trio.open_memory_channel[tuple[str, Notice]](buffer)
        self._acknowledged = trio.Event()
        self._error: BaseException | None = None
        self._done = False
        #: Notifications dropped because the reader fell ``buffer`` behind.
        self.dropped = 0

    def _deliver(self, method: str, params: Any) -> None:
        if method == "notifications/subscriptions/acknowledged":
            self.acknowledged = _builtins(params.notifications)
            self._acknowledged.set()
            return
        try:
            self._send.send_nowait((method, _notice(params)))
        except trio.WouldBlock:
            # A reader this far behind re-reads the lists anyway; never block the session.
            self.dropped += 1
            log.warning(
                "subscription %r: dropped %s (the reader is %d behind)",
                self.id,
                method,
                self._send.statistics().current_buffer_used,
            )
        except trio.ClosedResourceError:
            pass

    def _finish(self, error: BaseException | None) -> None:
        self._done = True
        self._error = error
        self._acknowledged.set()
        self._send.close()

    @property
    def ended_gracefully(self) -> bool:
        """The server answered the listen request (it ended the subscription)."""
        return self._done and self._error is None

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> tuple[str, Notice]:
        """The next ``(method, params)`` (params typed, the same in every
        notification: :class:`~mcp_trio.client.results.Notice`); stops when the server ends the
        subscription, raises what ended it otherwise (``ConnectionClosed`` ...)."""
        try:
            return await self._receive.receive()
        except trio.EndOfChannel:
            if self._error is not None:
                raise self._error from None
            raise StopAsyncIteration from None


def _notice(params: Any) -> Notice:
    data = _builtins(params) if params is not None else {}
    if not isinstance(data, dict):
        data = {}
    uri, meta = data.get("uri"), data.get("_meta")
    extra = {k: v for k, v in data.items() if k not in ("uri", "_meta")}
    return Notice(
        uri=uri if isinstance(uri, str) else None, meta=meta if isinstance(meta, dict) else {}, extra=extra
    )


class Listening:
    """A client's ``subscriptions/listen`` streams (a collaborator of
    :class:`~mcp_trio.client.Client`): the open ones, by subscription id, and opening one."""

    __slots__ = ("session", "subscriptions")

    def __init__(self, session: Session) -> None:
        self.session = session
        #: The open subscriptions, by id (the listen request's), for the notifications routed here.
        self.subscriptions: dict[Any, Subscription] = {}

    def deliver(self, method: str, params: Any) -> None:
        """Pass the server's notification to the subscription its ``_meta`` names, if open."""
        meta = getattr(params, "meta", None)
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            subscription = self.subscriptions.get(meta[SUBSCRIPTION_ID])
            if subscription is not None:
                subscription._deliver(method, params)

    @asynccontextmanager
    async def open(
        self,
        *,
        revision: str,
        tools: bool,
        prompts: bool,
        resources: bool,
        resource_uris: Sequence[str],
        buffer: int,
    ) -> AsyncIterator[Subscription]:
        """:meth:`Client.listen <mcp_trio.client.Client.listen>` of a session speaking ``revision``."""
        if not _versions.is_stateless(revision):
            raise LocalProtocolError(
                f"subscriptions/listen needs a stateless protocol version (this session speaks "
                f"{revision}); use subscribe_resource and on_list_changed instead"
            )
        wanted: dict[str, Any] = {}
        for field, on in (
            ("toolsListChanged", tools),
            ("promptsListChanged", prompts),
            ("resourcesListChanged", resources),
        ):
            if on:
                wanted[field] = True
        if resource_uris:
            wanted["resourceSubscriptions"] = list(resource_uris)
        subscription = Subscription(buffer)

        def register(id: Any) -> None:
            subscription.id = id
            self.subscriptions[id] = subscription

        async def run() -> None:
            try:
                await self.session.request(
                    "subscriptions/listen", {"notifications": wanted}, timeout=None, on_sent=register
                )
                subscription._finish(None)  # the server ended it gracefully
            except Exception as exc:
                subscription._finish(exc)
            finally:
                self.subscriptions.pop(subscription.id, None)

        refused: BaseException | None = None
        try:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                await subscription._acknowledged.wait()
                if subscription._error is not None and subscription.acknowledged is None:
                    refused = subscription._error
                else:
                    try:
                        yield subscription
                    finally:
                        nursery.cancel_scope.cancel()
        except BaseExceptionGroup as group:  # what the block raised, alone: run() raises nothing
            raise _unwrap(group) from None
        if refused is not None:
            raise refused
