"""The schema as the normalizer sees it: ``$ref`` resolution and walking.

:class:`SchemaView` holds a schema with its definitions and the
:class:`Normalized` result the rules fill in; the walkers yield every
sub-schema of a definition with its path.  Used by the rules, the registry and
the generator; knows nothing about any rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NormalizeError", "Normalized", "Schema", "SchemaView"]

Schema = dict[str, Any]


class NormalizeError(Exception):
    """The schema has a shape no rule knows how to handle."""


@dataclass
class Normalized:
    """Result of :func:`normalize`."""

    schema: Schema
    #: Schema definition name -> what takes its place in the generated module.
    replaced: dict[str, str] = field(default_factory=dict)
    #: Definitions a rule added -> why.
    added: dict[str, str] = field(default_factory=dict)
    #: (class name, wire field name) -> field description, moved out of the
    #: schema so fields get a docstring instead of a runtime ``Meta`` object.
    #: Type aliases use the key ("", alias name).
    field_docs: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Letters of the rules that changed something.
    applied: list[str] = field(default_factory=list)


class SchemaView:
    """A schema plus helpers to resolve its `$ref`s (rules and the registry use it)."""

    def __init__(self, schema: Schema, revision: str) -> None:
        self.revision = revision
        self.schema = schema
        if "$defs" in schema:
            self.defs_key = "$defs"
        elif "definitions" in schema:
            self.defs_key = "definitions"
        else:
            raise NormalizeError("schema has neither $defs nor definitions")
        self.defs: dict[str, Schema] = schema[self.defs_key]
        self.prefix = f"#/{self.defs_key}/"
        self.result = Normalized(schema=schema)

    def ref(self, name: str) -> Schema:
        return {"$ref": self.prefix + name}

    def ref_name(self, node: Any) -> str | None:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref: str = node["$ref"]
            if ref.startswith(self.prefix):
                return ref[len(self.prefix) :]
        return None

    def resolve(self, node: Schema) -> Schema:
        seen = 0
        while (name := self.ref_name(node)) is not None:
            node = self.defs[name]
            seen += 1
            if seen > 50:  # pragma: no cover - only on a cyclic alias
                raise NormalizeError(f"$ref cycle at {name}")
        return node

    def properties(self, node: Schema) -> dict[str, Schema]:
        """Properties of ``node`` after resolving ``$ref`` and ``allOf``."""
        node = self.resolve(node)
        props: dict[str, Schema] = {}
        for part in node.get("allOf", []):
            props.update(self.properties(part))
        props.update(node.get("properties", {}))
        return props

    def union_members(self, name: str) -> list[str]:
        """Names of the ``$ref`` members of a top-level union (or one-member alias)."""
        node = self.defs.get(name)
        if node is None:
            return []
        if (target := self.ref_name(node)) is not None:
            return [target]
        members = []
        for member in node.get("anyOf", []):
            target = self.ref_name(member)
            if target is None:
                raise NormalizeError(f"{name}: union member is not a $ref: {member!r}")
            members.append(target)
        return members


# --------------------------------------------------------------------------- walking

_SCHEMA_LIST_KEYS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SCHEMA_KEYS = ("additionalProperties", "items", "not", "contains")


def _children(node: Schema) -> Iterator[tuple[tuple[str, ...], Schema]]:
    """Direct sub-schemas of ``node`` with their path segment."""
    for name, sub in node.get("properties", {}).items():
        if isinstance(sub, dict):
            yield ("properties", name), sub
    for key in _SCHEMA_KEYS:
        sub = node.get(key)
        if isinstance(sub, dict):
            yield (key,), sub
        elif isinstance(sub, list):
            for i, item in enumerate(sub):
                if isinstance(item, dict):
                    yield (key, str(i)), item
    for key in _SCHEMA_LIST_KEYS:
        for i, item in enumerate(node.get(key, [])):
            if isinstance(item, dict):
                yield (key, str(i)), item


def _walk(node: Schema, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Schema]]:
    """All schemas under ``node`` (pre-order, ``node`` first)."""
    yield path, node
    for seg, sub in _children(node):
        yield from _walk(sub, path + seg)


def _walk_defs(ctx: SchemaView) -> Iterator[tuple[str, tuple[str, ...], Schema]]:
    for name, node in list(ctx.defs.items()):
        for path, sub in _walk(node):
            yield name, path, sub


def _open_object(description: str | None = None) -> Schema:
    node: Schema = {"type": "object", "additionalProperties": {}}
    if description:
        node["description"] = description
    return node


def _without_description(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _without_description(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_without_description(v) for v in node]
    return node


def _references(ctx: SchemaView) -> dict[str, list[str]]:
    """Definition name -> names of the definitions that ``$ref`` it."""
    refs: dict[str, list[str]] = {}
    for owner, _path, node in _walk_defs(ctx):
        target = ctx.ref_name(node)
        if target is not None and owner not in refs.setdefault(target, []):
            refs[target].append(owner)
    return refs
