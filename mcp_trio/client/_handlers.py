"""The client's handlers for the server's asks: their types, the capabilities they advertise,
and helpers for writing them (:func:`elicitation_defaults`)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec

Handler = Callable[[Any], Awaitable[Any]]
NotificationHook = Callable[[Any], Awaitable[None]]


def _builtins(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


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
    sampling: Handler | None,
    elicitation: Handler | None,
    roots: Any,
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
            raise ValueError(f"elicitation_modes must be a non-empty subset of form, url (got {elicitation_modes})")
        caps["elicitation"] = {mode: {} for mode in elicitation_modes}
    if roots is not None:
        caps["roots"] = {"listChanged": True}
    for key, value in (extra or {}).items():
        caps[key] = value
    return caps
