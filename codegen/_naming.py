"""The normalizer rules that prepare names and docstrings for the printer.

Rule a1 flattens inline ``allOf`` objects, rule a gives every inline object a
stable ``<Owner><PropertyPath>`` title (instead of dcg's numbered names) and
:func:`collect_field_docs` moves property descriptions into
``Normalized.field_docs`` so the post-process prints them as docstrings.  They
run last (see ``RULES`` in :mod:`._normalize`); letters as in ``docs/codegen.md``.
"""

from __future__ import annotations

import copy
import re

from ._schema import NormalizeError, Schema, SchemaView, _walk_defs


def rule_a1_flatten_inline_allof(ctx: SchemaView) -> bool:
    """(a1) Error responses refine ``Error`` with ``allOf: [Error, {code: const}]``;
    dcg prints these as ``Error1``, ``Error2``, ... numbered by order of
    appearance.  Flatten each inline ``allOf`` into one object so rule (a) can
    name it after its owner."""
    changed = False
    for _owner, path, node in _walk_defs(ctx):
        if not path or "allOf" not in node:
            continue
        merged: Schema = {"type": "object", "properties": {}}
        required: list[str] = []
        for part in node["allOf"]:
            part = ctx.resolve(part)
            if part.get("type") != "object":
                raise NormalizeError(f"cannot flatten non-object allOf member {part!r}")
            merged["properties"].update(copy.deepcopy(part.get("properties", {})))
            required += [r for r in part.get("required", []) if r not in required]
            if "additionalProperties" in part:
                merged["additionalProperties"] = part["additionalProperties"]
        if required:
            merged["required"] = sorted(required)
        if "description" in node:
            merged["description"] = node["description"]
        node.clear()
        node.update(merged)
        changed = True
    return changed


def _name_part(segment: str) -> str:
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", segment) if p]
    return "".join(p[0].upper() + p[1:] for p in parts)


def rule_a_title_inline_objects(ctx: SchemaView) -> bool:
    """(a) dcg names inline objects ``Params``, ``Params1`` ... ``Params28``,
    ``Meta1`` (clashing with ``msgspec.Meta``), ``Roots``, ``Tools``: numbered,
    order-dependent names that change between revisions.  Give each inline
    object that becomes a Struct the title ``<Owner><PropertyPath>``
    (``CallToolRequestParams``, ``ClientCapabilitiesRoots``) for
    ``--use-title-as-name``."""
    changed = False
    used: dict[str, str] = {name: name for name in ctx.defs}
    for owner, path, node in _walk_defs(ctx):
        if not path or not node.get("properties"):
            continue
        parts = [owner]
        i = 0
        while i < len(path):
            key = path[i]
            if key == "properties":
                parts.append(_name_part(path[i + 1]))
                i += 2
            elif key == "items":
                parts.append("Item")
                i += 1
            elif key == "additionalProperties":
                parts.append("Value")
                i += 1
            else:  # anyOf/oneOf/allOf member
                parts.append(f"Option{int(path[i + 1]) + 1}")
                i += 2
        title = "".join(parts)
        where = owner + "".join(f"/{p}" for p in path)
        if title in used and used[title] != where:
            raise NormalizeError(f"title {title} for {where} clashes with {used[title]}")
        used[title] = where
        node["title"] = title
        changed = True
    return changed


def collect_field_docs(ctx: SchemaView) -> bool:
    """Move property descriptions out of the schema into ``field_docs``.

    dcg would print each as ``Annotated[T, Meta(description=...)]``: objects
    built at import time (about half the import cost of a module).  The
    post-process prints them as attribute docstrings instead, which cost
    nothing at run time.
    """
    changed = False
    for name, node in ctx.defs.items():
        # Definitions printed as type aliases (`RequestId`, `Cursor`, `EmptyResult`)
        # would carry their description as `Annotated[T, Meta(description=...)]`.
        if "properties" in node or "allOf" in node or "description" not in node:
            continue
        description = node.pop("description")
        changed = True
        if ctx.ref_name(node) is None:  # a pure `$ref` alias repeats its target's doc
            ctx.result.field_docs[("", name)] = description
    # `GetTaskResult = allOf[Result, Task]` prints Task's fields: document them too.
    for name, node in ctx.defs.items():
        if "allOf" in node and "properties" not in node:
            for prop, sub in ctx.properties(node).items():
                if "description" in sub:
                    ctx.result.field_docs[(name, prop)] = sub["description"]
    for owner, path, node in _walk_defs(ctx):
        if not node.get("properties"):
            continue
        class_name = owner if not path else node.get("title")
        for prop, sub in node["properties"].items():
            description = sub.pop("description", None)
            if description is None:
                continue
            changed = True
            if class_name is not None:
                ctx.result.field_docs[(class_name, prop)] = description
    return changed
