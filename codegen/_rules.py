"""The normalizer rules that make the schema decodable by msgspec without loss.

The MCP schema says a few things msgspec cannot decode (untagged unions of
objects), loses data on open objects, carries known defects of the
TypeScript -> JSON Schema conversion, and describes pre-2025-11-25 requests
without their JSON-RPC envelope.  Every rule here (a0, j, b, b2, c, d, d2, e,
g, h, h0, k, l, f) rewrites the schema in place and returns ``True`` when it
changed something.  The rule letters match ``docs/codegen.md``; the order
they run in is ``RULES`` in :mod:`._normalize`.
"""

from __future__ import annotations

from ._schema import (
    NormalizeError,
    SchemaView,
    _open_object,
    _references,
    _walk_defs,
    _without_description,
)
from ._unions import (
    MESSAGE_UNIONS,
    NOTIFICATION_UNIONS,
    REQUEST_UNIONS,
    _is_decodable_union,
    _merge_objects,
)

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
            name for name, other in ctx.defs.items() if name != union and _without_description(other) == shape
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
        "Reserved by MCP for protocol-level metadata (for example `progressToken`); other keys are allowed."
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
        if node.get("type") == "object" and not node.get("properties") and "additionalProperties" not in node:
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
    ctx.result.added[ANY_RESOURCE_CONTENTS] = "merged TextResourceContents | BlobResourceContents (rule e)"
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
