"""Post-process (rule P): turn dcg's output into the committed module.

dcg prints the normalized schema faithfully; what is left are printing details
no schema rule can express:

* drop dcg's header and its ``Model: TypeAlias = Any`` root alias;
* restore definition names dcg renamed to dodge an import (2024-11-05's
  ``Annotated`` became ``AnnotatedModel``; the import becomes ``_Annotated``);
* drop the ``Meta(title=...)`` that ``--use-title-as-name`` leaves on fields;
* ``X | UnsetType = <value>`` -> ``X = <value>`` (``jsonrpc``, ``resultType``):
  a real default, so the field is always encoded and never ``UNSET``;
* print each field's description as an attribute docstring (rule "docs" moved
  them out of the schema);
* ``dict=True`` on every Struct: an instance can carry the unknown members
  ``mcp_trio.types.lossless`` keeps for it (measured free on decode and
  encode; the ordinary decoders still ignore unknown members);
* add our header, the ``MethodSpec`` import, ``PROTOCOL_VERSION``,
  ``REPLACED`` and ``METHODS``.

The input uses dcg's builtin formatter with a very long line length, so every
field is one line and the text rewrites below are line-local.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize

__all__ = ["PostprocessError", "postprocess"]


class PostprocessError(Exception):
    """dcg printed something the post-process does not recognise."""


_TITLE_META = re.compile(r"\bAnnotated\[(\w+), Meta\(title='\w+'\)\]")
_STRUCT_CLASS = re.compile(r"^(class \w+\(Struct, kw_only=True)(?=[,)])", re.M)
_VALUE_DEFAULT = re.compile(
    r"^(?P<head>\s+\w+: .+?) \| UnsetType = "
    r"(?P<default>'[^'\\]*'|-?\d+(?:\.\d+)?|True|False)$"
)


def _rename_tokens(src: str, renames: dict[str, str]) -> str:
    """Rename NAME tokens (never text inside strings or comments)."""
    out = []
    lines = io.StringIO(src).readlines()  # the same line split tokenize sees
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    last = 0
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.NAME and tok.string in renames:
            start = offsets[tok.start[0] - 1] + tok.start[1]
            end = offsets[tok.end[0] - 1] + tok.end[1]
            out.append(src[last:start])
            out.append(renames[tok.string])
            last = end
    out.append(src[last:])
    return "".join(out)


def _restore_names(src: str, expected: set[str]) -> str:
    """Undo dcg's ``FooModel`` renames of definitions that clash with imports."""
    defined = _top_level_names(src)
    renames: dict[str, str] = {}
    imported = {
        alias.asname or alias.name
        for node in ast.parse(src).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    for name in sorted(expected - defined):
        if name + "Model" not in defined:
            continue
        if name in imported:
            renames[name] = "_" + name
        renames[name + "Model"] = name
    if not renames:
        return src
    src = _rename_tokens(src, renames)
    # The import line itself got renamed too: `from typing import _Annotated` ->
    # `from typing import Annotated as _Annotated`.
    for old, new in renames.items():
        if new == "_" + old:
            src = re.sub(
                rf"^(from (?:typing|msgspec) import .*)\b{new}\b",
                lambda m, old=old, new=new: m.group(1) + f"{old} as {new}",
                src,
                count=1,
                flags=re.M,
            )
    return src


def _top_level_names(src: str) -> set[str]:
    names = set()
    for node in ast.parse(src).body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _docstring(text: str, indent: str) -> list[str]:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"').strip()
    if "\n" not in text and not text.endswith('"') and len(text) < 90:
        return [f'{indent}"""{text}"""']
    body = [f"{indent}{line}".rstrip() for line in text.split("\n")]
    return [f'{indent}"""', *body, f'{indent}"""']


def _wire_name(node: ast.AnnAssign) -> str | None:
    if not isinstance(node.target, ast.Name):
        return None
    value = node.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
        for kw in value.keywords:
            if kw.arg == "name" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
    return node.target.id


def _add_field_docs(src: str, docs: dict[tuple[str, str], str]) -> str:
    lines = src.rstrip("\n").split("\n")  # the line numbering ast uses
    inserts: list[tuple[int, list[str]]] = []
    placed = set()
    for node in ast.parse(src).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            key = ("", node.target.id)  # a type alias
            if key in docs:
                inserts.append((node.end_lineno or node.lineno, _docstring(docs[key], "")))
                placed.add(key)
            continue
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            if not isinstance(stmt, ast.AnnAssign):
                continue
            wire = _wire_name(stmt)
            key = (node.name, wire or "")
            if key in docs:
                indent = " " * stmt.col_offset
                inserts.append((stmt.end_lineno or stmt.lineno, _docstring(docs[key], indent)))
                placed.add(key)
    missing = sorted(set(docs) - placed)
    if missing:
        shown = ", ".join(f"{c}.{f}" for c, f in missing[:10])
        raise PostprocessError(f"field descriptions without a field in the output: {shown}")
    for line_no, doc in sorted(inserts, reverse=True):
        lines[line_no:line_no] = doc
    return "\n".join(lines) + "\n"


def _strip_dcg_header(src: str) -> str:
    lines = src.split("\n")
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    text = "\n".join(lines).rstrip("\n") + "\n"
    text = re.sub(r"^Model: TypeAlias = Any\n\n*", "", text, flags=re.M)
    return text


def _defaults(src: str) -> str:
    out = []
    for line in src.rstrip("\n").split("\n"):
        m = _VALUE_DEFAULT.match(line)
        if m:
            line = f"{m.group('head')} = {m.group('default')}"
        out.append(line)
    return "\n".join(out) + "\n"


def _keep_extras(src: str) -> str:
    """``class X(Struct, kw_only=True...)`` -> ``class X(Struct, kw_only=True, dict=True...)``."""
    src, count = _STRUCT_CLASS.subn(r"\1, dict=True", src)
    plain = len(re.findall(r"^class \w+\(Struct\b", src, flags=re.M))
    if count != plain:
        raise PostprocessError(
            f"{plain - count} Struct class line(s) not of the form `(Struct, kw_only=True...`"
        )
    return src


def _py_literal_dict(d: dict[str, str], name: str) -> str:
    if not d:
        return f"{name}: dict[str, str] = {{}}\n"
    lines = [f"{name}: dict[str, str] = {{"]
    lines += [f"    {k!r}: {v!r}," for k, v in sorted(d.items())]
    lines.append("}")
    return "\n".join(lines) + "\n"


def postprocess(
    src: str,
    *,
    revision: str,
    header: str,
    expected_names: set[str],
    field_docs: dict[tuple[str, str], str],
    replaced: dict[str, str],
    methods_src: str,
) -> str:
    """Return the final module text for one revision."""
    src = _strip_dcg_header(src)
    src = _TITLE_META.sub(r"\1", src)
    src = _restore_names(src, expected_names)
    src = _defaults(src)
    src = _keep_extras(src)
    src = _add_field_docs(src, field_docs)
    if "| UnsetType = '" in src:
        raise PostprocessError("a `| UnsetType = <value>` default survived the post-process")

    missing = sorted(expected_names - _top_level_names(src))
    if missing:
        raise PostprocessError(f"definitions missing from the generated module: {missing}")

    # Imports: ours after dcg's, then the definitions.
    lines = src.rstrip("\n").split("\n")
    last_import = max(
        node.end_lineno or node.lineno
        for node in ast.parse(src).body
        if isinstance(node, ast.Import | ast.ImportFrom)
    )
    imports = "\n".join(lines[:last_import])
    definitions = "\n".join(lines[last_import:]).strip("\n")
    body = f"{imports}\n\nfrom mcp_trio.types._wire import MethodSpec\n\n\n{definitions}\n"

    tail = [
        "",
        "",
        "# ---- added by codegen (not from the schema) ----",
        "",
        f"PROTOCOL_VERSION = {revision!r}",
        "",
        "#: Schema definitions this module does not define, and what takes their place.",
        _py_literal_dict(replaced, "REPLACED"),
        "#: One entry per request and notification method of this revision.",
        methods_src,
    ]
    text = header + "\n" + body + "\n".join(tail)
    return text.rstrip("\n") + "\n"
