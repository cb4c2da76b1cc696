"""Rate limiting: a token bucket per principal, client address or session.

Rules:

* Each key has a bucket of ``burst`` tokens, refilled at ``rate`` tokens a
  second; a request takes one.  The key is, by default (``per="principal"``),
  whom the access token speaks for, else the client's address (HTTP), else
  the session (stdio, WebSocket, in memory): a key that holds in every
  revision (a 2026-07-28 request, or one under ``--stateless``, is a session of
  its own, so a bucket per session would hold nothing) and that a new session
  does not reset.  ``per="address"`` keys on the address alone,
  ``per="session"`` on the session.  Behind a reverse proxy every client has
  the proxy's address unless the proxy is trusted (``forwarded_allow_ips``).
* A request finding the bucket empty is refused with ``-32029`` (by default;
  JSON-RPC 2.0 leaves -32000 to -32099 to the implementation) whose message
  says in how many seconds to retry, and whose ``data`` holds ``retryAfter``
  (seconds).
* Memory is bounded: a bucket idle long enough to be full again is
  forgotten (a full bucket and a new one are the same), and at most
  ``max_keys`` buckets are kept (the least recently used go first).
* The buckets are this process's, unless the limit shares them through a
  store's :class:`~mcp_trio.store.Buckets`: the one given as ``store=``, else,
  while ``serve_http(store=...)`` serves the server (``mcp-trio serve --workers``),
  that store's (the :class:`SharingMiddleware` hook).  Then every worker takes
  from one bucket per key (a Redis round trip per limited request), so a client
  gets ``burst`` requests, not ``burst`` per worker.  A key that means nothing
  to another process (a ``per`` function's object, the session of a connection
  without a session id) keeps a bucket of this process.  Shared buckets are
  named by the limit's settings (rate, burst, ``per``, methods) unless ``name``
  is given: two limits alike share them, two limits of one server differ.
* When the store fails (Redis unreachable), the request is limited by the
  local bucket instead (each worker then allows up to ``burst``), a warning is
  logged (once a minute at most) on ``mcp_trio.middleware.ratelimit``, and the
  store is tried again after ``store_retry`` seconds.
"""

from __future__ import annotations

import logging
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Literal, Protocol, runtime_checkable

import msgspec
import trio

from .._exceptions import McpError
from ..store import Buckets, Store, StoreError
from ._base import CallNext, RequestInfo, Result

__all__ = ["RATE_LIMITED", "RATE_LIMIT_LOGGER", "RateLimit"]

#: The default error code of a refused request.
RATE_LIMITED = -32029
#: Where a limit says its store failed.
RATE_LIMIT_LOGGER = "mcp_trio.middleware.ratelimit"
_WARN_EVERY = 60.0  # seconds between two warnings of a failing store
_encode = msgspec.json.Encoder().encode


@runtime_checkable
class Principal(Protocol):
    """What a per-principal limit reads of a request's authorization (an
    :class:`~mcp_trio.auth.server.AccessToken` has both): whom it speaks for, and who said so."""

    subject: str | None
    issuer: str | None


class RateLimit:
    """A token bucket per principal, client address or session (see the module's rules).

    Args:
        rate: Tokens added per second (the sustained requests per second).
        burst: The bucket's size (requests allowed at once after a pause).
        per: ``"principal"`` (the default: the access token's issuer and
            subject behind a protected endpoint; without one, the client's
            address; without one, the session), ``"address"`` (the client's
            address, else the session), ``"session"`` (the transport's session
            id, else the connection), or a function of the
            :class:`RequestInfo` returning the key.
        max_keys: Buckets kept at most.
        code: The error code of a refusal.
        methods: Limit only these methods (default: every request).
        store: Share the buckets through this store's ``buckets`` (default: those
            of the store the server is served with, if any; see the module's rules).
        name: What the shared buckets are named by (default: the settings).
        store_retry: Seconds the local buckets stand in after the store failed.
    """

    def __init__(
        self,
        rate: float,
        burst: int = 10,
        *,
        per: Literal["principal", "address", "session"] | Callable[[RequestInfo], Hashable] = "principal",
        max_keys: int = 10_000,
        code: int = RATE_LIMITED,
        methods: frozenset[str] | set[str] | None = None,
        store: Store | None = None,
        name: str | None = None,
        store_retry: float = 5.0,
    ) -> None:
        if not 0 < rate < math.inf:
            raise ValueError("rate must be positive (tokens per second)")
        if burst < 1:
            raise ValueError("burst must be at least 1")
        if max_keys < 1:
            raise ValueError("max_keys must be at least 1")
        if per not in ("principal", "address", "session") and not callable(per):
            raise ValueError("per must be 'principal', 'address', 'session' or a function of the request")
        self.rate = float(rate)
        self.burst = burst
        self.per = per
        self.max_keys = max_keys
        self.code = code
        self.methods = frozenset(methods) if methods is not None else None
        # key -> (tokens, at): the tokens left at time ``at`` (trio.current_time()).
        self._buckets: OrderedDict[Hashable, tuple[float, float]] = OrderedDict()
        if store is not None and store.buckets is None:
            raise ValueError(f"the store {store.url} keeps no buckets (its buckets are None)")
        if not store_retry >= 0:
            raise ValueError("store_retry must be a number of seconds, at least 0")
        self.store_retry = store_retry
        self._given = store
        self._served: Store | None = None  # the store of serve_http, while it serves
        self._holds = 0  # how many serve_http hold it
        self._shared: Buckets | None = store.buckets if store is not None else None
        if name is None:
            per_name = per if isinstance(per, str) else f"{per.__module__}.{per.__qualname__}"
            only = ",".join(sorted(self.methods)) if self.methods is not None else "*"
            name = f"{self.rate:g}/{burst}/{per_name}/{only}"
        self.name = name
        self._store_back = -math.inf  # (trio time) when the store is tried again after failing
        self._warned = -math.inf

    def key(self, request: RequestInfo) -> Hashable:
        """The bucket ``request`` draws from."""
        per = self.per
        if per == "session":
            return ("session", request.session_key())
        if per == "principal":
            auth = request.auth  # (an AccessToken behind a protected endpoint: any object may come)
            if isinstance(auth, Principal) and auth.subject is not None:
                return ("principal", auth.issuer, auth.subject)
        if per in ("principal", "address"):
            client = request.client
            if client is not None:
                return ("address", client)
            return ("session", request.session_key())
        assert callable(per)
        return per(request)

    def __len__(self) -> int:
        """How many buckets are kept now."""
        return len(self._buckets)

    @property
    def store(self) -> Store | None:
        """The store whose buckets are taken from now (``None``: this process's)."""
        return self._given if self._given is not None else self._served

    @contextmanager
    def sharing(self, store: Store) -> Iterator[None]:
        """Take from ``store``'s buckets while held (``serve_http(store=...)`` holds it);
        nothing changes when a store was given, or ``store`` keeps no buckets."""
        if self._given is not None or store.buckets is None:
            yield
            return
        if self._served is not None and self._served is not store:
            raise ValueError(
                f"this RateLimit shares its buckets through the store {self._served.url} already: "
                "give each server served with another store a RateLimit of its own"
            )
        self._served, self._shared = store, store.buckets
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
            if not self._holds:
                self._served = self._shared = None

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        if self.methods is None or request.method in self.methods:
            if self._shared is None:
                wait = self._take(self.key(request), trio.current_time())
            else:
                wait = await self._take_shared(self._shared, self.key(request))
            if wait > 0:
                retry = math.ceil(wait * 1000) / 1000
                raise McpError(
                    self.code,
                    f"Rate limit exceeded ({self.rate:g} requests/s, burst {self.burst}): "
                    f"retry after {retry:g} s",
                    {"retryAfter": retry},
                )
        return await call_next(request)

    async def _take_shared(self, buckets: Buckets, key: Hashable) -> float:
        """Take a token from the store's bucket of ``key`` (this process's if the key means
        nothing elsewhere, or the store failed lately)."""
        now = trio.current_time()
        if now >= self._store_back:
            try:
                shared = _encode(key)
            except (TypeError, msgspec.EncodeError):
                shared = None  # (an object of this process: its bucket is this process's)
            if shared is not None:
                try:
                    return await buckets.take(
                        f"{self.name}:{shared.decode()}", rate=self.rate, burst=self.burst
                    )
                except StoreError as exc:
                    now = trio.current_time()
                    self._store_back = now + self.store_retry
                    if now - self._warned >= _WARN_EVERY:
                        self._warned = now
                        logging.getLogger(RATE_LIMIT_LOGGER).warning(
                            "RateLimit: the store failed (%s); each worker limits with buckets "
                            "of its own, trying the store again in %g s",
                            exc,
                            self.store_retry,
                        )
        return self._take(key, now)

    def _take(self, key: Hashable, now: float) -> float:
        """Take a token from ``key``'s bucket: 0, or the seconds until one is there."""
        buckets = self._buckets
        self._evict(now)
        entry = buckets.pop(key, None)
        tokens = (
            float(self.burst) if entry is None else min(self.burst, entry[0] + (now - entry[1]) * self.rate)
        )
        if tokens >= 1.0:
            buckets[key] = (tokens - 1.0, now)
            return 0.0
        buckets[key] = (tokens, now)
        return (1.0 - tokens) / self.rate

    def _evict(self, now: float) -> None:
        """Forget the buckets full again (oldest first), and beyond ``max_keys`` the least recent."""
        buckets = self._buckets
        full_after = self.burst / self.rate  # an empty bucket is full again after this long
        while buckets:
            key, (_, at) = next(iter(buckets.items()))
            if now - at < full_after and len(buckets) < self.max_keys:
                break
            del buckets[key]
