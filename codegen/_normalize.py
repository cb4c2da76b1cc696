"""Schema -> schema rules that make MCP's ``schema.json`` fit msgspec.

datamodel-code-generator (dcg) prints whatever the schema says.  The MCP
schema says a few things msgspec cannot decode (untagged unions of objects),
loses data on open objects, carries known defects of the TypeScript -> JSON
Schema conversion, and describes pre-2025-11-25 requests without their
JSON-RPC envelope.  Every rule below is a small function that rewrites the
schema in place and returns ``True`` when it changed something.  The rule
letters match ``docs/codegen.md``.

The input schema is never modified; :func:`normalize` works on a deep copy.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["RULES", "NormalizeError", "Normalized", "SchemaView", "normalize"]

Schema = dict[str, Any]

#: Unions of messages that the registry is derived from.
REQUEST_UNIONS = ("ClientRequest", "ServerRequest")
NOTIFICATION_UNIONS = ("ClientNotification", "ServerNotification")
#: 2026-07-28: server-to-client requests that travel inside a result.
INPUT_REQUEST_UNION = "InputRequest"
MESSAGE_UNIONS = (*REQUEST_UNIONS, *NOTIFICATION_UNIONS, INPUT_REQUEST_UNION)

#: Method-agnostic message shapes whose ``params`` is any object.
GENERIC_MESSAGES = ("Request", "Notification", "JSONRPCRequest", "JSONRPCNotification")

#: The merged struct rule (e) introduces.
ANY_RESOURCE_CONTENTS = "AnyResourceContents"

#: What takes the place of each union rule (f) removes (shown in REPLACED).
#: ``{members}`` is replaced by the union's member definitions, which remain.
DROPPED_UNION_NOTES: dict[str, str] = {
    "JSONRPCMessage": "its members {members}; the hand-written envelope tells them apart",
    "JSONRPCResponse": "its members {members}; the hand-written envelope tells them apart",
    "JSONRPCBatchRequest": "a list of {members}; the hand-written envelope splits batches",
    "JSONRPCBatchResponse": "a list of {members}; the hand-written envelope splits batches",
    "ClientResult": "the result types of each method, METHODS[method].results",
    "ServerResult": "the result types of each method, METHODS[method].results",
    "InputResponse": "dict[str, Any] values of InputResponses; decode each with the result "
    "type of the matching inputRequests entry ({members})",
    "PrimitiveSchemaDefinition": "dict[str, Any]: requestedSchema is an open JSON Schema "
    "document; the members {members} remain",
    "EnumSchema": "its members {members} (requestedSchema is a dict[str, Any])",
    "SingleSelectEnumSchema": "its members {members}",
    "MultiSelectEnumSchema": "its members {members}",
}
_DEFAULT_DROPPED_NOTE = "its members {members} (an untagged union msgspec cannot decode)"

#: Properties holding a JSON Schema document or an arbitrary JSON value.
JSON_SCHEMA_DOCUMENT_PROPERTIES = ("inputSchema", "outputSchema", "requestedSchema")
JSON_VALUE_PROPERTIES = ("structuredContent",)

#: Type lists where ``integer`` is really meant (JSON-RPC ids, progress tokens,
#: ``integer | null`` durations): rule d2 leaves these alone.
_INTEGER_TYPE_LISTS = ({"string", "integer"}, {"integer", "null"})


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


# --------------------------------------------------------------------------- rules


def rule_a0_restore_one_member_unions(ctx: SchemaView) -> bool:
    """(a0) A message union with a single member was inlined by
    typescript-json-schema (2026 ``ClientNotification`` is a copy of
    ``CancelledNotification``).  dcg would print an untagged look-alike class;
    point the union back at the real definition with a ``$ref``."""
    changed = False
    for union in MESSAGE_UNIONS:
        node = ctx.defs.get(union)
        if node is None or "properties" not in node:
            continue
        shape = _without_description(node)
        matches = [
            name
            for name, other in ctx.defs.items()
            if name != union and _without_description(other) == shape
        ]
        if len(matches) != 1:
            raise NormalizeError(
                f"{union} is an inlined one-member union but matches {matches or 'no definition'}"
            )
        ctx.defs[union] = {**ctx.ref(matches[0]), "description": node.get("description", "")}
        changed = True
    return changed


def rule_j_wire_messages(ctx: SchemaView) -> bool:
    """(j) Before 2025-11-25 ``CallToolRequest`` & co. hold only ``method`` and
    ``params``: ``jsonrpc`` and ``id`` live on the generic ``JSONRPCRequest``
    and many inline params omit ``_meta``.  Decoding a real message through
    them drops ``jsonrpc``, ``id`` and ``_meta``; encoding one yields an invalid
    message.  Make every member of the request/notification unions a complete
    wire message.  (2026 ``InputRequest``-only members are deliberately not
    touched: they are not JSON-RPC messages.)"""
    changed = False
    meta_doc = (
        "Reserved by MCP for protocol-level metadata (for example `progressToken`); "
        "other keys are allowed."
    )
    for union in (*REQUEST_UNIONS, *NOTIFICATION_UNIONS):
        is_request = union in REQUEST_UNIONS
        for member in ctx.union_members(union):
            node = ctx.defs[member]
            props = node.setdefault("properties", {})
            required = node.setdefault("required", [])
            if "jsonrpc" not in props:
                props["jsonrpc"] = {"const": "2.0", "type": "string"}
                required.append("jsonrpc")
                changed = True
            if is_request and "id" not in props:
                props["id"] = ctx.ref("RequestId")
                required.append("id")
                changed = True
            params = props.get("params")
            if params is None:
                props["params"] = {
                    "type": "object",
                    "properties": {"_meta": _open_object(meta_doc)},
                }
                changed = True
                continue
            target = ctx.resolve(params)
            if target.get("type") == "object" and "_meta" not in target.get("properties", {}):
                target.setdefault("properties", {})["_meta"] = _open_object(meta_doc)
                changed = True
            node["required"] = sorted(set(required))
    return changed


def rule_b_open_meta(ctx: SchemaView) -> bool:
    """(b) ``_meta`` is an open object, but the schema types it as a Struct
    (``{progressToken}`` in 2025-11-25, ``RequestMetaObject`` in 2026), so
    ``traceparent``, vendor keys and the like would be silently dropped.  Make
    every ``_meta`` a ``dict[str, Any]``; the reserved keys are read by
    hand-written helpers (the ``*MetaObject`` definitions remain usable with
    ``msgspec.convert``)."""
    changed = False
    for _owner, _path, node in _walk_defs(ctx):
        props = node.get("properties", {})
        meta = props.get("_meta")
        if meta is None:
            continue
        opened = _open_object(meta.get("description"))
        if meta != opened:
            props["_meta"] = opened
            changed = True
    return changed


def rule_b2_open_empty_objects(ctx: SchemaView) -> bool:
    """(b2) An object schema with no properties (2026 ``MetaObject``) becomes
    an empty Struct that decodes to nothing.  Declare it an open map
    (``dict[str, Any]``), which is what an unconstrained object means."""
    changed = False
    for _owner, _path, node in _walk_defs(ctx):
        if (
            node.get("type") == "object"
            and not node.get("properties")
            and "additionalProperties" not in node
        ):
            node.pop("properties", None)
            node["additionalProperties"] = {}
            changed = True
    return changed


def rule_c_open_documents(ctx: SchemaView) -> bool:
    """(c) ``inputSchema``/``outputSchema``/``requestedSchema`` are JSON Schema
    documents; as Structs they would keep only ``type``/``properties``/
    ``required`` and drop ``$defs``, ``oneOf``, ``additionalProperties`` ...
    (in 2026 even ``properties``).  Make them ``dict[str, Any]``.
    ``structuredContent`` is any JSON value: make it ``Any``."""
    changed = False
    for _owner, _path, node in _walk_defs(ctx):
        props = node.get("properties", {})
        for name in JSON_SCHEMA_DOCUMENT_PROPERTIES:
            if name in props:
                opened = _open_object(props[name].get("description"))
                if props[name] != opened:
                    props[name] = opened
                    changed = True
        for name in JSON_VALUE_PROPERTIES:
            if name in props:
                anything = {k: v for k, v in props[name].items() if k == "description"}
                if props[name] != anything:
                    props[name] = anything
                    changed = True
    return changed


def rule_d_json_value(ctx: SchemaView) -> bool:
    """(d) 2026 ``JSONValue`` is recursive (msgspec cannot resolve the forward
    reference, which breaks every type through ``ClientCapabilities``) and also
    wrong (``type: [string, integer, boolean]`` loses ``null`` and floats).
    Make ``JSONValue`` ``Any``, ``JSONObject`` ``dict[str, Any]`` and
    ``JSONArray`` ``list[Any]``."""
    changed = False
    replacements = {
        "JSONValue": lambda d: {"description": d} if d else {},
        "JSONObject": _open_object,
        "JSONArray": lambda d: {"type": "array", "items": {}, **({"description": d} if d else {})},
    }
    for name, make in replacements.items():
        if name in ctx.defs:
            new = make(ctx.defs[name].get("description"))
            if ctx.defs[name] != new:
                ctx.defs[name] = new
                changed = True
    return changed


def rule_d2_number_in_type_lists(ctx: SchemaView) -> bool:
    """(d2) schema.json is generated with ``--defaultNumberType integer``, so a
    TypeScript ``number`` inside a type list becomes ``integer``: elicitation
    answers (``string | number | boolean``) reject ``1.85``.  Add ``number``
    next to ``integer`` so values decode as ``int | float`` (exactly what was
    sent).  Lists where integer is meant (ids, progress tokens,
    ``integer | null``) are left alone."""
    changed = False
    for _owner, _path, node in _walk_defs(ctx):
        types = node.get("type")
        if not isinstance(types, list) or "integer" not in types or "number" in types:
            continue
        if any(set(types) <= allowed for allowed in _INTEGER_TYPE_LISTS):
            continue
        i = types.index("integer")
        node["type"] = [*types[: i + 1], "number", *types[i + 1 :]]
        changed = True
    return changed


def rule_e_merge_resource_contents(ctx: SchemaView) -> bool:
    """(e) ``EmbeddedResource.resource`` and ``ReadResourceResult.contents`` are
    ``TextResourceContents | BlobResourceContents``: two objects told apart
    only by which key (``text``/``blob``) is present, which msgspec cannot
    decode.  Use one merged ``AnyResourceContents`` (``text?``, ``blob?``) at
    those places; the two original Structs stay for construction."""
    text, blob = "TextResourceContents", "BlobResourceContents"
    if text not in ctx.defs or blob not in ctx.defs:
        return False
    if ANY_RESOURCE_CONTENTS in ctx.defs:
        raise NormalizeError(f"{ANY_RESOURCE_CONTENTS} already exists in the schema")
    pair = {text, blob}
    sites = [
        node
        for _owner, _path, node in _walk_defs(ctx)
        if "anyOf" in node and {ctx.ref_name(m) for m in node["anyOf"]} == pair
    ]
    if not sites:
        return False
    for node in sites:
        description = node.get("description")
        node.clear()
        node.update(ctx.ref(ANY_RESOURCE_CONTENTS))
        if description:
            node["description"] = description
    ctx.defs[ANY_RESOURCE_CONTENTS] = _merge_objects(
        ctx,
        [text, blob],
        "The contents of a resource: `text` for text, `blob` (base64) for binary data.\n\n"
        "One Struct for TextResourceContents | BlobResourceContents, which differ only by "
        "which of the two keys is present.",
    )
    ctx.result.added[ANY_RESOURCE_CONTENTS] = (
        "merged TextResourceContents | BlobResourceContents (rule e)"
    )
    return True


def rule_g_merge_elicit_params(ctx: SchemaView) -> bool:
    """(g) ``ElicitRequestParams`` (2025-11-25+) is ``URLParams{mode:"url"} |
    FormParams{mode?:"form"}``; the tag is optional on the form side, so it is
    not a tagged union.  Turn ``ElicitRequestParams`` itself into one Struct
    with every field of both (``mode`` absent means form); the two member
    Structs stay."""
    node = ctx.defs.get("ElicitRequestParams")
    if node is None or "anyOf" not in node:
        return False
    members = ctx.union_members("ElicitRequestParams")
    merged = _merge_objects(
        ctx,
        members,
        (node.get("description") or "The parameters of an elicitation/create request.")
        + "\n\nOne Struct for ElicitRequestFormParams | ElicitRequestURLParams: `mode` "
        'absent or "form" means form mode (`requestedSchema`), "url" means URL mode '
        "(`url`, `elicitationId`).",
    )
    modes = []
    for member in members:
        mode = ctx.resolve(ctx.defs[member]).get("properties", {}).get("mode", {})
        if "const" not in mode:
            raise NormalizeError(f"ElicitRequestParams member {member} has no const mode")
        modes.append(mode["const"])
    merged["properties"]["mode"] = {
        "type": "string",
        "enum": sorted(modes),
        "description": 'The elicitation mode; absent means "form".',
    }
    ctx.defs["ElicitRequestParams"] = merged
    return True


def rule_h_open_input_responses(ctx: SchemaView) -> bool:
    """(h) 2026 ``InputResponses`` maps keys to results of three kinds with no
    tag.  Make the values ``dict[str, Any]``; the engine decodes each with the
    result type of the ``inputRequests`` entry of the same key."""
    node = ctx.defs.get("InputResponses")
    if node is None:
        return False
    new = {
        "type": "object",
        "additionalProperties": _open_object(),
        "description": node.get("description", "Responses to input requests, by key."),
    }
    if node == new:
        return False
    ctx.defs["InputResponses"] = new
    return True


def rule_h0_open_task_payload(ctx: SchemaView) -> bool:
    """(h0) 2025-11-25 ``GetTaskPayloadResult`` is the open result of the
    underlying request; as a Struct it decodes to nothing.  Make it a
    ``dict[str, Any]``."""
    node = ctx.defs.get("GetTaskPayloadResult")
    if node is None or node.get("properties") is None:
        return False
    ctx.defs["GetTaskPayloadResult"] = _open_object(node.get("description"))
    return True


def rule_k_result_type_default(ctx: SchemaView) -> bool:
    """(k) 2026 ``resultType`` is required, so a result from a server of an
    earlier revision (which omits it) would fail to decode, while the spec says
    to treat absence as ``"complete"``.  Give it the default ``"complete"``
    (still always encoded) and make ``InputRequiredResult.resultType`` the
    constant ``"input_required"``."""
    changed = False
    for owner, _path, node in _walk_defs(ctx):
        props = node.get("properties", {})
        if "resultType" not in props:
            continue
        sub = props["resultType"]
        if owner == "InputRequiredResult":
            props["resultType"] = {
                "type": "string",
                "enum": ["input_required"],
                "default": "input_required",
                **({"description": sub["description"]} if "description" in sub else {}),
            }
        else:
            sub["default"] = "complete"
        if "resultType" in node.get("required", []):
            node["required"] = [r for r in node["required"] if r != "resultType"]
        changed = True
    return changed


def rule_l_envelope_defaults(ctx: SchemaView) -> bool:
    """(l) ``jsonrpc`` is a required ``Literal['2.0']`` that every caller would
    have to pass: give it the default ``"2.0"`` (post-process P makes it a
    plain default, so it is always encoded).  The ``result`` of
    ``JSONRPCResponse``/``JSONRPCResultResponse`` is the open ``Result`` (a
    Struct would keep nothing) and 2026 ``*ResultResponse.result`` is an
    untagged ``X | InputRequiredResult``: make those ``dict[str, Any]`` (the
    engine decodes results from raw bytes with ``METHODS``).  Likewise the
    ``params`` of the generic ``Request``/``Notification``/``JSONRPCRequest``/
    ``JSONRPCNotification`` (open objects before 2025-11-25, printed as Structs
    holding only ``_meta``)."""
    changed = False
    for name in GENERIC_MESSAGES:
        params = ctx.defs.get(name, {}).get("properties", {}).get("params")
        if params is not None and params.get("properties"):
            ctx.defs[name]["properties"]["params"] = _open_object(params.get("description"))
            changed = True
    for owner, _path, node in _walk_defs(ctx):
        props = node.get("properties", {})
        rpc = props.get("jsonrpc")
        if isinstance(rpc, dict) and rpc.get("const") == "2.0" and rpc.get("default") != "2.0":
            rpc["default"] = "2.0"
            node["required"] = [r for r in node.get("required", []) if r != "jsonrpc"]
            changed = True
        result = props.get("result")
        if result is None or not owner.endswith("Response"):
            continue
        if ctx.ref_name(result) == "Result" or "anyOf" in result:
            props["result"] = _open_object(result.get("description"))
            changed = True
    return changed


def rule_f_drop_undecodable_unions(ctx: SchemaView) -> bool:
    """(f) Top-level unions msgspec cannot decode and nothing needs any more
    (``JSONRPCMessage``, ``ClientResult``, the elicitation primitive-schema
    unions, batch arrays, ...): remove them and list them in ``REPLACED``.
    A still-referenced undecodable union is an error: it needs a rule."""
    changed = False
    while True:
        refs = _references(ctx)
        dropped = False
        for name, node in list(ctx.defs.items()):
            members = node.get("anyOf")
            if members is None and node.get("type") == "array":
                members = node.get("items", {}).get("anyOf")
            if members is None or _is_decodable_union(ctx, members):
                continue
            users = [u for u in refs.get(name, []) if u != name]
            if users:
                continue  # dropped once its users are gone, or reported below
            del ctx.defs[name]
            names = [n for n in map(ctx.ref_name, members) if n is not None and n in ctx.defs]
            note = DROPPED_UNION_NOTES.get(name, _DEFAULT_DROPPED_NOTE)
            ctx.result.replaced[name] = note.format(members=" / ".join(names) or "-")
            dropped = changed = True
        if not dropped:
            break
    # Anything undecodable that is still used is a schema change no rule covers.
    for owner, path, node in _walk_defs(ctx):
        members = node.get("anyOf")
        if members is not None and not _is_decodable_union(ctx, members):
            where = owner + "".join(f"/{p}" for p in path)
            raise NormalizeError(
                f"untagged union at {where} cannot be decoded by msgspec and no rule handles it"
            )
    return changed


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


#: The rules in the order they run (the order matters: e.g. a0 before j, j
#: before b, c before f, a last).
RULES: tuple[tuple[str, Callable[[SchemaView], bool]], ...] = (
    ("a0", rule_a0_restore_one_member_unions),
    ("j", rule_j_wire_messages),
    ("b", rule_b_open_meta),
    ("b2", rule_b2_open_empty_objects),
    ("c", rule_c_open_documents),
    ("d", rule_d_json_value),
    ("d2", rule_d2_number_in_type_lists),
    ("e", rule_e_merge_resource_contents),
    ("g", rule_g_merge_elicit_params),
    ("h", rule_h_open_input_responses),
    ("h0", rule_h0_open_task_payload),
    ("k", rule_k_result_type_default),
    ("l", rule_l_envelope_defaults),
    ("f", rule_f_drop_undecodable_unions),
    ("a1", rule_a1_flatten_inline_allof),
    ("a", rule_a_title_inline_objects),
    ("docs", collect_field_docs),
)


def normalize(schema: Schema, revision: str) -> Normalized:
    """Apply every rule to a deep copy of ``schema``."""
    ctx = SchemaView(copy.deepcopy(schema), revision)
    for letter, rule in RULES:
        if rule(ctx):
            ctx.result.applied.append(letter)
    return ctx.result
