"""Typed form elicitation: the ``requestedSchema`` of a form from a Python type
(a dataclass, TypedDict or msgspec Struct of flat fields) and the client's
answer converted back to that type.

MCP restricts form schemas to one flat object whose properties are strings
(optionally with a ``format`` or an ``enum``), numbers, integers or booleans;
a type with anything else is refused before anything is sent.
"""

from __future__ import annotations

import enum
import typing
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import msgspec

T = TypeVar("T")

ElicitAction = Literal["accept", "decline", "cancel"]

_PRIMITIVES = {"string", "number", "integer", "boolean"}
_KEPT = {
    "type",
    "title",
    "description",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "default",
    "enum",
    "enumNames",
}


@dataclass(frozen=True)
class Elicited(Generic[T]):
    """The user's answer to a typed form: ``action`` is ``"accept"``,
    ``"decline"`` or ``"cancel"``; ``data`` the filled form (only on accept)."""

    action: ElicitAction
    data: T | None


def form_schema(kind: type[Any]) -> dict[str, Any]:
    """The ``requestedSchema`` for ``kind``; ``TypeError`` naming the field that
    a form cannot hold."""
    name = getattr(kind, "__qualname__", repr(kind))
    try:
        schema = msgspec.json.schema(kind)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot build an elicitation form from {name}: {exc}") from None
    defs = schema.get("$defs", {})
    ref = schema.get("$ref", "")
    body = defs.get(ref.rpartition("/")[2], schema) if ref else schema
    if body.get("type") != "object" or not isinstance(body.get("properties"), dict):
        raise TypeError(f"an elicitation form is an object: {name} is not a dataclass, TypedDict or Struct")
    choices = _declared_choices(kind)
    properties: dict[str, Any] = {}
    for field, prop in body["properties"].items():
        prop = _resolve(prop, defs)
        values = prop.get("enum")
        if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
            # msgspec sorts choices; the form shows them in the order they are declared
            prop = {**prop, "type": "string", "enum": choices.get(field, values)}
        if prop.get("type") not in _PRIMITIVES or (prop.get("enum") and prop.get("type") != "string"):
            raise TypeError(
                f"elicitation form {name}: field {field!r} must be str, int, float, bool, "
                f"or a Literal or Enum of strings (forms hold flat primitive fields only)"
            )
        properties[field] = {k: v for k, v in prop.items() if k in _KEPT}
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if body.get("required"):
        out["required"] = list(body["required"])
    return out


def _declared_choices(kind: type[Any]) -> dict[str, list[Any]]:
    """The choices of each Literal or Enum field, in declaration order."""
    try:
        hints = typing.get_type_hints(kind)
    except Exception:
        return {}
    out: dict[str, list[Any]] = {}
    for field, hint in hints.items():
        if typing.get_origin(hint) is Literal:
            out[field] = list(typing.get_args(hint))
        elif isinstance(hint, type) and issubclass(hint, enum.Enum):
            out[field] = [member.value for member in hint]
    return out


def _resolve(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """An Enum field is a ``$ref`` to its definition; a Literal an inline enum."""
    ref = prop.get("$ref")
    if isinstance(ref, str):
        target = dict(defs.get(ref.rpartition("/")[2], {}))
        target.pop("title", None)
        return {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
    return prop


def typed_answer(result: Any, kind: type[T]) -> Elicited[T]:
    """The client's ``ElicitResult`` as :class:`Elicited` of ``kind``."""
    action = result.action
    content = getattr(result, "content", None)
    if action != "accept" or not isinstance(content, dict):
        return Elicited(action, None)
    try:
        data = msgspec.convert(content, kind, strict=False)
    except msgspec.ValidationError as exc:
        name = getattr(kind, "__qualname__", repr(kind))
        raise ValueError(f"the client's elicitation answer does not fit {name}: {exc}") from None
    return Elicited(action, data)
