"""Constraint metadata on tool parameters, turned into `msgspec.Meta`.

A parameter's ``Annotated`` metadata may use three vocabularies; all of them end up
as one `msgspec.Meta`, so that the keywords appear in the JSON Schema and msgspec
enforces them while decoding the arguments (no check of its own on the call path):

* `msgspec.Meta` itself, kept as it is;
* ``annotated_types``: ``Gt``, ``Ge``, ``Lt``, ``Le``, ``Interval``, ``MultipleOf``,
  ``MinLen``, ``MaxLen``, ``Len``, ``Timezone`` (aware or naive only) and ``doc()``
  (``typing_extensions.Doc``: a description);
* pydantic's ``Field(...)`` (a ``FieldInfo``): ``description``, ``title``,
  ``examples``, ``json_schema_extra`` (a dict), ``deprecated``, ``alias`` (the
  argument's name on the wire), its constraints (those above, ``pattern``,
  ``strict=True``) and, as a parameter's default (``limit: int = Field(10, ge=1)``),
  its ``default`` or ``default_factory``.

What one of these vocabularies says and cannot be honoured (``Predicate``, a
validator, ``strip_whitespace``, ``max_digits``, a ``validation_alias`` ...) is
refused with a `TypeError` naming the parameter, the metadata and what to use
instead: a constraint is never dropped.  Other objects in ``Annotated`` (strings,
markers of other libraries) are left alone: ``Annotated`` is meant to carry
metadata for several consumers, each ignoring what is not its own.

Neither pydantic nor annotated_types is imported here: an object is recognised by
the module its class comes from, and pydantic's classes are looked up in
``sys.modules`` (if an annotation holds one, pydantic is already imported).

The same vocabularies inside the fields of nested dataclasses, TypedDicts,
NamedTuples and Structs cannot be rewritten (msgspec reads those annotations
itself): they are refused, naming the field; ``msgspec.Meta`` works there.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["Declared", "declare", "is_field_info", "mentions_pydantic_model", "top_alias", "translate"]

_EMPTY: Any = object()

#: The ``FieldInfo`` attributes honoured (the others must keep their default).
_FIELD_HONOURED = frozenset(
    {
        "annotation",
        "default",
        "default_factory",
        "alias",
        "alias_priority",
        "title",
        "description",
        "examples",
        "json_schema_extra",
        "deprecated",
        "metadata",
    }
)

_USE_INSTEAD = (
    "use bounds, lengths, multiple_of or pattern (msgspec.Meta, annotated_types or pydantic Field), "
    "or check the value in the tool and raise ToolError"
)


@dataclasses.dataclass
class Declared:
    """A parameter as msgspec sees it: its type (constraints as `msgspec.Meta`),
    the name of its argument, and the default pydantic's ``Field`` gave it."""

    hint: Any
    alias: str | None = None
    #: A ``Field`` default (`_EMPTY`: none, the signature's own default applies).
    default: Any = _EMPTY
    default_factory: Callable[[], Any] | None = None

    @property
    def has_field_default(self) -> bool:
        return self.default is not _EMPTY or self.default_factory is not None


def _module_of(obj: Any) -> str:
    return type(obj).__module__ or ""


def _pydantic_attr(name: str) -> Any:
    """``pydantic.<name>`` if pydantic is imported, else None (never imports it)."""
    module = sys.modules.get("pydantic")
    return getattr(module, name, None) if module is not None else None


def is_field_info(obj: Any) -> bool:
    """Whether ``obj`` is a pydantic ``FieldInfo`` (what ``Field(...)`` returns)."""
    module = sys.modules.get("pydantic.fields")
    field_info = getattr(module, "FieldInfo", None) if module is not None else None
    return field_info is not None and isinstance(obj, field_info)


def _undefined() -> Any:
    module = sys.modules.get("pydantic_core")
    return getattr(module, "PydanticUndefined", None) if module is not None else None


def mentions_pydantic_model(tp: Any) -> bool:
    """Whether ``tp`` is, or holds in its arguments, a pydantic ``BaseModel``."""
    base = _pydantic_attr("BaseModel")
    if base is None:
        return False
    return _mentions(tp, base, set())


def _mentions(tp: Any, base: type, seen: set[int]) -> bool:
    if id(tp) in seen:
        return False
    seen.add(id(tp))
    if isinstance(tp, type) and not typing.get_args(tp):
        return issubclass(tp, base)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        return False
    if isinstance(origin, type) and issubclass(origin, base):
        return True
    return any(_mentions(arg, base, seen) for arg in typing.get_args(tp))


class _Collector:
    """The `msgspec.Meta` keywords gathered from one ``Annotated``'s metadata."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.meta: dict[str, Any] = {}
        self.extra_schema: dict[str, Any] = {}
        self.alias: str | None = None
        self.default: Any = _EMPTY
        self.default_factory: Callable[[], Any] | None = None

    def refuse(self, what: str, why: str, instead: str = _USE_INSTEAD) -> TypeError:
        return TypeError(f"{self.where}: {what} cannot be honoured ({why}); {instead}")

    def add(self, item: Any, *, as_default: bool = False) -> bool:
        """Take ``item`` in; False when it belongs to no known vocabulary."""
        module = _module_of(item)
        if type(item).__name__ == "Doc" and module in ("typing", "typing_extensions"):
            self.meta["description"] = item.documentation  # (what annotated_types.doc() makes)
            return True
        if module == "annotated_types" or module.startswith("annotated_types."):
            self._annotated_types(item)
            return True
        if is_field_info(item):
            self._field_info(item, as_default)
            return True
        if module == "pydantic" or module.startswith("pydantic."):
            self._pydantic_metadata(item)
            return True
        return False

    def _annotated_types(self, item: Any) -> None:
        name = type(item).__name__
        if name in ("Interval", "Len") or (name != "Predicate" and _is_grouped(item)):
            for part in item:
                self.add(part)
            return
        simple = {
            "Gt": "gt",
            "Ge": "ge",
            "Lt": "lt",
            "Le": "le",
            "MultipleOf": "multiple_of",
            "MinLen": "min_length",
            "MaxLen": "max_length",
        }
        if name in simple:
            key = simple[name]
            self.meta[key] = getattr(item, key)
        elif name == "Timezone" and item.tz in (None, Ellipsis):
            self.meta["tz"] = item.tz is Ellipsis
        elif name == "Timezone":
            raise self.refuse(
                f"{item!r}",
                "a JSON Schema cannot require one time zone",
                "use Timezone(...) for any aware datetime and convert it in the tool",
            )
        else:
            raise self.refuse(f"{item!r}", "a JSON Schema cannot express it")

    def _field_info(self, info: Any, as_default: bool) -> None:
        blank = type(info)()
        for attr in getattr(type(info), "__slots__", ()):
            if attr.startswith("_") or attr in _FIELD_HONOURED:
                continue
            value = getattr(info, attr, None)
            if attr in ("validation_alias", "serialization_alias") and value == info.alias:
                continue  # (what alias= sets)
            if value != getattr(blank, attr, None):
                raise self.refuse(
                    f"Field({attr}={value!r})",
                    "it has no meaning for a tool's argument",
                    "remove it (alias= names the argument)",
                )
        undefined = _undefined()
        if info.default is not undefined or info.default_factory is not None:
            if not as_default:
                raise self.refuse(
                    "a Field default inside Annotated",
                    "the parameter's default is the one the function gets",
                    "write the default in the signature: x: Annotated[int, Field(ge=1)] = 10",
                )
            if info.default is not undefined:
                self.default = info.default
            else:
                self.default_factory = info.default_factory
        if info.alias is not None:
            self.alias = info.alias
        for attr in ("title", "description", "examples"):
            value = getattr(info, attr)
            if value is not None:
                self.meta[attr] = value
        extra = info.json_schema_extra
        if callable(extra):
            raise self.refuse(
                "Field(json_schema_extra=<a function>)",
                "only a dict of keywords can be added to the schema",
                "pass json_schema_extra as a dict",
            )
        if extra:
            self.extra_schema.update(extra)
        if info.deprecated:
            self.extra_schema["deprecated"] = True
        for item in info.metadata:
            if not self.add(item):
                raise self.refuse(f"{item!r} in a Field", "it is not a constraint mcp-trio knows")

    def _pydantic_metadata(self, item: Any) -> None:
        name = type(item).__name__
        if name == "Strict":
            if not item.strict:
                raise self.refuse(
                    "Strict(False)",
                    "tool arguments are always checked strictly, as JSON Schema does",
                    "accept a union of the types you want (int | str) and convert in the tool",
                )
            return
        if name == "AllowInfNan":
            if item.allow_inf_nan:
                raise self.refuse("AllowInfNan(True)", "JSON has no infinities or NaN", "remove it")
            return
        if _is_grouped(item):  # (StringConstraints and the like)
            for part in item:
                self.add(part)
            return
        if name == "_PydanticGeneralMetadata":
            for key, value in vars(item).items():
                if value is None:
                    continue
                if key == "pattern":
                    self.meta["pattern"] = value if isinstance(value, str) else value.pattern
                elif key == "strict" and value:
                    continue
                elif not (key == "allow_inf_nan" and not value):
                    raise self.refuse(f"{key}={value!r}", "a JSON Schema cannot express it")
            return
        raise self.refuse(f"{item!r}", "it is not a constraint mcp-trio knows")

    def build(self) -> msgspec.Meta | None:
        meta = dict(self.meta)
        if self.extra_schema:
            meta["extra_json_schema"] = self.extra_schema
        if not meta:
            return None
        try:
            return msgspec.Meta(**meta)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{self.where}: invalid constraint ({exc})") from None


def _is_grouped(item: Any) -> bool:
    module = sys.modules.get("annotated_types")
    grouped = getattr(module, "GroupedMetadata", None) if module is not None else None
    return grouped is not None and isinstance(item, grouped)


def declare(hint: Any, default: Any, where: str) -> Declared:
    """``hint`` (and a pydantic ``Field`` default) as msgspec should see it.

    ``where`` names the parameter in errors (``"parameter 'limit' of tool f"``).
    """
    declared = Declared(_translate(hint, where, set()))
    if is_field_info(default):
        collector = _Collector(where)
        collector.add(default, as_default=True)
        meta = collector.build()
        if meta is not None:
            declared.hint = typing.Annotated[declared.hint, meta]
        declared.alias = collector.alias
        declared.default = collector.default
        declared.default_factory = collector.default_factory
    alias = top_alias(hint)
    if alias is not None:
        declared.alias = alias
    return declared


def top_alias(hint: Any) -> str | None:
    """The ``alias`` of a pydantic ``Field`` in ``hint``'s own ``Annotated``."""
    alias = None
    while typing.get_origin(hint) is typing.Annotated:
        for item in hint.__metadata__:
            if is_field_info(item) and item.alias is not None:
                alias = item.alias
        hint = hint.__origin__
    return alias


def translate(tp: Any, where: str) -> Any:
    """``tp`` with the constraints of its ``Annotated`` s as `msgspec.Meta` (a return type)."""
    return _translate(tp, where, set())


_CONSTRAINTS = ("gt", "ge", "lt", "le", "multiple_of", "pattern", "min_length", "max_length", "tz")


def _is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _push_down(tp: Any, constraints: dict[str, Any], where: str) -> Any:
    """The optional type ``tp`` with ``constraints`` on each of its members but None."""
    try:
        meta = msgspec.Meta(**constraints)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{where}: invalid constraint ({exc})") from None
    members = tuple(arg if arg is type(None) else typing.Annotated[arg, meta] for arg in typing.get_args(tp))
    return typing.Union[members]  # noqa: UP007 - a tuple of types


def _translate(tp: Any, where: str, seen: set[int]) -> Any:
    if typing.get_origin(tp) is typing.Annotated:
        inner = _translate(tp.__origin__, where, seen)
        collector = _Collector(where)
        kept: list[Any] = []
        for item in tp.__metadata__:
            if isinstance(item, msgspec.Meta) or not collector.add(item):
                kept.append(item)
        if _is_optional(inner):
            # (Annotated[int | None, Field(ge=1)]: the bound is for the int, as pydantic reads it)
            pushed = {key: collector.meta.pop(key) for key in _CONSTRAINTS if key in collector.meta}
            if pushed:
                inner = _push_down(inner, pushed, where)
        meta = collector.build()
        if meta is None and inner is tp.__origin__:
            return tp
        if meta is not None:
            kept.append(meta)
        if not kept:
            return inner
        return typing.Annotated[(inner, *kept)]
    args = typing.get_args(tp)
    origin = typing.get_origin(tp)
    if not args or origin is typing.Literal:
        _check_fields(tp, where, seen)
        return tp
    new_args = tuple(arg if arg is Ellipsis else _translate(arg, where, seen) for arg in args)
    if all(new is old for new, old in zip(new_args, args, strict=True)):
        return tp
    if origin is typing.Union or origin is types.UnionType:
        return typing.Union[new_args]  # noqa: UP007 - a tuple of types
    if isinstance(tp, types.GenericAlias):
        return types.GenericAlias(typing.cast(type, origin), new_args)
    copy_with = getattr(tp, "copy_with", None)
    if copy_with is not None:
        return copy_with(new_args)
    return tp  # pragma: no cover - a generic form this walk does not know


def _check_fields(tp: Any, where: str, seen: set[int]) -> None:
    """Refuse foreign constraints in the fields of a nested named type."""
    if not isinstance(tp, type) or id(tp) in seen:
        return
    seen.add(id(tp))
    is_named = (
        dataclasses.is_dataclass(tp)
        or issubclass(tp, msgspec.Struct)
        or typing.is_typeddict(tp)
        or (issubclass(tp, tuple) and hasattr(tp, "_fields"))
    )
    if not is_named:
        return
    try:
        hints = typing.get_type_hints(tp, include_extras=True)
    except Exception:  # (msgspec reports what it cannot resolve)
        return
    for field, hint in hints.items():
        field_where = f"{where}: field {field!r} of {tp.__qualname__}"
        translated = _translate(hint, field_where, seen)
        if translated is not hint:
            raise TypeError(
                f"{field_where} uses constraints that only msgspec.Meta can express inside a nested "
                f"type (mcp-trio rewrites a tool's parameters, not the fields of their types); "
                f"write Annotated[..., msgspec.Meta(...)] there"
            )
