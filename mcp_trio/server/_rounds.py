"""The multi-round-trip requests of a server (2026-07-28): the key that signs
their ``requestState``, the inputs of each request under way, and the requests
whose tool may still become a task (``defer_task``).

In the stateless era a handler's calls back to the client do not reach it:
the first unanswered one ends the round with an ``InputRequiredResult``
(:mod:`._mrtr`), and the client sends the request again with the answers.
:meth:`Rounds.wrap` runs a handler so; in the handshake era it runs as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .._engine._context import RequestContext
from ..types import _versions
from ._context import _only
from ._mrtr import InputRequired, InputSession, StateCodec

Handler = Callable[[RequestContext, Any], Awaitable[Any]]


class Rounds:
    """Owns the state of a server's multi-round-trip requests."""

    __slots__ = ("codec", "inputs", "deferred")

    def __init__(self, key: bytes | None, ttl: float) -> None:
        self.codec = StateCodec(key, ttl)
        #: The inputs of each request under way, by ``id()`` of its RequestContext.
        self.inputs: dict[int, InputSession] = {}
        #: Requests whose tool may still call ``ctx.start_task()``.
        self.deferred: set[int] = set()

    def use_key(self, key: bytes) -> None:
        """Sign with ``key`` from now on (see ``Server.use_state_key``)."""
        self.codec = StateCodec(key, self.codec.ttl)

    def wrap(self, handler: Handler) -> Handler:
        """Run ``handler`` so that, in the stateless era, its calls back to the
        client become an ``InputRequiredResult``."""

        async def rounds(ctx: RequestContext, params: Any) -> Any:
            owner = ctx.session.principal  # (signed into the request state as text)
            principal = None if owner is None else str(owner)
            inputs = InputSession(self.codec, method=ctx.method, params=params, principal=principal)
            self.inputs[id(ctx)] = inputs
            try:
                return await handler(ctx, params)
            except BaseException as exc:
                if not _only(exc, InputRequired):  # (or a group of nothing else: concurrent asks)
                    raise
                return inputs.result()
            finally:
                del self.inputs[id(ctx)]

        def run(ctx: RequestContext, params: Any) -> Awaitable[Any]:
            # Not a coroutine itself: the handshake era awaits the handler directly.
            if _versions.is_stateless(ctx.version):
                return rounds(ctx, params)
            return handler(ctx, params)

        return run
