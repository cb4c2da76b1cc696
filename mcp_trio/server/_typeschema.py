"""What :mod:`mcp_trio.server._signature` reads from a tool function: its annotations
and ``Args:`` docstring, JSON Schemas of its types, and facts about those types.

* The object that describes a callable is found through partials, bound and
  static/class methods, classes (``__init__``) and callable instances (``__call__``).
* A type's schema is self-contained: the top level inline (never a lone ``$ref``,
  unless the type is recursive), named types in ``$defs`` (``#/$defs/{name}``).
* `inline_refs` writes such a schema out without ``$ref`` (what a server advertises
  unless it keeps them), recursive types excepted.
* A default is shown only when it survives a JSON round trip unchanged
  (`_json_default` returns `_MISSING` otherwise).
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect as mi

_REF_TEMPLATE = "#/$defs/{name}"
_MISSING: Any = object()


# --------------------------------------------------------------------------- #
# Introspection helpers
# --------------------------------------------------------------------------- #


def _describe(fn: Any) -> str:
    if isinstance(fn, functools.partial):
        return f"functools.partial({_describe(fn.func)})"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if name is None:
        name = type(fn).__qualname__
    return f"`{name}`"


def _annotation_source(fn: Any) -> Any:
    """The object whose annotations and docstring describe ``fn``'s parameters."""
    while True:
        if isinstance(fn, functools.partial):
            fn = fn.func
        elif isinstance(fn, types.MethodType):
            fn = fn.__func__
        elif isinstance(fn, (staticmethod, classmethod)):
            fn = fn.__func__
        else:
            break
    if inspect.isclass(fn):
        return fn.__init__
    if not (inspect.isfunction(fn) or inspect.isbuiltin(fn)) and callable(fn):
        call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's method itself
        if call is not None:
            return call
    return fn


_SECTION_RE = re.compile(
    r"^(\s*)(?:Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments"
    r"|Other Parameters):\s*$"
)
_ENTRY_RE = re.compile(r"^\*{0,2}([A-Za-z_]\w*)(?:\s*\(.*?\))?\s*:\s*(.*)$")


def _docstring_params(doc: str | None) -> dict[str, str]:
    """Parameter descriptions from the ``Args:`` sections of a Google docstring."""
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, list[str]] = {}
    i = 0
    while i < len(lines):
        section = _SECTION_RE.match(lines[i])
        i += 1
        if section is None:
            continue
        base = len(section.group(1))
        entry_indent: int | None = None
        current: list[str] | None = None
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if not stripped:
                i += 1
                continue
            indent = len(line) - len(line.lstrip())
            if indent <= base:
                break
            if entry_indent is None or indent <= entry_indent:
                entry_indent = indent
                entry = _ENTRY_RE.match(stripped)
                if entry is None:
                    current = None
                else:
                    current = found[entry.group(1)] = []
                    if entry.group(2):
                        current.append(entry.group(2))
            elif current is not None:
                current.append(stripped)
            i += 1
    return {name: " ".join(parts) for name, parts in found.items() if parts}


def _strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = tp.__origin__
    return tp


def _has_description(tp: Any) -> bool:
    while typing.get_origin(tp) is typing.Annotated:
        for meta in tp.__metadata__:
            if isinstance(meta, msgspec.Meta) and meta.description is not None:
                return True
        tp = tp.__origin__
    return False


def _json_default(value: Any) -> Any:
    """``value`` as JSON builtins, or `_MISSING` when JSON cannot carry it exactly."""
    try:
        plain = msgspec.to_builtins(value)
        decoded = msgspec.json.decode(msgspec.json.encode(plain))
    except (TypeError, ValueError, OverflowError, msgspec.MsgspecError):
        return _MISSING
    return decoded if _json_equal(plain, decoded) else _MISSING


def _json_equal(plain: Any, decoded: Any) -> bool:
    """Whether ``plain`` survived a JSON round trip (non-finite floats and
    non-string keys do not)."""
    if isinstance(plain, (list, tuple)):
        return (
            isinstance(decoded, list)
            and len(plain) == len(decoded)
            and all(_json_equal(a, b) for a, b in zip(plain, decoded, strict=False))
        )
    if isinstance(plain, dict):
        return (
            isinstance(decoded, dict)
            and all(isinstance(k, str) for k in plain)
            and plain.keys() == decoded.keys()
            and all(_json_equal(v, decoded[k]) for k, v in plain.items())
        )
    return type(plain) is type(decoded) and plain == decoded


def _inline_top(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Replace a top-level ``$ref`` by its definition, keeping ``$defs`` tidy."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or len(schema) != 1:
        return schema
    name = ref.rsplit("/", 1)[-1]
    top = dict(defs[name])
    rest = {k: v for k, v in defs.items() if k != name}
    if ref in msgspec.json.encode([top, rest]).decode():
        # Recursive type: other definitions still point at it.
        rest[name] = defs[name]
    defs.clear()
    defs.update(rest)
    return top


def _schema_for(tp: Any) -> dict[str, Any]:
    """A self-contained JSON Schema for ``tp``: the top level inline, ``$defs`` after."""
    (schema,), defs = msgspec.json.schema_components([tp], ref_template=_REF_TEMPLATE)
    schema = _inline_top(schema, defs)
    if defs:
        schema = {**schema, "$defs": defs}
    return schema


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


_SEQUENCE_ORIGINS = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Sequence,
    collections.abc.Iterable,
    collections.abc.Collection,
)


def _mentions_content(tp: Any, is_content: Callable[[Any], bool]) -> bool:
    if is_content(tp):
        return True
    bare = _strip_annotated(tp)
    if bare is not tp and is_content(bare):
        return True
    origin = typing.get_origin(bare)
    if origin in (typing.Union, types.UnionType):
        return any(_mentions_content(arg, is_content) for arg in typing.get_args(bare))
    if origin in _SEQUENCE_ORIGINS:
        return any(_mentions_content(arg, is_content) for arg in typing.get_args(bare) if arg is not Ellipsis)
    return False


def _has_non_str_keys(info: mi.Type, seen: set[int] | None = None) -> bool:
    """Whether values of this type can contain mappings with non-string keys."""
    if seen is None:
        seen = set()
    if id(info) in seen:
        return False
    seen.add(id(info))
    if isinstance(info, mi.Metadata):
        return _has_non_str_keys(info.type, seen)
    if isinstance(info, mi.DictType):
        key = info.key_type
        while isinstance(key, mi.Metadata):
            key = key.type
        if not isinstance(key, mi.StrType):
            return True
        return _has_non_str_keys(info.value_type, seen)
    if isinstance(info, mi.UnionType):
        return any(_has_non_str_keys(t, seen) for t in info.types)
    if isinstance(info, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
        return _has_non_str_keys(info.item_type, seen)
    if isinstance(info, mi.TupleType):
        return any(_has_non_str_keys(t, seen) for t in info.item_types)
    if isinstance(info, (mi.StructType, mi.DataclassType, mi.TypedDictType, mi.NamedTupleType)):
        return any(_has_non_str_keys(f.type, seen) for f in info.fields)
    if isinstance(info, mi.AnyType):
        return True
    return False


_DEFS_PREFIX = "#/$defs/"


def _def_name(ref: Any) -> str | None:
    if not isinstance(ref, str) or not ref.startswith(_DEFS_PREFIX):
        return None
    return ref[len(_DEFS_PREFIX) :].replace("~1", "/").replace("~0", "~")


def _refs_in(node: Any, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        name = _def_name(node.get("$ref"))
        if name is not None:
            found.add(name)
        for value in node.values():
            _refs_in(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs_in(value, found)
    return found


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``$ref`` to its ``$defs`` replaced by the definition, for
    hosts that cannot follow references.  A recursive type cannot be written out:
    the references to it stay, and ``$defs`` keeps its definition (alone).  Keywords
    next to a ``$ref`` (a description, a default) win over the definition's."""
    defs = schema.get("$defs")
    if not isinstance(defs, dict) or not defs:
        return schema
    edges = {name: _refs_in(body, set()) for name, body in defs.items()}

    def reaches(start: str) -> set[str]:
        seen: set[str] = set()
        todo = list(edges.get(start, ()))
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(edges.get(name, ()))
        return seen

    recursive = {name for name in defs if name in reaches(name)}

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            name = _def_name(node.get("$ref"))
            if name is not None and name in defs and name not in recursive:
                rest = {k: walk(v) for k, v in node.items() if k != "$ref"}
                return {**walk(defs[name]), **rest}
            return {k: walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    out = walk({k: v for k, v in schema.items() if k != "$defs"})
    kept_names = _refs_in(out, set())
    todo = list(kept_names)
    kept: dict[str, Any] = {}
    while todo:
        name = todo.pop()
        if name in kept or name not in defs:
            continue
        kept[name] = walk(defs[name])
        todo.extend(_refs_in(kept[name], set()))
    if kept:
        out["$defs"] = {name: kept[name] for name in defs if name in kept}
    return typing.cast("dict[str, Any]", out)
