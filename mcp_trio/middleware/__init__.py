"""Middleware: code around every request a server or a client answers (see docs/middleware.md).

A middleware is an async callable ``(request, call_next) -> result``
(:class:`Middleware`); install a list of them with ``Server(..., middleware=[...])``
or ``server.add_middleware(m)``, and on a client with the ``middleware=[...]``
option of ``connect`` and the ``connect_*`` functions.  The first listed is the
outermost.  Shipped: :class:`AccessLog`, :class:`Timing`, :class:`LatencyHistogram`, :class:`RateLimit`,
:class:`ErrorTranslation`, :class:`ResponseSizeLimit` and :class:`OpenTelemetry`
(the ``otel`` extra).
"""

from ._base import CallNext as CallNext
from ._base import Middleware as Middleware
from ._base import Params as Params
from ._base import RequestInfo as RequestInfo
from ._base import Result as Result
from ._base import SendingMiddleware as SendingMiddleware
from ._base import SharingMiddleware as SharingMiddleware
from ._latency import LatencyHistogram as LatencyHistogram
from ._otel import OpenTelemetry as OpenTelemetry
from ._ratelimit import RATE_LIMITED as RATE_LIMITED
from ._ratelimit import RateLimit as RateLimit
from ._shipped import AccessLog as AccessLog
from ._shipped import ErrorTranslation as ErrorTranslation
from ._shipped import MethodTiming as MethodTiming
from ._shipped import ResponseSizeLimit as ResponseSizeLimit
from ._shipped import Timing as Timing
from ._shipped import Translation as Translation

__all__ = [
    "AccessLog",
    "CallNext",
    "ErrorTranslation",
    "LatencyHistogram",
    "MethodTiming",
    "Middleware",
    "OpenTelemetry",
    "Params",
    "RATE_LIMITED",
    "RateLimit",
    "RequestInfo",
    "ResponseSizeLimit",
    "Result",
    "SendingMiddleware",
    "SharingMiddleware",
    "Timing",
    "Translation",
]
