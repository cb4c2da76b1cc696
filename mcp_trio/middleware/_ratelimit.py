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
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Literal

import trio

from .._exceptions import McpError
from ._base import CallNext, RequestInfo, Result

__all__ = ["RATE_LIMITED", "RateLimit"]

#: The default error code of a refused request.
RATE_LIMITED = -32029


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
    ) -> None:
        if not rate > 0:
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

    def key(self, request: RequestInfo) -> Hashable:
        """The bucket ``request`` draws from."""
        per = self.per
        if per == "session":
            return ("session", request.session_key())
        if per == "principal":
            auth = request.auth  # (an AccessToken behind a protected endpoint: any object may come)
            subject = getattr(auth, "subject", None)
            if subject is not None:
                return ("principal", getattr(auth, "issuer", None), subject)
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

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        if self.methods is None or request.method in self.methods:
            wait = self._take(self.key(request), trio.current_time())
            if wait > 0:
                retry = math.ceil(wait * 1000) / 1000
                raise McpError(
                    self.code,
                    f"Rate limit exceeded ({self.rate:g} requests/s, burst {self.burst}): "
                    f"retry after {retry:g} s",
                    {"retryAfter": retry},
                )
        return await call_next(request)

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
