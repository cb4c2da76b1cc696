"""Derive each revision's method registry (``METHODS``) from its schema.

What the schema gives:

* the members of ``ClientRequest``/``ServerRequest``/``ClientNotification``/
  ``ServerNotification`` (and 2026's ``InputRequest``): which messages exist
  and who sends them;
* ``properties.method.const``: the method name;
* ``properties.params``: the params type (a ``$ref``, or an inline object that
  rule (a) titled ``<Request>Params``) and whether it is required.

What the schema does not link, and this module adds:

* the result type, by the naming rule ``FooRequest -> FooResult``, else the
  small :data:`RESULT_OVERRIDES` table (fails loudly otherwise), plus the
  alternative results ``CreateTaskResult`` (params has ``task``, 2025-11-25)
  and ``InputRequiredResult`` (params has ``inputResponses``, 2026-07-28);
* the capability that gates a method (:data:`CAPABILITIES`), checked against
  the revision's ``ClientCapabilities``/``ServerCapabilities``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._schema import NormalizeError, SchemaView
from ._unions import INPUT_REQUEST_UNION, NOTIFICATION_UNIONS, REQUEST_UNIONS

__all__ = ["CAPABILITIES", "RESULT_OVERRIDES", "Entry", "RegistryError", "derive", "emit"]


class RegistryError(Exception):
    """The registry cannot be derived (a new method needs a table entry)."""


#: Requests whose result is not ``<Name>Result``: method -> result definition.
#: ``EmptyResult`` falls back to ``Result`` where a revision lacks it.
RESULT_OVERRIDES: dict[str, str] = {
    "ping": "EmptyResult",
    "resources/subscribe": "EmptyResult",
    "resources/unsubscribe": "EmptyResult",
    "logging/setLevel": "EmptyResult",
}

#: method -> capability path.  For a request it is the *receiver's* capability,
#: for a notification the *sender's*.  A path whose first key a revision's
#: capability object lacks (``completions`` before 2025-03-26) yields ``None``
#: for that revision; a missing deeper key is an error.
CAPABILITIES: dict[str, tuple[str, ...]] = {
    "tools/list": ("tools",),
    "tools/call": ("tools",),
    "resources/list": ("resources",),
    "resources/read": ("resources",),
    "resources/templates/list": ("resources",),
    "resources/subscribe": ("resources", "subscribe"),
    "resources/unsubscribe": ("resources", "subscribe"),
    "prompts/list": ("prompts",),
    "prompts/get": ("prompts",),
    "logging/setLevel": ("logging",),
    "completion/complete": ("completions",),
    "sampling/createMessage": ("sampling",),
    "roots/list": ("roots",),
    "elicitation/create": ("elicitation",),
    "tasks/list": ("tasks", "list"),
    "tasks/cancel": ("tasks", "cancel"),
    "notifications/message": ("logging",),
    "notifications/resources/updated": ("resources", "subscribe"),
    "notifications/resources/list_changed": ("resources", "listChanged"),
    "notifications/tools/list_changed": ("tools", "listChanged"),
    "notifications/prompts/list_changed": ("prompts", "listChanged"),
    "notifications/roots/list_changed": ("roots", "listChanged"),
}


@dataclass(frozen=True)
class Entry:
    """One registry row, with type *names* (the emitter prints them)."""

    method: str
    kind: str  # "request" | "notification"
    direction: str  # "client" | "server" | "both"
    message: str
    params: str | None
    params_required: bool
    results: tuple[str, ...]
    capability: tuple[str, ...] | None
    input_request: bool


def _has_path(ctx: SchemaView, root: str, path: tuple[str, ...]) -> bool | None:
    """True if ``root`` declares ``path``; None if not even its first key."""
    node: Any = ctx.defs.get(root)
    for depth, key in enumerate(path):
        if node is None:
            return None if depth == 0 else False
        props = ctx.resolve(node).get("properties", {})
        if key not in props:
            return None if depth == 0 else False
        node = props[key]
    return True


def _capability(ctx: SchemaView, method: str, kind: str, senders: set[str]) -> tuple[str, ...] | None:
    path = CAPABILITIES.get(method)
    if path is None:
        return None
    # Requests are gated by the receiver's capabilities, notifications by the sender's.
    if kind == "request":
        sides = {"client": "ServerCapabilities", "server": "ClientCapabilities"}
    else:
        sides = {"client": "ClientCapabilities", "server": "ServerCapabilities"}
    found = [_has_path(ctx, sides[s], path) for s in sorted(senders)]
    if any(f is True for f in found):
        return path
    if any(f is False for f in found):
        raise RegistryError(
            f"{ctx.revision}: capability {'.'.join(path)} of {method} is not declared by "
            f"{' / '.join(sides[s] for s in sorted(senders))}; fix CAPABILITIES"
        )
    return None  # the revision has no such capability at all


def _params(ctx: SchemaView, message: str) -> tuple[str | None, bool, dict[str, Any]]:
    node = ctx.defs[message]
    params = node.get("properties", {}).get("params")
    if params is None:
        return None, False, {}
    required = "params" in node.get("required", [])
    name = ctx.ref_name(params)
    if name is None:
        name = params.get("title")
        if name is None:
            raise RegistryError(f"{ctx.revision}: {message}.params is inline but untitled")
    props = ctx.properties(params)
    if not props:
        raise RegistryError(f"{ctx.revision}: {message}.params ({name}) has no properties")
    return name, required, props


def _results(ctx: SchemaView, message: str, method: str, params_props: dict[str, Any]) -> tuple[str, ...]:
    if method in RESULT_OVERRIDES:
        result = RESULT_OVERRIDES[method]
        if result == "EmptyResult" and result not in ctx.defs:
            result = "Result"
    elif message.endswith("Request") and message[: -len("Request")] + "Result" in ctx.defs:
        result = message[: -len("Request")] + "Result"
    else:
        raise RegistryError(
            f"{ctx.revision}: no result type for {method} ({message}): "
            f"{message[: -len('Request')]}Result does not exist; add it to RESULT_OVERRIDES"
        )
    if result not in ctx.defs:
        raise RegistryError(f"{ctx.revision}: result {result} of {method} does not exist")
    results = [result]
    if "task" in params_props and "CreateTaskResult" in ctx.defs:
        results.append("CreateTaskResult")
    if "inputResponses" in params_props and "InputRequiredResult" in ctx.defs:
        results.append("InputRequiredResult")
    return tuple(results)


def derive(ctx: SchemaView) -> list[Entry]:
    """Registry rows for the (normalized) schema in ``ctx``, sorted by method."""
    seen: dict[str, dict[str, Any]] = {}
    unions = [(u, "request") for u in REQUEST_UNIONS]
    unions += [(u, "notification") for u in NOTIFICATION_UNIONS]
    unions += [(INPUT_REQUEST_UNION, "request")]
    for union, kind in unions:
        try:
            members = ctx.union_members(union)
        except NormalizeError as exc:
            raise RegistryError(str(exc)) from None
        for message in members:
            method_schema = ctx.defs[message].get("properties", {}).get("method", {})
            method = method_schema.get("const")
            if not isinstance(method, str):
                raise RegistryError(f"{ctx.revision}: {message} in {union} has no const method")
            row = seen.setdefault(
                method, {"message": message, "kind": kind, "senders": set(), "unions": set()}
            )
            if row["message"] != message or row["kind"] != kind:
                raise RegistryError(f"{ctx.revision}: method {method} is both {row['message']} and {message}")
            row["unions"].add(union)
            if union != INPUT_REQUEST_UNION:
                row["senders"].add("client" if union.startswith("Client") else "server")
    if not seen:
        raise RegistryError(
            f"{ctx.revision}: the schema declares no ClientRequest/ServerRequest/"
            "ClientNotification/ServerNotification members"
        )
    entries = []
    for method in sorted(seen):
        row = seen[method]
        message, kind = row["message"], row["kind"]
        input_request = not row["senders"]  # appears only inside InputRequest
        senders = row["senders"] or {"server"}
        direction = "both" if len(senders) == 2 else next(iter(senders))
        params, params_required, params_props = _params(ctx, message)
        results = _results(ctx, message, method, params_props) if kind == "request" else ()
        entries.append(
            Entry(
                method=method,
                kind=kind,
                direction=direction,
                message=message,
                params=params,
                params_required=params_required,
                results=results,
                capability=_capability(ctx, method, kind, senders),
                input_request=input_request,
            )
        )
    return entries


def emit(entries: list[Entry]) -> str:
    """Python source of the ``METHODS`` table."""
    lines = ["METHODS: dict[str, MethodSpec] = {"]
    for e in entries:
        results = "(" + ", ".join(e.results) + ("," if len(e.results) == 1 else "") + ")"
        lines += [
            f"    {e.method!r}: MethodSpec(",
            f"        method={e.method!r},",
            f"        kind={e.kind!r},",
            f"        direction={e.direction!r},",
            f"        message={e.message},",
            f"        params={e.params},",
            f"        params_required={e.params_required},",
            f"        results={results},",
            f"        capability={e.capability!r},",
            f"        input_request={e.input_request},",
            "    ),",
        ]
    lines.append("}")
    return "\n".join(lines) + "\n"
