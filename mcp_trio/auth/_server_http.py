"""HTTP helpers shared by the protected resource server and the example
authorization server: JSON replies, strict form and query parsing, and
``WWW-Authenticate`` quoting.

They sit on the Streamable HTTP front doors' :class:`~mcp_trio.transports.http.server.Handler`
interface, so both front doors (h11 and hypercorn) serve them unchanged.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterable, Sequence
from typing import Any

from ..transports.http._replies import _Reply
from ..transports.http._request import Responder, _send_reply

__all__ = ["FormError", "challenge", "parse_form", "send", "send_json"]

#: Responses that carry credentials or per-client data must not be cached (RFC 6749 5.1).
NO_STORE = [("cache-control", "no-store"), ("pragma", "no-cache")]


class FormError(ValueError):
    """A form body or query string that cannot be read as OAuth parameters."""


def parse_form(text: bytes | str, *, repeatable: Iterable[str] = ()) -> dict[str, list[str]]:
    """``application/x-www-form-urlencoded`` parameters, strictly.

    OAuth forbids sending a parameter twice (RFC 6749 3.1, 3.2) except the
    ones listed in ``repeatable`` (RFC 8707 ``resource``); empty values count
    as absent (RFC 6749 3.1).  Not UTF-8, or a repeated parameter, raises
    :class:`FormError` naming the problem.
    """
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise FormError("the parameters are not UTF-8") from None
    allowed = set(repeatable)
    found: dict[str, list[str]] = {}
    try:
        pairs = urllib.parse.parse_qsl(text, keep_blank_values=True, errors="strict", max_num_fields=200)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FormError(f"unreadable parameters: {exc}") from None
    for name, value in pairs:
        if value == "":
            continue
        values = found.setdefault(name, [])
        if values and name not in allowed:
            raise FormError(f"parameter {name!r} is repeated")
        values.append(value)
    return found


def first(form: dict[str, list[str]], name: str) -> str | None:
    """The single value of ``name`` in a parsed form, or ``None``."""
    values = form.get(name)
    return values[0] if values else None


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def challenge(scheme: str, params: Sequence[tuple[str, str | None]]) -> str:
    """A ``WWW-Authenticate`` challenge: ``Bearer name="value", ...`` (parameters
    whose value is ``None`` are left out; values are quoted-strings, RFC 9110 11.2)."""
    parts = [f"{name}={_quote(value)}" for name, value in params if value is not None]
    return f"{scheme} {', '.join(parts)}" if parts else scheme


async def send(
    responder: Responder, status: int, body: bytes = b"", headers: Sequence[tuple[str, str]] = ()
) -> None:
    """One complete response."""
    await _send_reply(responder, _Reply(status, body, list(headers)))


async def send_json(
    responder: Responder, status: int, document: Any, headers: Sequence[tuple[str, str]] = ()
) -> None:
    """A JSON response (``document`` is a dict, or already-encoded bytes)."""
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    await send(responder, status, body, [("content-type", "application/json"), *headers])
