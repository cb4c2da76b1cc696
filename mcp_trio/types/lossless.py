"""Lossless decoding and encoding: the members a type does not declare are kept and re-emitted.

The ordinary decoders (the session's, and ``msgspec.json.decode(data, type=T)``)
ignore every member a Struct does not declare, so a message that a newer peer
sent loses its new fields when it is decoded with an older revision's types and
encoded again.  That is right for an endpoint, and it is the cheapest path.  A
proxy or a gateway that forwards what it decodes uses this module instead:

* :func:`decode` decodes as the ordinary decoder does (the same validation, the
  same errors) and keeps, on each Struct it makes, the members of its JSON
  object that the Struct does not declare, at any depth (an extra member of a
  ``Tool`` inside a ``tools/list`` result, of a content block, of ``params``);
* :func:`encode` encodes a value and puts those members back where they were,
  so ``encode(decode(data, T))`` is ``data`` as a JSON value;
* :func:`extras` reads (and edits) the members kept on one Struct, and
  :func:`replace` is ``msgspec.structs.replace`` that keeps them.

Members are kept per Struct instance: a Struct made anew (``replace`` of
msgspec, ``copy.copy``, a constructor) has none.  Defaults the wire needs are
always encoded (``jsonrpc``, and ``resultType`` from 2026-07-28 on: a result
decoded without it is encoded with ``"complete"``, which the specification says
its absence means).

Cost: decoding parses the JSON twice (typed, then as plain JSON) and walks the
Structs; encoding walks them and rebuilds as dicts only the objects that carry
members.  Measured (``benchmarks/lossless_codec.py``): about 3 times the
ordinary decode and 4 to 5 times the ordinary encode (see the types guide).
The generated Structs (and those of :mod:`mcp_trio.types.ext_tasks`) are
declared with ``dict=True`` to carry the members, which costs the ordinary path
nothing measurable; a Struct of your own needs ``dict=True`` too.
"""

from __future__ import annotations

from typing import Any, TypeVar, overload

import msgspec
import msgspec.inspect

from ._wire import UNSET, JSONObject

__all__ = ["decode", "encode", "extras", "replace"]

T = TypeVar("T")
S = TypeVar("S", bound=msgspec.Struct)

# Where a Struct instance keeps its unknown members (its ``__dict__``).
_KEY = "_mcp_trio_extras"

_json = msgspec.json.Decoder()
_encoder = msgspec.json.Encoder()
_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


class _Plan:
    """What the walks need to know of one Struct class, computed once."""

    __slots__ = ("deep", "fields", "names", "omit_defaults", "tag")

    def __init__(self, cls: type[msgspec.Struct]) -> None:
        config = cls.__struct_config__
        #: (attribute, wire name) of every field, in encoding order.
        self.fields = tuple(zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True))
        names = {wire for _, wire in self.fields}
        if config.tag_field is not None:
            names.add(config.tag_field)
        #: Every member name the class declares, its tag included.
        self.names = frozenset(names)
        #: The tag member, or None.
        self.tag = None if config.tag_field is None else (config.tag_field, config.tag)
        self.omit_defaults = config.omit_defaults or config.array_like
        info = msgspec.inspect.type_info(cls)
        assert isinstance(info, msgspec.inspect.StructType)
        deep = {f.name for f in info.fields if _holds_struct(f.type)}
        #: The fields whose values may hold a Struct: the only ones the walks enter.
        self.deep = tuple((attr, wire) for attr, wire in self.fields if attr in deep)


_plans: dict[type[msgspec.Struct], _Plan] = {}


def _plan(cls: type[msgspec.Struct]) -> _Plan:
    plan = _plans.get(cls)
    if plan is None:
        plan = _plans[cls] = _Plan(cls)
    return plan


def _holds_struct(t: msgspec.inspect.Type) -> bool:
    if isinstance(t, msgspec.inspect.StructType):
        return True
    if isinstance(t, msgspec.inspect.UnionType):
        return any(_holds_struct(member) for member in t.types)
    if isinstance(t, msgspec.inspect.DictType):
        return _holds_struct(t.value_type)
    if isinstance(t, msgspec.inspect.CollectionType):  # list, tuple[T, ...], set, frozenset
        return _holds_struct(t.item_type)
    if isinstance(t, msgspec.inspect.TupleType):
        return any(_holds_struct(item) for item in t.item_types)
    return False


def _decoder(type_: Any) -> msgspec.json.Decoder[Any]:
    try:
        return _decoders[type_]
    except KeyError:
        decoder = _decoders[type_] = msgspec.json.Decoder(type_)
        return decoder
    except TypeError:  # an unhashable type expression: no cache
        return msgspec.json.Decoder(type_)


def _own(value: msgspec.Struct) -> dict[str, Any]:
    try:
        return vars(value)
    except TypeError:
        cls = type(value)
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__} cannot keep unknown members: "
            f"declare it with dict=True (class {cls.__name__}(msgspec.Struct, dict=True))"
        ) from None


def _keep(value: object, raw: object) -> None:
    """Walk a decoded value beside the plain JSON it came from; keep each Struct's unknown members."""
    if isinstance(value, msgspec.Struct):
        if not isinstance(raw, dict):  # an array_like Struct: nothing is unknown
            return
        plan = _plan(type(value))
        if not plan.names.issuperset(raw):
            _own(value)[_KEY] = {key: member for key, member in raw.items() if key not in plan.names}
        for attr, wire in plan.deep:
            if wire in raw:
                _keep(getattr(value, attr), raw[wire])
    elif isinstance(value, list | tuple):
        if isinstance(raw, list):
            for item, raw_item in zip(value, raw, strict=False):
                _keep(item, raw_item)
    elif isinstance(value, dict) and isinstance(raw, dict):
        for key, item in value.items():
            if key in raw:
                _keep(item, raw[key])


def _emit(value: object) -> object:
    """``value`` itself when nothing inside it kept members, else a copy where each Struct
    that kept some (or holds one that did) is a dict of its members, those included."""
    if isinstance(value, msgspec.Struct):
        plan = _plan(type(value))
        changed: dict[str, object] | None = None
        for attr, _ in plan.deep:
            child = getattr(value, attr)
            new = _emit(child)
            if new is not child:
                changed = changed or {}
                changed[attr] = new
        own = getattr(value, "__dict__", None)
        kept: JSONObject | None = None if own is None else own.get(_KEY)
        if not kept and changed is None:
            return value
        out: dict[str, object]
        if plan.omit_defaults:  # let msgspec decide which members to write
            base = msgspec.structs.replace(value, **changed) if changed else value
            built = msgspec.to_builtins(base)
            if not isinstance(built, dict):  # array_like
                return built
            out = built
        else:
            out = {} if plan.tag is None else {plan.tag[0]: plan.tag[1]}
            for attr, wire in plan.fields:
                member = changed.get(attr, UNSET) if changed else UNSET
                if member is UNSET:
                    member = getattr(value, attr)
                if member is not UNSET:
                    out[wire] = member
        if kept:
            for key, member in kept.items():
                if key not in plan.names:
                    out.setdefault(key, member)
        return out
    if isinstance(value, list | tuple):
        items = [_emit(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    if isinstance(value, dict):
        entries = {key: _emit(item) for key, item in value.items()}
        if any(entries[key] is not item for key, item in value.items()):
            return entries
        return value
    return value


@overload
def decode(data: bytes | str, type: type[T]) -> T: ...
@overload
def decode(data: bytes | str, type: Any) -> Any: ...
def decode(data: bytes | str, type: Any) -> Any:
    """Decode ``data`` as ``type`` (a Struct, a union, ``list[...]`` ...), keeping unknown members.

    Validation and errors (``msgspec.ValidationError``, ``msgspec.DecodeError``)
    are the ordinary decoder's.  Raises ``TypeError`` when a Struct that has
    unknown members to keep is not declared with ``dict=True``.
    """
    value = _decoder(type).decode(data)
    _keep(value, _json.decode(data))
    return value


def encode(value: object) -> bytes:
    """Encode ``value`` as JSON with the unknown members its Structs kept (see :func:`decode`)."""
    return _encoder.encode(_emit(value))


def extras(value: msgspec.Struct) -> JSONObject:
    """The unknown members kept on ``value`` (not those of the Structs inside it).

    The dict is the instance's own: change it to change what :func:`encode`
    emits.  A member the Struct declares is never emitted from here.  Raises
    ``TypeError`` for a Struct not declared with ``dict=True``.
    """
    own = _own(value)
    kept: JSONObject | None = own.get(_KEY)
    if kept is None:
        kept = own[_KEY] = {}
    return kept


def replace(value: S, /, **changes: Any) -> S:
    """``msgspec.structs.replace`` that keeps ``value``'s unknown members (a copy of them)."""
    new = msgspec.structs.replace(value, **changes)
    try:
        kept = vars(value).get(_KEY)
    except TypeError:
        return new
    if kept:
        _own(new)[_KEY] = dict(kept)
    return new
