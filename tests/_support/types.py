"""The generated message types of each revision, the official schemas' definitions and examples,
and the hand-written fixtures beside them (tests/types/fixtures)."""

from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from codegen._sources import resolve_schema_dir
from tests._support.paths import ROOT

FIXTURES = ROOT / "tests" / "types" / "fixtures"
REVISIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
#: Revisions without upstream examples: covered by tests/types/fixtures/<rev>/.
OLDER = REVISIONS[:4]
LATEST = "2026-07-28"


def module(rev: str) -> ModuleType:
    return importlib.import_module("mcp_trio.types.v" + rev.replace("-", "_"))


@functools.cache
def schema_dir() -> Path | None:
    """The directory holding <rev>/schema.json for every revision, or None."""
    found = resolve_schema_dir(None, project_root=ROOT)
    if found is None:
        return None
    if all((found / rev / "schema.json").is_file() for rev in REVISIONS):
        return found
    return None


def require_schema_dir() -> Path:
    found = schema_dir()
    if found is None:
        pytest.skip("no MCP schema directory (set MCP_TRIO_SCHEMA_DIR or provide ../shared/mcp-schema)")
    return found


@functools.cache
def raw_schema(rev: str) -> dict[str, Any]:
    return json.loads((require_schema_dir() / rev / "schema.json").read_bytes())


def raw_defs(rev: str) -> tuple[str, dict[str, Any]]:
    raw = raw_schema(rev)
    key = "$defs" if "$defs" in raw else "definitions"
    return key, raw[key]


@functools.cache
def validator(rev: str, definition: str) -> Any:
    """A jsonschema validator for one definition of the official schema."""
    from jsonschema.validators import validator_for

    raw = raw_schema(rev)
    key, _ = raw_defs(rev)
    cls = validator_for(raw)
    return cls({**raw, "$ref": f"#/{key}/{definition}"})


def raw_methods(rev: str) -> dict[str, dict[str, Any]]:
    """method -> facts, computed straight from the schema JSON (independent of codegen)."""
    key, defs = raw_defs(rev)
    prefix = f"#/{key}/"
    out: dict[str, dict[str, Any]] = {}
    unions = {
        "ClientRequest": ("request", "client"),
        "ServerRequest": ("request", "server"),
        "ClientNotification": ("notification", "client"),
        "ServerNotification": ("notification", "server"),
        "InputRequest": ("request", None),
    }
    for union, (kind, sender) in unions.items():
        node = defs.get(union)
        if node is None:
            continue
        if "anyOf" in node:
            members = [(m["$ref"][len(prefix) :], defs[m["$ref"][len(prefix) :]]) for m in node["anyOf"]]
        elif "$ref" in node:
            members = [(node["$ref"][len(prefix) :], defs[node["$ref"][len(prefix) :]])]
        else:  # a one-member union inlined by the TS -> JSON Schema converter
            members = [(None, node)]
        for name, member in members:
            if name is None:  # find the definition it copies
                name = next(
                    n
                    for n, d in defs.items()
                    if n != union and d.get("properties") == member.get("properties")
                )
            method = member["properties"]["method"]["const"]
            row = out.setdefault(method, {"kind": kind, "message": name, "senders": set(), "def": member})
            assert row["kind"] == kind and row["message"] == name
            if sender is not None:
                row["senders"].add(sender)
    return out


def roundtrip(type_: Any, data: bytes) -> tuple[Any, Any]:
    """(original, re-encoded) as parsed JSON."""
    obj = msgspec.json.decode(data, type=type_)
    return json.loads(data), json.loads(msgspec.json.encode(obj))


def fixture_files(rev: str) -> list[Path]:
    return sorted((FIXTURES / rev).glob("*/*.json"))


def example_files() -> list[Path]:
    found = schema_dir()
    if found is None:
        return []
    return sorted((found / LATEST / "examples").glob("*/*.json"))
