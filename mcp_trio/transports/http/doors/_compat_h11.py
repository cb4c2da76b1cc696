"""Every use of h11's private API, in one place (``h11>=0.16,<0.17`` in pyproject.toml;
tests/transports/http/test_compat_h11.py exercises it against the installed h11 and fails loudly
when h11 changes shape).

The httptools door parses with llhttp but hands the lean door h11's own events
(:mod:`._llhttp`), so that one code path serves both parsers.
"""

from __future__ import annotations

import h11
from h11._headers import Headers

__all__ = ["parsed_request"]

_new = object.__new__
_set = object.__setattr__


def parsed_request(
    method: bytes, headers: list[tuple[bytes, bytes, bytes]], target: bytes, http_version: bytes
) -> h11.Request:
    """The ``h11.Request`` that h11's parser makes of a request head whose parts were already
    checked (by llhttp and :class:`._llhttp.LlhttpConnection`): the event
    ``h11.Request(method=..., headers=..., target=..., http_version=...)`` makes, without h11
    validating every header again: 2 us against 21 us for a head of six headers, measured alone;
    the public constructor would add about a tenth to the httptools door's CPU per request.
    ``headers`` are in h11's internal form: (name as sent, lower-case name, value)."""
    request = _new(h11.Request)
    _set(request, "method", method)
    _set(request, "headers", Headers(headers))
    _set(request, "target", target)
    _set(request, "http_version", http_version)
    return request
