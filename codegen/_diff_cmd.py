"""``codegen --diff OLD NEW`` and ``codegen --diff-page FILE``: find the two schemas, print.

A side is a pinned revision (located and sha256-checked like generation's schemas), a
``schema.json`` file, or an unpinned revision found as ``<schema dir>/<name>/schema.json``
(``draft``); unpinned schemas are used as they are.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ._diff import diff, render_page, render_text
from ._sources import (
    SchemaSourceError,
    load_pins,
    locate_schemas,
    read_unpinned,
    resolve_schema_dir,
    urllib_download,
)

__all__ = ["diff_command", "load_revision", "page_command"]


def load_revision(
    name: str, *, schema_dir: str | None, download: bool, prog: str
) -> tuple[str, dict[str, Any]]:
    """``(revision, parsed schema)`` of one side of a diff."""
    pins = load_pins()
    directory = resolve_schema_dir(schema_dir)
    if name in pins:
        found = locate_schemas(
            [pins[name]],
            schema_dir=directory,
            download=urllib_download if download else None,
            origin="--schema-dir" if schema_dir is not None else None,
            prog=prog,
        )
        return name, json.loads(found[name].data)
    path = Path(name)
    if path.is_file():
        return path.parent.name or path.stem, json.loads(read_unpinned(name, path).data)
    if directory is not None and (directory / name / "schema.json").is_file():
        return name, json.loads(read_unpinned(name, directory / name / "schema.json").data)
    where = f"{directory}/{name}/schema.json" if directory is not None else "--schema-dir DIR"
    raise SchemaSourceError(
        f"{name!r} is not a pinned revision ({', '.join(pins)}), a schema.json file, or an "
        f"unpinned revision in the schema directory ({where} does not exist)"
    )


def diff_command(
    old: str, new: str, *, as_json: bool, schema_dir: str | None, download: bool, prog: str
) -> int:
    a = load_revision(old, schema_dir=schema_dir, download=download, prog=prog)
    b = load_revision(new, schema_dir=schema_dir, download=download, prog=prog)
    result = diff(a[0], a[1], b[0], b[1])
    if as_json:
        print(json.dumps(result.as_json(), indent=2, ensure_ascii=False))
    else:
        print(render_text(result), end="")
    return 0


def page_text(*, schema_dir: str | None, download: bool, prog: str) -> str:
    """The "what changed in each revision" page: every consecutive pair of pinned revisions."""
    revisions = list(load_pins())
    schemas = [load_revision(r, schema_dir=schema_dir, download=download, prog=prog) for r in revisions]
    pairs = zip(schemas, schemas[1:], strict=False)
    return render_page([diff(a[0], a[1], b[0], b[1]) for a, b in pairs])


def page_command(path: Path, *, check: bool, schema_dir: str | None, download: bool, prog: str) -> int:
    text = page_text(schema_dir=schema_dir, download=download, prog=prog)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if check:
        if old != text:
            print(
                f"codegen: {path} is out of date; run `{prog} --diff-page {path}` to regenerate it",
                file=sys.stderr,
            )
            return 1
        print(f"codegen: {path} is up to date")
        return 0
    if old != text:
        path.write_text(text, encoding="utf-8")
    print(f"codegen: {path} ({'unchanged' if old == text else 'written'})")
    return 0
