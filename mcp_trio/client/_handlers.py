"""The client's handlers for the server's asks: their types, the capabilities they advertise,
and helpers for writing them (:func:`elicitation_defaults`)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from .._exceptions import RemoteProtocolError
from .asks import ElicitationHandler, LogMessage, RootsProvider, SamplingHandler
from .results import UnknownContent, _Base

log = logging.getLogger("mcp_trio.client")


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


def _log_message(params: Any) -> LogMessage | None:
    """A ``notifications/message``'s params (read by the session against the
    revision) as a :class:`LogMessage`; ``None`` (logged) if they do not fit."""
    try:
        return msgspec.convert(_builtins(params), LogMessage)
    except msgspec.ValidationError as exc:
        log.warning("notifications/message: %s; not passed to on_log", exc)
        return None


def _to_wire(value: Any) -> Any:
    """A handler's answer as JSON values: the types of :mod:`.asks` and
    :mod:`.results` by their wire names (``extra`` merged in, an
    :class:`UnknownContent` as sent, defaults left out), other Structs by
    ``msgspec.to_builtins``; dicts and lists looked into."""
    if isinstance(value, UnknownContent):
        return dict(value.raw)
    if isinstance(value, _Base):
        out: dict[str, Any] = {}
        config = value.__struct_config__
        if config.tag_field is not None:
            out[config.tag_field] = config.tag
        extra: dict[str, Any] = {}
        for f in msgspec.structs.fields(value):
            member = getattr(value, f.name)
            if f.name == "extra":
                extra = member
            elif f.required or member != (
                f.default if f.default is not msgspec.NODEFAULT else f.default_factory()
            ):
                out[f.encode_name] = _to_wire(member)
        for key, member in extra.items():
            out.setdefault(key, member)
        return out
    if isinstance(value, msgspec.Struct):
        return msgspec.to_builtins(value)
    if isinstance(value, Mapping):
        return {key: _to_wire(member) for key, member in value.items()}
    if isinstance(value, list | tuple):
        return [_to_wire(member) for member in value]
    return value


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        value = await value
    return value


def elicitation_defaults(requested_schema: Any) -> dict[str, Any]:
    """The ``default`` of every property of an elicitation's ``requestedSchema``.

    A form-mode ``elicitation/create`` (2025-11-25 on) may give each primitive
    property a ``default``; a client shows it pre-filled, and a handler that
    accepts without asking anyone can answer ``{"action": "accept", "content":
    elicitation_defaults(params.requestedSchema)}``.  Properties without a
    default are left out.  Multi-select enums (``type: array``) keep their
    list default.
    """
    schema = _builtins(requested_schema)
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {
        name: prop["default"]
        for name, prop in properties.items()
        if isinstance(prop, Mapping) and "default" in prop
    }


def _client_capabilities(
    sampling: SamplingHandler | None,
    elicitation: ElicitationHandler | None,
    roots: RootsProvider | None,
    sampling_tools: bool,
    elicitation_modes: Sequence[str],
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    caps: dict[str, Any] = {}
    if sampling is not None:
        caps["sampling"] = {"tools": {}} if sampling_tools else {}
    if elicitation is not None:
        unknown = set(elicitation_modes) - {"form", "url"}
        if unknown or not elicitation_modes:
            raise ValueError(
                f"elicitation_modes must be a non-empty subset of form, url (got {elicitation_modes})"
            )
        caps["elicitation"] = {mode: {} for mode in elicitation_modes}
    if roots is not None:
        caps["roots"] = {"listChanged": True}
    for key, value in (extra or {}).items():
        caps[key] = value
    return caps


class HandlerError(Exception):
    """A handler of the server's asks (``sampling``, ``elicitation``, ``roots``) failed.

    Raised by the call that the server asked for input (2026-07-28
    multi-round-trip requests): there is no way to send the failure back, so
    the call is abandoned.  The handler's exception is ``__cause__``.  (Up to
    2025-11-25 the server's request is answered with the error instead, and
    the server decides what the call returns.)

    Attributes:
        method: What the server asked for (``"sampling/createMessage"`` ...).
    """

    def __init__(self, method: str, cause: BaseException) -> None:
        super().__init__(f"the {method} handler failed: {cause!r}")
        self.method = method


class _NotAdvertised(RemoteProtocolError):
    """The server asked for something this client did not advertise."""


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The single exception inside (nested) one-member groups, else the group."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
