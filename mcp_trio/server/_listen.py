"""``subscriptions/listen`` (2026-07-28), server side.

A listen request stays open: the server acknowledges the notification types
it agrees to deliver (``notifications/subscriptions/acknowledged``, always
the first message of the subscription), then sends each requested change
notification, every one tagged with the subscription id (the listen request's
JSON-RPC id) in ``_meta``, until the client cancels it (closing the HTTP
stream, or ``notifications/cancelled`` on stdio) or the server ends it with a
result (graceful closure).

Change notifications are coalesced per subscription: a list that changes
twice before the first notification went out is announced once, since a
client re-reads the list anyway.  So a slow client holds at most one pending
notification per type (and per subscribed URI), and nothing is lost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from .._engine._context import RequestContext
from ..types._versions import SUBSCRIPTION_ID

__all__ = ["SUBSCRIPTION_ID", "SubscriptionHub"]


# filter field -> (notification, server capability, its flag)
_LIST_FILTERS = {
    "toolsListChanged": ("notifications/tools/list_changed", "tools", "listChanged"),
    "promptsListChanged": ("notifications/prompts/list_changed", "prompts", "listChanged"),
    "resourcesListChanged": ("notifications/resources/list_changed", "resources", "listChanged"),
}
_UPDATED = "notifications/resources/updated"


class _Listener:
    def __init__(self, methods: set[str], uris: set[str]) -> None:
        self.methods = methods
        self.uris = uris
        self.pending: dict[Any, tuple[str, dict[str, Any]]] = {}  # insertion-ordered, coalescing
        self.wakeup = trio.Event()
        self.ended = False

    def offer(self, method: str, params: dict[str, Any], key: Any) -> None:
        if key not in self.pending:
            self.pending[key] = (method, params)
            self.wakeup.set()

    def end(self) -> None:
        self.ended = True
        self.wakeup.set()


class SubscriptionHub:
    """The open ``subscriptions/listen`` requests of one server."""

    def __init__(self, capabilities: Callable[[], dict[str, Any]]) -> None:
        self.capabilities = capabilities  # the server's, as advertised now
        self._listeners: set[_Listener] = set()

    def __len__(self) -> int:
        return len(self._listeners)

    def changed(self, method: str) -> None:
        """A list changed: tell the subscriptions that asked for it."""
        for listener in list(self._listeners):
            if method in listener.methods:
                listener.offer(method, {}, method)

    def resource_updated(self, uri: str) -> None:
        """Resource ``uri`` changed: tell the subscriptions watching it."""
        for listener in list(self._listeners):
            if uri in listener.uris:
                listener.offer(_UPDATED, {"uri": uri}, (_UPDATED, uri))

    def end_all(self) -> None:
        """End every subscription gracefully: each listen request is answered
        with its (empty) result after the notifications already pending."""
        for listener in list(self._listeners):
            listener.end()

    def _agree(self, requested: Any) -> tuple[dict[str, Any], set[str], set[str]]:
        """The part of the client's filter this server honours."""
        capabilities = self.capabilities()
        agreed: dict[str, Any] = {}
        methods: set[str] = set()
        for field, (method, capability, flag) in _LIST_FILTERS.items():
            offered = capabilities.get(capability)
            if getattr(requested, field, None) is True and isinstance(offered, dict) and offered.get(flag):
                agreed[field] = True
                methods.add(method)
        uris: set[str] = set()
        wanted = getattr(requested, "resourceSubscriptions", None)
        resources = capabilities.get("resources")
        if isinstance(wanted, list) and isinstance(resources, dict) and resources.get("subscribe"):
            agreed["resourceSubscriptions"] = list(wanted)
            uris = set(wanted)
        return agreed, methods, uris

    async def listen(self, ctx: RequestContext, params: Any) -> dict[str, Any]:
        """The ``subscriptions/listen`` handler."""
        agreed, methods, uris = self._agree(params.notifications)
        meta = {SUBSCRIPTION_ID: ctx.id}
        listener = _Listener(methods, uris)
        self._listeners.add(listener)  # before the acknowledgment: nothing after it is missed
        try:
            await ctx.notify(
                "notifications/subscriptions/acknowledged", {"_meta": meta, "notifications": agreed}
            )
            while True:
                while not listener.pending and not listener.ended:
                    listener.wakeup = trio.Event()
                    await listener.wakeup.wait()
                if not listener.pending:
                    return {"_meta": meta, "resultType": "complete"}
                key = next(iter(listener.pending))
                method, extra = listener.pending.pop(key)
                await ctx.notify(method, {**extra, "_meta": meta})
        finally:
            self._listeners.discard(listener)
