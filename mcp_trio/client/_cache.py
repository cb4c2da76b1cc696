"""The 2026-07-28 result cache: fresh cacheable results, keyed by method and params.

Rules:

* Only ``tools/list``, ``prompts/list``, ``resources/list``,
  ``resources/templates/list`` and ``resources/read`` are cacheable, and only
  results the server marks so (``ttlMs`` > 0), for as long as they are fresh.
* ``private`` results are kept per authorization context, ``public`` ones are
  shared by every client using the cache for the same namespace.
* A ``list_changed`` notification forgets its list; ``resources/updated``
  forgets the reads of its URI (:data:`_INVALIDATES`, :func:`_cache_params`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
import trio

_CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_INVALIDATES = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


class ResultCache:
    """Fresh cacheable results, keyed by method and params (2026-07-28 caching).

    ``private`` results are kept per authorization context, ``public`` ones
    are shared by every client using this cache for the same ``namespace``.

    Args:
        max_entries: Oldest entries are dropped beyond this.
    """

    def __init__(self, max_entries: int = 1024) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be positive")
        self.max_entries = max_entries
        self._entries: dict[tuple[Any, ...], tuple[float, Any]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _keys(
        namespace: str, auth: Any, method: str, params: bytes
    ) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return (namespace, "public", method, params), (namespace, "private", auth, method, params)

    def get(self, namespace: str, auth: Any, method: str, params: bytes) -> Any:
        """The fresh result for this request, or ``None``."""
        now = trio.current_time()
        for key in self._keys(namespace, auth, method, params):
            entry = self._entries.get(key)
            if entry is not None:
                if now < entry[0]:
                    return entry[1]
                del self._entries[key]
        return None

    def put(self, namespace: str, auth: Any, method: str, params: bytes, result: Any) -> None:
        """Store ``result`` if its hints allow (``ttlMs`` > 0)."""
        ttl = getattr(result, "ttlMs", None)
        if not isinstance(ttl, int) or ttl <= 0:
            return
        public, private = self._keys(namespace, auth, method, params)
        key = public if getattr(result, "cacheScope", "private") == "public" else private
        self._entries.pop(key, None)
        self._entries[key] = (trio.current_time() + ttl / 1000, result)
        while len(self._entries) > self.max_entries:
            del self._entries[next(iter(self._entries))]

    def invalidate(
        self, namespace: str, methods: Sequence[str] | None = None, params: bytes | None = None
    ) -> None:
        """Forget results of ``methods`` (all if ``None``), optionally only for ``params``."""
        for key in list(self._entries):
            if key[0] != namespace:
                continue
            method, key_params = key[-2], key[-1]
            if methods is not None and method not in methods:
                continue
            if params is not None and key_params != params:
                continue
            del self._entries[key]


def _cache_params(params: Mapping[str, Any]) -> bytes:
    return msgspec.json.encode({k: v for k, v in params.items() if k != "_meta"}, order="sorted")


class CacheView:
    """One client's use of a :class:`ResultCache` (a collaborator of
    :class:`~mcp_trio.client.Client`): its namespace and authorization context, and the
    notifications that make results stale."""

    __slots__ = ("auth", "cache", "namespace")

    def __init__(self, cache: ResultCache, namespace: str, auth: Any) -> None:
        self.cache = cache
        #: The server's name unless given; set once the session is connected.
        self.namespace = namespace
        self.auth = auth if auth is not None else object()

    def get(self, method: str, key: bytes) -> Any:
        """The fresh result of ``method`` with params ``key`` (:func:`_cache_params`), or ``None``."""
        return self.cache.get(self.namespace, self.auth, method, key)

    def put(self, method: str, key: bytes, result: Any) -> None:
        self.cache.put(self.namespace, self.auth, method, key, result)

    def invalidate(self) -> None:
        self.cache.invalidate(self.namespace)

    def notified(self, method: str, params: Any) -> None:
        """Forget what the server's notification ``method`` made stale."""
        methods = _INVALIDATES.get(method)
        if methods is not None:
            self.cache.invalidate(self.namespace, methods)
        elif method == "notifications/resources/updated":
            self.cache.invalidate(self.namespace, ("resources/read",), _cache_params({"uri": params.uri}))
