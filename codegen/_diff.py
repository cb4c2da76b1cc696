"""What changed between two protocol revisions (``codegen --diff OLD NEW``).

Read from two ``schema.json`` files, the way the generated modules are made from them:

* requests and notifications: the method registry each generated module's ``METHODS``
  is printed from (:func:`._registry.derive` over the normalized schema), so a method's
  direction, params, results and gating capability are the ones the library uses;
* capabilities: every key path of ``ClientCapabilities`` and ``ServerCapabilities``;
* definitions added and removed, and in the definitions both revisions have, the fields
  (inline objects' fields as dotted paths) added, removed, retyped, made required or
  optional, as the official schema declares them (before the normalizer's rules);
* enum values added to or removed from an enum both revisions have.

:func:`diff` returns a :class:`RevisionDiff`; :meth:`RevisionDiff.as_json` and
:func:`render_text` print it; :func:`render_page` makes the documentation page of every
consecutive pair of revisions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ._normalize import normalize
from ._registry import Entry, derive
from ._schema import Schema, SchemaView

__all__ = ["FieldChange", "MethodChange", "RevisionDiff", "diff", "render_page", "render_text"]

_CAPABILITY_ROOTS = (("client", "ClientCapabilities"), ("server", "ServerCapabilities"))


@dataclass(frozen=True)
class MethodChange:
    """A request or notification added, removed, or changed in one respect (``what``)."""

    method: str
    what: str  # "added" | "removed" | "direction" | "params" | "results" | "capability"
    old: str | None
    new: str | None
    #: The registry row of an added method (the new one) or a removed one (the old one).
    entry: Entry | None = None


@dataclass(frozen=True)
class FieldChange:
    """A field of a definition both revisions have (``path`` is dotted inside inline objects)."""

    definition: str
    path: str
    what: str  # "added" | "removed" | "retyped" | "required" | "optional"
    old: str | None
    new: str | None


@dataclass
class RevisionDiff:
    old: str
    new: str
    requests: list[MethodChange] = field(default_factory=list)
    notifications: list[MethodChange] = field(default_factory=list)
    #: side ("client" | "server") and dotted path of each capability key.
    capabilities_added: list[tuple[str, str]] = field(default_factory=list)
    capabilities_removed: list[tuple[str, str]] = field(default_factory=list)
    definitions_added: list[str] = field(default_factory=list)
    definitions_removed: list[str] = field(default_factory=list)
    fields: list[FieldChange] = field(default_factory=list)
    #: where (definition or definition.field) -> (values added, values removed)
    enums: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not any(
            (
                self.requests,
                self.notifications,
                self.capabilities_added,
                self.capabilities_removed,
                self.definitions_added,
                self.definitions_removed,
                self.fields,
                self.enums,
            )
        )

    def as_json(self) -> dict[str, Any]:
        def methods(changes: list[MethodChange]) -> list[dict[str, Any]]:
            out: list[dict[str, Any]] = []
            for c in changes:
                item: dict[str, Any] = {"method": c.method, "change": c.what}
                if c.entry is not None:
                    item["direction"] = c.entry.direction
                    item["params"] = c.entry.params
                    item["results"] = list(c.entry.results)
                    item["capability"] = ".".join(c.entry.capability) if c.entry.capability else None
                else:
                    item["old"], item["new"] = c.old, c.new
                out.append(item)
            return out

        return {
            "old": self.old,
            "new": self.new,
            "requests": methods(self.requests),
            "notifications": methods(self.notifications),
            "capabilities": {
                "added": [{"side": s, "path": p} for s, p in self.capabilities_added],
                "removed": [{"side": s, "path": p} for s, p in self.capabilities_removed],
            },
            "definitions": {"added": self.definitions_added, "removed": self.definitions_removed},
            "fields": [
                {"definition": f.definition, "field": f.path, "change": f.what, "old": f.old, "new": f.new}
                for f in self.fields
            ],
            "enums": [
                {"where": where, "added": added, "removed": removed}
                for where, (added, removed) in self.enums.items()
            ],
        }


# --------------------------------------------------------------------------- reading a schema


def _type(view: SchemaView, node: Any) -> str:
    """A short, stable spelling of a property's type (enum values are compared apart)."""
    if not isinstance(node, dict) or not node:
        return "any"
    if (name := view.ref_name(node)) is not None:
        return name
    if "const" in node:
        return json.dumps(node["const"])
    for key, sep in (("anyOf", " | "), ("oneOf", " | "), ("allOf", " & ")):
        if key in node:
            return sep.join(_type(view, part) for part in node[key])
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if "enum" in node:
        return f"enum of {kind or 'values'}"
    if kind == "array":
        return f"array of {_grouped(_type(view, node.get('items')))}"
    if kind == "object":
        extra = node.get("additionalProperties")
        if node.get("properties"):
            return "object"
        if isinstance(extra, dict) and extra:
            return f"map of {_grouped(_type(view, extra))}"
        return "object"
    return str(kind) if kind else "any"


def _grouped(spelled: str) -> str:
    return f"({spelled})" if " | " in spelled or " & " in spelled else spelled


def _required(view: SchemaView, node: Schema) -> set[str]:
    node = view.resolve(node)
    required = set(node.get("required", []))
    for part in node.get("allOf", []):
        required |= _required(view, part)
    return required


def _fields(view: SchemaView, node: Schema, prefix: str = "") -> dict[str, tuple[str, bool]]:
    """Dotted field path -> (type, required), into inline objects (not ``$ref``\\s)."""
    out: dict[str, tuple[str, bool]] = {}
    required = _required(view, node)
    for name, sub in view.properties(node).items():
        path = prefix + name
        out[path] = (_type(view, sub), name in required)
        if _inline_object(view, sub):
            out.update(_fields(view, sub, path + "."))
    return out


def _inline_object(view: SchemaView, node: Any) -> bool:
    return isinstance(node, dict) and view.ref_name(node) is None and bool(node.get("properties"))


def _object_ref(view: SchemaView, node: Any) -> str | None:
    """The definition ``node`` refers to, when that is an object with properties."""
    name = view.ref_name(node)
    return name if name is not None and bool(view.properties(view.defs[name])) else None


def _field_node(view: SchemaView, node: Schema, path: str) -> Any:
    for part in path.split("."):
        node = view.properties(node).get(part, {})
    return node


def _moved_out(
    a: SchemaView,
    node_a: Schema,
    fa: dict[str, tuple[str, bool]],
    b: SchemaView,
    node_b: Schema,
    fb: dict[str, tuple[str, bool]],
) -> set[str]:
    """Fields whose inline object became a definition (or the reverse), as in 2025-11-25's
    ``*RequestParams``: their fields are compared with the definition's, and the field is
    not reported retyped.  Fills ``fa``/``fb`` with the definition's fields in place."""
    moved: set[str] = set()
    for path in sorted(fa.keys() & fb.keys()):
        x, y = _field_node(a, node_a, path), _field_node(b, node_b, path)
        for inline_view, inline, ref_view, ref, fields in ((a, x, b, y, fb), (b, y, a, x, fa)):
            target = _object_ref(ref_view, ref)
            if _inline_object(inline_view, inline) and target is not None:
                moved.add(path)
                for sub, value in _fields(ref_view, ref_view.defs[target], path + ".").items():
                    fields.setdefault(sub, value)
    return moved


def _enums(view: SchemaView) -> dict[str, list[str]]:
    """Definition or ``definition.field`` -> its enum values."""
    found: dict[str, list[str]] = {}

    def visit(where: str, node: Any) -> None:
        if not isinstance(node, dict):
            return
        values = node.get("enum") or node.get("items", {}).get("enum")
        if isinstance(values, list):
            found[where] = [json.dumps(v) for v in values]
        if view.ref_name(node) is None:
            for name, sub in node.get("properties", {}).items():
                visit(f"{where}.{name}", sub)

    for name, node in view.defs.items():
        visit(name, node)
    return found


def _capabilities(view: SchemaView) -> set[tuple[str, str]]:
    paths: set[tuple[str, str]] = set()

    def visit(side: str, node: Schema, prefix: str, depth: int) -> None:
        if depth > 6:  # pragma: no cover - capability objects are a few levels deep
            return
        for name, sub in view.properties(node).items():
            paths.add((side, prefix + name))
            if isinstance(sub, dict):
                visit(side, sub, prefix + name + ".", depth + 1)

    for side, root in _CAPABILITY_ROOTS:
        if root in view.defs:
            visit(side, view.defs[root], "", 0)
    return paths


@dataclass(frozen=True)
class _Facts:
    view: SchemaView
    registry: dict[str, Entry]


def _facts(revision: str, schema: Schema) -> _Facts:
    normalized = normalize(schema, revision)
    registry = {e.method: e for e in derive(SchemaView(normalized.schema, revision))}
    return _Facts(view=SchemaView(schema, revision), registry=registry)


# --------------------------------------------------------------------------- comparing


def _describe(entry: Entry) -> str:
    sender = {"client": "client → server", "server": "server → client", "both": "either side"}
    parts = [sender[entry.direction]]
    if entry.params is not None:
        parts.append(f"params `{entry.params}`")
    if entry.results:
        parts.append("result `" + " | ".join(entry.results) + "`")
    if entry.capability is not None:
        parts.append("capability `" + ".".join(entry.capability) + "`")
    return "; ".join(parts)


def _method_changes(a: _Facts, b: _Facts, kind: str) -> list[MethodChange]:
    old, new = a.registry, b.registry
    changes: list[MethodChange] = []
    olds = {m: e for m, e in old.items() if e.kind == kind}
    news = {m: e for m, e in new.items() if e.kind == kind}
    for method in sorted(olds.keys() | news.keys()):
        x, y = olds.get(method), news.get(method)
        if x is None and y is not None:
            changes.append(MethodChange(method, "added", None, _describe(y), y))
        elif y is None and x is not None:
            changes.append(MethodChange(method, "removed", _describe(x), None, x))
        elif x is not None and y is not None:
            pairs = {
                "direction": (x.direction, y.direction),
                "params": (x.params or "none", y.params or "none"),
                "results": (" | ".join(x.results), " | ".join(y.results)),
                "capability": (
                    ".".join(x.capability or ()) or "none",
                    ".".join(y.capability or ()) or "none",
                ),
            }
            if x.params not in a.view.defs or y.params not in b.view.defs:
                # an inline params object (named after its request) is not a type of the
                # schema: what changed in it is under the request's fields
                del pairs["params"]
            for what, (before, after) in pairs.items():
                if before != after:
                    changes.append(MethodChange(method, what, before, after))
    return changes


def diff(old_revision: str, old_schema: Schema, new_revision: str, new_schema: Schema) -> RevisionDiff:
    """What changed from ``old_schema`` to ``new_schema`` (both parsed ``schema.json``)."""
    a, b = _facts(old_revision, old_schema), _facts(new_revision, new_schema)
    result = RevisionDiff(old=old_revision, new=new_revision)
    result.requests = _method_changes(a, b, "request")
    result.notifications = _method_changes(a, b, "notification")
    caps_a, caps_b = _capabilities(a.view), _capabilities(b.view)
    result.capabilities_added = sorted(caps_b - caps_a)
    result.capabilities_removed = sorted(caps_a - caps_b)
    defs_a, defs_b = a.view.defs, b.view.defs
    result.definitions_added = sorted(defs_b.keys() - defs_a.keys())
    result.definitions_removed = sorted(defs_a.keys() - defs_b.keys())
    capability_roots = {root for _side, root in _CAPABILITY_ROOTS}  # (their own section)
    for name in sorted(defs_a.keys() & defs_b.keys() - capability_roots):
        fa, fb = _fields(a.view, defs_a[name]), _fields(b.view, defs_b[name])
        moved = _moved_out(a.view, defs_a[name], fa, b.view, defs_b[name], fb)
        for path in sorted(fa.keys() | fb.keys()):
            x, y = fa.get(path), fb.get(path)
            if x is None and y is not None:
                result.fields.append(FieldChange(name, path, "added", None, _spell(y)))
            elif y is None and x is not None:
                result.fields.append(FieldChange(name, path, "removed", _spell(x), None))
            elif x is not None and y is not None:
                if x[0] != y[0] and path not in moved:
                    result.fields.append(FieldChange(name, path, "retyped", x[0], y[0]))
                if x[1] != y[1]:
                    what = "required" if y[1] else "optional"
                    result.fields.append(FieldChange(name, path, what, None, None))
    enums_a, enums_b = _enums(a.view), _enums(b.view)
    for where in sorted(enums_a.keys() & enums_b.keys()):
        added = [v for v in enums_b[where] if v not in enums_a[where]]
        removed = [v for v in enums_a[where] if v not in enums_b[where]]
        if added or removed:
            result.enums[where] = (added, removed)
    return result


def _spell(field_type: tuple[str, bool]) -> str:
    kind, required = field_type
    return kind if required else f"{kind} (optional)"


# --------------------------------------------------------------------------- printing


def _code(items: list[str]) -> str:
    return ", ".join(f"`{item}`" for item in items)


def _methods_text(title: str, changes: list[MethodChange]) -> list[str]:
    if not changes:
        return []
    lines = [f"### {title}", ""]
    for c in changes:
        if c.what == "added":
            lines.append(f"- added `{c.method}` ({c.new})")
        elif c.what == "removed":
            lines.append(f"- removed `{c.method}` (was {c.old})")
        else:
            lines.append(f"- `{c.method}`: {c.what} `{c.old}` → `{c.new}`")
    return [*lines, ""]


def _fields_text(changes: list[FieldChange]) -> list[str]:
    if not changes:
        return []
    lines = ["### Fields", ""]
    by_def: dict[str, list[FieldChange]] = {}
    for c in changes:
        by_def.setdefault(c.definition, []).append(c)
    for name, items in by_def.items():
        parts = []
        for c in items:
            if c.what == "added":
                parts.append(f"added `{c.path}`: `{c.new}`")
            elif c.what == "removed":
                parts.append(f"removed `{c.path}`")
            elif c.what == "retyped":
                parts.append(f"`{c.path}` retyped `{c.old}` → `{c.new}`")
            else:
                parts.append(f"`{c.path}` now {c.what}")
        lines.append(f"- `{name}`: " + "; ".join(parts))
    return [*lines, ""]


def render_text(d: RevisionDiff, *, heading: str = "##") -> str:
    """The diff as Markdown (also what ``--diff`` prints)."""
    lines = [f"{heading} {d.old} → {d.new}", ""]
    if d.is_empty():
        return "\n".join([*lines, "No change.", ""])
    lines += _methods_text("Requests", d.requests)
    lines += _methods_text("Notifications", d.notifications)
    if d.capabilities_added or d.capabilities_removed:
        lines += ["### Capabilities", ""]
        for verb, caps in (("added", d.capabilities_added), ("removed", d.capabilities_removed)):
            for side in ("client", "server"):
                paths = [p for s, p in caps if s == side]
                if paths:
                    lines.append(f"- {verb} ({side}): {_code(paths)}")
        lines.append("")
    if d.definitions_added or d.definitions_removed:
        lines += ["### Definitions", ""]
        if d.definitions_added:
            lines.append(f"- added: {_code(d.definitions_added)}")
        if d.definitions_removed:
            lines.append(f"- removed: {_code(d.definitions_removed)}")
        lines.append("")
    lines += _fields_text(d.fields)
    if d.enums:
        lines += ["### Enum values", ""]
        for where, (added, removed) in d.enums.items():
            parts = []
            if added:
                parts.append(f"added {', '.join(added)}")
            if removed:
                parts.append(f"removed {', '.join(removed)}")
            lines.append(f"- `{where}`: " + "; ".join(parts))
        lines.append("")
    return "\n".join(lines)


PAGE_INTRO = """\
# What changed in each revision

<!-- GENERATED by `python -m codegen --diff-page docs/guide/revisions-diff.md`; do not edit.
     A test fails when this page is stale. -->

What each revision of the protocol changed from the one before, read from the official JSON
schemas of the two revisions (`mcp-trio codegen --diff OLD NEW` prints the same for any two,
`--json` as JSON):

- requests and notifications added or removed, or whose direction, params, result or gating
  capability changed (as the generated modules' `METHODS` tables have them);
- capability keys of the client and the server (dotted paths);
- definitions added and removed;
- in the definitions both revisions have, fields added, removed, retyped, or made required or
  optional, as the schema declares them (fields of inline objects as dotted paths); an `_meta`,
  a document such as `inputSchema`, or a union the generated Structs type more loosely still
  shows here with its schema type;
- values added to or removed from an enum.

A request message of 2024-11-05 to 2025-06-18 declares only `method` and `params` (the JSON-RPC
envelope is a separate definition); from 2025-11-25 each declares `jsonrpc` and `id` too, which
shows as fields added.
"""


def render_page(diffs: list[RevisionDiff]) -> str:
    """The documentation page: one section per consecutive pair, newest first."""
    sections = [render_text(d).rstrip("\n") for d in reversed(diffs)]
    return PAGE_INTRO + "\n" + "\n\n".join(sections) + "\n"
