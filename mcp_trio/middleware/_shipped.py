"""The middlewares shipped with mcp_trio: access log, timing, error translation, response size limit.

Rules:

* :class:`AccessLog` writes one line per request when it ends, at INFO on the
  ``mcp_trio.access`` logger (off until that logger lets INFO through): the
  method, the tool/prompt name or resource URI, the request id, the session,
  the outcome (``ok``, ``error <code>``, ``cancelled``) and the duration.
* :class:`Timing` keeps, per method, the count and the total, smallest and
  largest duration of the requests that ended (whatever their outcome).
* :class:`ErrorTranslation` turns the exceptions a handler lets out into the
  JSON-RPC errors a mapping names (the most specific class wins).  A tool's
  own exceptions never reach it: the server answers them with an
  ``isError: true`` result, as the specification wants for tool errors.
* :class:`ResponseSizeLimit` replaces a result whose JSON encoding is larger
  than its limit by ``-32603`` naming both sizes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TypeAlias

import msgspec
import trio

from .. import _jsonrpc as rpc
from .._exceptions import McpError
from ..transports._base import Authorizing, SharedSession
from ._base import CallNext, RequestInfo, Result

__all__ = ["AccessLog", "ErrorTranslation", "MethodTiming", "ResponseSizeLimit", "Timing", "outcome_of"]

ACCESS_LOGGER = "mcp_trio.access"


def outcome_of(exc: BaseException) -> str:
    """How a request that raised ``exc`` ended: ``error <code>`` or ``cancelled``."""
    if isinstance(exc, McpError):
        return f"error {exc.code}"
    if isinstance(exc, trio.Cancelled):
        return "cancelled"
    return f"error {rpc.INTERNAL_ERROR}"


class AccessLog:
    """One log line per request (see the module's rules).

    The line reads ``tools/call add id=3 session=5f2c... ok 0.84 ms``, followed
    by what the transport knows of the client: ``client=203.0.113.7`` (its
    address), ``principal=...`` (whom its token speaks for), ``worker=...``
    (the worker serving it, under ``--workers``).  The same fields are on the
    record (``extra``) as ``mcp_method``, ``mcp_name``, ``mcp_request_id``,
    ``mcp_session``, ``mcp_outcome``, ``duration_ms``, ``mcp_client``,
    ``mcp_principal`` and ``mcp_worker``, for structured log handlers.

    Args:
        logger: Where the lines go (default: ``logging.getLogger("mcp_trio.access")``).
        level: Their level (default INFO).
    """

    def __init__(self, logger: logging.Logger | None = None, level: int = logging.INFO) -> None:
        self.logger = logger if logger is not None else logging.getLogger(ACCESS_LOGGER)
        self.level = level

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        logger = self.logger
        if not logger.isEnabledFor(self.level):
            return await call_next(request)
        start = time.perf_counter()
        outcome = "ok"
        try:
            return await call_next(request)
        except BaseException as exc:
            outcome = outcome_of(exc)
            raise
        finally:
            self._write(request, outcome, (time.perf_counter() - start) * 1000.0)

    def _write(self, request: RequestInfo, outcome: str, ms: float) -> None:
        session = request.session_id or "-"
        rid = "-" if request.request_id is None else request.request_id
        what = request.method if request.name is None else f"{request.method} {request.name}"
        client = request.client
        channel = request.context.session.channel if request.context is not None else None
        owner = channel.principal if isinstance(channel, Authorizing) else None
        principal = None if owner is None else str(owner)
        worker = channel.worker if isinstance(channel, SharedSession) else None
        extra = {
            "mcp_method": request.method,
            "mcp_name": request.name,
            "mcp_request_id": request.request_id,
            "mcp_session": request.session_id,
            "mcp_outcome": outcome,
            "duration_ms": ms,
            "mcp_client": client,
            "mcp_principal": principal,
            "mcp_worker": worker,
        }
        who = "".join(
            f" {key}={value}"
            for key, value in (("client", client), ("principal", principal), ("worker", worker))
            if value is not None
        )
        self.logger.log(
            self.level, "%s id=%s session=%s %s %.2f ms%s", what, rid, session, outcome, ms, who, extra=extra
        )


class MethodTiming(msgspec.Struct, frozen=True):
    """The durations of one method's requests (milliseconds).

    Attributes:
        count: Requests that ended.
        errors: Of those, the ones answered with an error (or cancelled).
        total_ms, min_ms, max_ms: Their total, shortest and longest duration.
    """

    count: int
    errors: int
    total_ms: float
    min_ms: float
    max_ms: float

    @property
    def mean_ms(self) -> float:
        """The mean duration."""
        return self.total_ms / self.count if self.count else 0.0


class Timing:
    """Per-method duration statistics (see the module's rules); read them with
    :meth:`stats` (one :class:`MethodTiming` per method), start again with :meth:`reset`."""

    def __init__(self) -> None:
        self._stats: dict[str, list[float]] = {}  # method -> [count, errors, total, min, max]

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        start = time.perf_counter()
        failed = True
        try:
            result = await call_next(request)
            failed = False
            return result
        finally:
            self._add(request.method, (time.perf_counter() - start) * 1000.0, failed)

    def _add(self, method: str, ms: float, failed: bool) -> None:
        entry = self._stats.get(method)
        if entry is None:
            self._stats[method] = [1, float(failed), ms, ms, ms]
            return
        entry[0] += 1
        entry[1] += failed
        entry[2] += ms
        entry[3] = min(entry[3], ms)
        entry[4] = max(entry[4], ms)

    def stats(self) -> dict[str, MethodTiming]:
        """A snapshot: method -> its :class:`MethodTiming`."""
        return {
            method: MethodTiming(int(e[0]), int(e[1]), e[2], e[3], e[4]) for method, e in self._stats.items()
        }

    def reset(self) -> None:
        """Forget every duration recorded so far."""
        self._stats.clear()


#: What an exception class maps to: a JSON-RPC error code (the message is the
#: exception's text), or a function making the :class:`~mcp_trio.McpError`.
Translation: TypeAlias = "int | Callable[[Exception], McpError]"


class ErrorTranslation:
    """Maps the exceptions handlers let out to JSON-RPC errors (see the module's rules).

    Example::

        ErrorTranslation({
            KeyError: INVALID_PARAMS,
            PermissionError: lambda exc: McpError(-32001, "Forbidden", {"why": str(exc)}),
        })

    Exceptions of no listed class (and :class:`~mcp_trio.McpError` itself) pass
    unchanged (an unexpected one is ``-32603``, logged).
    """

    def __init__(self, mapping: Mapping[type[Exception], Translation]) -> None:
        for cls in mapping:
            if not (isinstance(cls, type) and issubclass(cls, Exception)):
                raise TypeError(f"ErrorTranslation maps exception classes, not {cls!r}")
        self.mapping = dict(mapping)

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        try:
            return await call_next(request)
        except McpError:
            raise
        except Exception as exc:
            error = self.translate(exc)
            if error is None:
                raise
            raise error from exc

    def translate(self, exc: Exception) -> McpError | None:
        """The error ``exc`` maps to (its class's, else its nearest base's), or ``None``."""
        for cls in type(exc).__mro__:
            translation = self.mapping.get(cls)
            if translation is None:
                continue
            if isinstance(translation, int):
                return McpError(translation, str(exc) or type(exc).__name__)
            return translation(exc)
        return None


class ResponseSizeLimit:
    """Refuses results larger than ``max_bytes`` once encoded as JSON (see the module's rules)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.max_bytes = max_bytes
        self._encode = msgspec.json.Encoder().encode

    async def __call__(self, request: RequestInfo, call_next: CallNext) -> Result:
        result = await call_next(request)
        size = len(self._encode(result))
        if size > self.max_bytes:
            what = request.method if request.name is None else f"{request.method} {request.name}"
            raise McpError(
                rpc.INTERNAL_ERROR,
                f"Response too large: the result of {what} is {size} bytes, over the limit of "
                f"{self.max_bytes} bytes",
                {"size": size, "limit": self.max_bytes},
            )
        return result
