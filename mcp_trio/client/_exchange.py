"""One request's exchange with the server, and the server's asks answered on the way.

Rules:

* A request is sent inside the ``sending`` contexts of the middleware that has
  one (none: straight to the session).
* From 2026-07-28 on the server asks (sampling, elicitation, roots) in the
  ``inputRequests`` of an ``InputRequiredResult``: they are answered, all at
  once, through the middleware, and the request is sent again with the answers
  (and the ``requestState``), at most ``max_rounds`` times.  The first failing
  answer ends the round: :class:`HandlerError`, or :class:`RemoteProtocolError`
  for an ask of something the client did not advertise.
* Up to 2025-11-25 the same asks arrive as JSON-RPC requests, answered by the
  same handlers (:meth:`Exchange.legacy_handler`); the session's wrapped
  handlers pass the middleware then.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from .._exceptions import RemoteProtocolError
from ..middleware._base import (
    Middleware,
    RequestInfo,
    Result,
    SendingMiddleware,
    chain,
    name_of,
    session_id_of,
)
from ._handlers import HandlerError, _maybe_await, _NotAdvertised, _to_wire, _unwrap
from ._reading import Reader, ask_params
from .asks import CreateMessageParams, ElicitationHandler, ElicitParams, RootsProvider, SamplingHandler

if TYPE_CHECKING:
    from .._engine._context import RequestContext
    from .._engine._session import Session

_MRTR_FIELDS = ("inputResponses", "requestState")


class Exchange:
    """The exchange of a :class:`~mcp_trio.client.Client`'s requests with the server (a
    collaborator of the client): sending them through the middleware, and answering the
    server's asks with the handlers.

    Attributes:
        sampling, elicitation, roots: The handlers given (``roots`` replaced by
            :meth:`Client.set_roots <mcp_trio.client.Client.set_roots>`).
    """

    __slots__ = ("_chain", "_reader", "_senders", "elicitation", "roots", "sampling", "session")

    def __init__(
        self,
        session: Session,
        reader: Callable[[str], Reader],
        *,
        sampling: SamplingHandler | None,
        elicitation: ElicitationHandler | None,
        roots: RootsProvider | None,
        middleware: Sequence[Middleware],
    ) -> None:
        self.session = session
        #: How the client reads what the server sends for ``method`` (its revision, strictness).
        self._reader = reader
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = roots
        # The server's 2026-07-28 asks pass the middleware here (the earlier ones, JSON-RPC
        # requests, through the session's wrapped handlers); a middleware with ``sending``
        # also wraps the requests this client sends.
        self._chain = chain(middleware, self._answer_request) if middleware else None
        self._senders: list[Callable[[str, dict[str, Any], str | None], AbstractContextManager[None]]] = [
            m.sending for m in middleware if isinstance(m, SendingMiddleware)
        ]

    async def send(
        self, method: str, params: dict[str, Any], options: dict[str, Any], max_rounds: int
    ) -> tuple[Any, bool]:
        """Send, answering ``InputRequiredResult`` rounds; returns (result, whether retried)."""
        rounds = 0
        while True:
            if self._senders:
                result = await self._send_wrapped(method, params, options)
            else:
                result = await self.session.request(method, params or None, **options)
            if getattr(result, "resultType", None) != "input_required":
                return result, rounds > 0
            rounds += 1
            if rounds > max_rounds:
                raise RemoteProtocolError(f"{method}: the server still wants input after {max_rounds} rounds")
            requests = result.inputRequests if result.inputRequests is not msgspec.UNSET else {}
            params = {k: v for k, v in params.items() if k not in _MRTR_FIELDS}
            if requests:
                params["inputResponses"] = await self._answer_inputs(requests)
            if result.requestState is not msgspec.UNSET:
                params["requestState"] = result.requestState

    async def _send_wrapped(self, method: str, params: dict[str, Any], options: dict[str, Any]) -> Any:
        """Send one request inside the ``sending`` contexts of the middleware."""
        session_id = session_id_of(self.session.channel)
        with ExitStack() as stack:
            for sending in self._senders:
                stack.enter_context(sending(method, params, session_id))
            return await self.session.request(method, params or None, **options)

    async def _answer_request(self, request: RequestInfo) -> Result:
        """The end of the middleware chain of a 2026-07-28 ask."""
        answer: Result = await self.answer(request.method, request.params)
        return answer

    async def _answer_inputs(self, requests: Mapping[str, Any]) -> dict[str, Any]:
        answers: dict[str, Any] = {}

        failed: list[tuple[str, Exception]] = []

        async def answer(key: str, request: Any, cancel_scope: trio.CancelScope) -> None:
            params = getattr(request, "params", None)
            method = getattr(request, "method", None) or request.__struct_config__.tag
            try:
                if self._chain is None:
                    answers[key] = await self.answer(method, params)
                else:
                    ask = RequestInfo(
                        method=method,
                        params=params,
                        name=name_of(method, params),
                        request_id=None,
                        session_id=session_id_of(self.session.channel),
                        side="client",
                    )
                    answers[key] = await self._chain(ask)
            except Exception as exc:  # the first failure ends the round
                failed.append((method, exc))
                cancel_scope.cancel()

        try:
            async with trio.open_nursery() as nursery:
                for key, request in requests.items():
                    nursery.start_soon(answer, key, request, nursery.cancel_scope)
        except BaseExceptionGroup as group:  # only cancellation: the answers catch the rest
            raise _unwrap(group) from None
        if failed:
            method, exc = failed[0]
            if isinstance(exc, _NotAdvertised):
                raise RemoteProtocolError(str(exc)) from None
            raise HandlerError(method, exc) from exc
        return answers

    async def answer(self, method: str, params: Any) -> Any:
        """Run the handler for one of the server's asks; its answer as JSON values."""
        reader = self._reader(method)
        answer: Any
        if method == "sampling/createMessage" and self.sampling is not None:
            answer = await self.sampling(ask_params(reader, params, CreateMessageParams))
        elif method == "elicitation/create" and self.elicitation is not None:
            answer = await self.elicitation(ask_params(reader, params, ElicitParams))
        elif method == "roots/list" and self.roots is not None:
            roots = self.roots() if callable(self.roots) else self.roots
            answer = {"roots": list(await _maybe_await(roots))}
        else:
            raise _NotAdvertised(f"the server asked for {method}, which this client did not advertise")
        return _to_wire(answer)

    def legacy_handler(self, method: str) -> Callable[[RequestContext, Any], Awaitable[Any]]:
        """The session's request handler for ``method``, an ask up to 2025-11-25."""

        async def handle(ctx: RequestContext, params: Any) -> Any:
            return await self.answer(method, params)

        return handle
