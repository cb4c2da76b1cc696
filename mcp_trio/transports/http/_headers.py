"""The 2026-07-28 request headers of Streamable HTTP, both sides.

A client mirrors parts of each request into headers (``Mcp-Method``,
``Mcp-Name`` for ``tools/call``, ``resources/read`` and ``prompts/get``, and
``Mcp-Param-{token}`` for tool arguments whose ``inputSchema`` property carries
``x-mcp-header``), so that intermediaries can route without reading bodies.
The server checks that the headers match the body (``HeaderMismatch``,
-32020, with HTTP 400).  The Tasks extension adds ``Mcp-Name: <taskId>`` on
``tasks/get``, ``tasks/update`` and ``tasks/cancel``; the server checks it
when it is sent.

Values that are not plain header-safe ASCII travel as ``=?base64?...?=``
(the UTF-8 bytes, Base64); so does a plain value that looks like that form.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from msgspec import Raw

__all__ = [
    "Annotations",
    "check_request_headers",
    "decode_value",
    "encode_value",
    "header_annotations",
    "param_headers",
    "render_scalar",
]

#: ``(property path, header token)`` pairs of one tool.
Annotations = list[tuple[tuple[str, ...], str]]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_SAFE = re.compile(r"[\x20-\x7e\t]*")  # all used with fullmatch
_SENTINEL = re.compile(r"=\?base64\?([A-Za-z0-9+/]*={0,2})\?=")
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
#: The Tasks extension's routing header: ``Mcp-Name`` carries ``params.taskId``.
#: Checked when present; not yet required (clients that predate the extension's
#: routing-header rule leave it out).
_TASK_NAMED = {"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId"}

_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_ONE = (
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAX_SCHEMA_DEPTH = 64


def header_annotations(schema: Any) -> Annotations | str:
    """The ``(property path, header token)`` pairs a tool's ``inputSchema``
    asks to mirror, or why the annotations make the tool invalid."""
    found: list[tuple[tuple[str, ...] | None, dict[str, Any]]] = []

    def walk(node: Any, path: tuple[str, ...] | None, depth: int) -> None:
        if not isinstance(node, dict) or depth > _MAX_SCHEMA_DEPTH:
            return
        if "x-mcp-header" in node:
            found.append((path, node))
        for key in _SCHEMA_MAPS:
            children = node.get(key)
            if isinstance(children, dict):
                for name, child in children.items():
                    on_chain = path is not None and key == "properties"
                    walk(child, (*path, name) if on_chain and path is not None else None, depth + 1)
        for key in _SCHEMA_ONE:
            walk(node.get(key), None, depth + 1)
        for key in _SCHEMA_LISTS:
            children = node.get(key)
            if isinstance(children, list):
                for child in children:
                    walk(child, None, depth + 1)

    walk(schema, (), 0)
    result: Annotations = []
    seen: set[str] = set()
    for path, node in found:
        token = node["x-mcp-header"]
        if not path:
            return "x-mcp-header outside a chain of 'properties' from the schema root"
        where = ".".join(path)
        if not isinstance(token, str) or not _TOKEN.fullmatch(token):
            return f"property {where!r}: x-mcp-header must be an HTTP token"
        if node.get("type") not in ("string", "integer", "boolean"):
            return (
                f"property {where!r}: x-mcp-header is only allowed on string, integer and boolean properties"
            )
        if token.lower() in seen:
            return f"property {where!r}: x-mcp-header {token!r} is used twice"
        seen.add(token.lower())
        result.append((path, token))
    return result


def render_scalar(value: Any) -> str | None:
    """A header's rendering of an argument value (None: not mirrorable)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def encode_value(value: str) -> str:
    """A header-safe rendering: as is, or the ``=?base64?...?=`` sentinel form."""
    plain = (
        _HEADER_SAFE.fullmatch(value) is not None
        and value == value.strip(" \t")
        and not (value.startswith("=?base64?") and value.endswith("?="))
    )
    if plain:
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def param_headers(annotations: Annotations, arguments: Raw) -> list[tuple[str, str]]:
    try:
        args = msgspec.json.decode(arguments)
    except msgspec.DecodeError:
        return []
    headers: list[tuple[str, str]] = []
    for path, token in annotations:
        node: Any = args
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        rendered = render_scalar(node) if node is not None else None
        if rendered is not None:
            headers.append((f"Mcp-Param-{token}", encode_value(rendered)))
    return headers


def decode_value(header: str) -> str | None:
    """The value a header carries (Base64 sentinel form decoded), or None when
    it is malformed (characters outside the header-safe set, bad Base64 or
    UTF-8)."""
    if _HEADER_SAFE.fullmatch(header) is None:
        return None
    match = _SENTINEL.fullmatch(header)
    if match is None:
        if header.startswith("=?base64?") and header.endswith("?="):
            return None
        return header
    try:
        return base64.b64decode(match.group(1), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def _same(header_value: str, body_value: Any) -> bool:
    if isinstance(body_value, bool):
        return header_value == ("true" if body_value else "false")
    if isinstance(body_value, int | float):
        try:
            return float(header_value) == float(body_value)  # 42 and 42.0 are equal
        except ValueError:
            return False
    return bool(header_value == body_value)


def check_request_headers(
    headers: Mapping[str, str],
    method: str,
    params: Any,
    version: str,
    tool_annotations: Callable[[str], Annotations | None] | None = None,
) -> str | None:
    """Why the headers of a 2026-07-28 request do not match its body, or None.

    ``headers`` have lower-case names.  ``tool_annotations(name)`` gives a
    tool's ``x-mcp-header`` annotations (None: unknown tool, nothing to check).
    """
    sent_version = headers.get("mcp-protocol-version")
    if sent_version is None:
        return "the MCP-Protocol-Version header is missing"
    if sent_version != version:
        return f"MCP-Protocol-Version header value {sent_version!r} does not match body value {version!r}"
    sent_method = headers.get("mcp-method")
    if sent_method is None:
        return "the Mcp-Method header is missing"
    if sent_method != method:
        return f"Mcp-Method header value {sent_method!r} does not match body value {method!r}"
    field = _NAMED.get(method) or _TASK_NAMED.get(method)
    if field is None:
        return None
    body_name = params.get(field) if isinstance(params, dict) else None
    raw_name = headers.get("mcp-name")
    if raw_name is None:
        if method in _TASK_NAMED:
            return None
        return "the Mcp-Name header is missing"
    sent_name = decode_value(raw_name)
    if sent_name is None:
        return "the Mcp-Name header value is malformed"
    if sent_name != body_name:
        return f"Mcp-Name header value {sent_name!r} does not match body value {body_name!r}"
    if method != "tools/call" or tool_annotations is None or not isinstance(body_name, str):
        return None
    annotations = tool_annotations(body_name)
    if not annotations:
        return None
    arguments = params.get("arguments")
    for path, token in annotations:
        node: Any = arguments
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        raw = headers.get(f"mcp-param-{token.lower()}")
        if node is None:
            if raw is not None:
                return f"Mcp-Param-{token} header sent but the argument {'.'.join(path)!r} is absent"
            continue
        if raw is None:
            return f"the Mcp-Param-{token} header is missing (argument {'.'.join(path)!r} is present)"
        sent = decode_value(raw)
        if sent is None:
            return f"the Mcp-Param-{token} header value is malformed"
        if not _same(sent, node):
            return f"Mcp-Param-{token} header value {sent!r} does not match body value {node!r}"
    return None
