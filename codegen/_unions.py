"""Facts about the schema's unions.

The message unions the registry is derived from, whether msgspec can decode
an ``anyOf`` (only tagged unions of objects, plus at most one non-object
member), and merging union members into one object (rules e and g).
"""

from __future__ import annotations

import copy

from ._schema import Schema, SchemaView

__all__ = [
    "INPUT_REQUEST_UNION",
    "MESSAGE_UNIONS",
    "NOTIFICATION_UNIONS",
    "REQUEST_UNIONS",
]

#: Unions of messages that the registry is derived from.
REQUEST_UNIONS = ("ClientRequest", "ServerRequest")
NOTIFICATION_UNIONS = ("ClientNotification", "ServerNotification")
#: 2026-07-28: server-to-client requests that travel inside a result.
INPUT_REQUEST_UNION = "InputRequest"
MESSAGE_UNIONS = (*REQUEST_UNIONS, *NOTIFICATION_UNIONS, INPUT_REQUEST_UNION)


def _const_tag(ctx: SchemaView, node: Schema) -> tuple[str, str] | None:
    """The (field, value) msgspec can tag ``node`` with, if any.

    dcg tags a Struct by a required string ``const`` property; ``jsonrpc`` is a
    const too but never the discriminating one.
    """
    node = ctx.resolve(node)
    props = node.get("properties", {})
    required = node.get("required", [])
    for key in ("method", "type", "mode"):
        sub = props.get(key)
        if isinstance(sub, dict) and isinstance(sub.get("const"), str) and key in required:
            return key, sub["const"]
    return None


def _is_decodable_union(ctx: SchemaView, members: list[Schema]) -> bool:
    """Whether msgspec can decode ``anyOf`` ``members``.

    Object members must all be tagged by the same field with distinct values;
    at most one non-object member (e.g. an array) may sit beside them.
    """
    tags: list[tuple[str, str]] = []
    others = 0
    for member in members:
        target = ctx.resolve(member)
        if "anyOf" in target:
            if not _is_decodable_union(ctx, target["anyOf"]):
                return False
            for sub in target["anyOf"]:
                tag = _const_tag(ctx, sub)
                if tag is None:
                    return False
                tags.append(tag)
            continue
        is_object = target.get("type") == "object" and "properties" in target
        if not is_object:
            others += 1
            continue
        tag = _const_tag(ctx, target)
        if tag is None:
            return len(members) == 1
        tags.append(tag)
    if len({t[0] for t in tags}) > 1 or len({t[1] for t in tags}) != len(tags):
        return False
    return others <= 1 or not tags


def _merge_objects(ctx: SchemaView, names: list[str], description: str) -> Schema:
    """One object with the properties of all ``names``; required = common ones."""
    merged: dict[str, Schema] = {}
    required: set[str] | None = None
    for name in names:
        node = ctx.resolve(ctx.defs[name])
        for prop, sub in node.get("properties", {}).items():
            merged.setdefault(prop, copy.deepcopy(sub))
        req = set(node.get("required", []))
        required = req if required is None else required & req
    out: Schema = {"type": "object", "description": description, "properties": merged}
    if required:
        out["required"] = sorted(required)
    return out
