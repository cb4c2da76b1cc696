"""``codegen --draft``: generate the protocol's draft revision and say what it changes.

The draft is never pinned (it changes with every upstream commit), so its schema is used
as found: ``--schema FILE``, else ``<schema dir>/draft/schema.json``, else downloaded from
the upstream default branch (:data:`DRAFT_URL`).  The run

1. generates ``vdraft.py`` into the output directory (a failure here is what a new
   revision would meet: a normalizer rule or a registry entry to add);
2. imports it and builds a msgspec decoder for every type of its ``METHODS``;
3. prints what the draft changes from the newest pinned revision (``--diff``), and keeps
   that as ``draft-diff.md`` and ``draft-diff.json`` beside the module.

It returns 0 when every step passed, 1 otherwise.  CI runs it as a step allowed to fail
(``.ci/run``): the draft breaking the generator is news, not a broken build.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tomllib
from pathlib import Path

import msgspec

from ._diff import diff, render_text
from ._generate import GenerationError, generate_module, module_name
from ._sources import (
    REVISIONS_TOML,
    Download,
    SchemaFile,
    SchemaSourceError,
    load_pins,
    locate_schemas,
    sha256_hex,
)

__all__ = ["DRAFT", "DRAFT_URL", "draft_command", "find_draft"]

DRAFT = "draft"


def _draft_url() -> str:
    with REVISIONS_TOML.open("rb") as f:
        template: str = tomllib.load(f)["upstream"]["url_template"]
    return template.format(commit="main", revision=DRAFT)


#: Where the draft is downloaded from when no file is given: the upstream default branch.
DRAFT_URL = _draft_url()


def find_draft(
    *,
    schema: Path | None,
    schema_dir: Path | None,
    download: Download | None,
    url: str = DRAFT_URL,
) -> tuple[SchemaFile, str]:
    """The draft schema and a sentence saying where it came from."""
    if schema is not None:
        if not schema.is_file():
            raise SchemaSourceError(f"draft schema file {schema} does not exist")
        return SchemaFile(DRAFT, schema, schema.read_bytes(), sha256_hex(schema.read_bytes())), str(schema)
    if schema_dir is not None and (schema_dir / DRAFT / "schema.json").is_file():
        path = schema_dir / DRAFT / "schema.json"
        data = path.read_bytes()
        return SchemaFile(DRAFT, path, data, sha256_hex(data)), str(path)
    where = f"no {schema_dir / DRAFT / 'schema.json'}, and " if schema_dir is not None else ""
    if download is None:
        raise SchemaSourceError(
            f"no draft schema: {where}downloading is disabled; pass --schema FILE or a --schema-dir "
            f"holding draft/schema.json, or allow the download of {url}"
        )
    try:
        data = download(url)
    except Exception as exc:  # noqa: BLE001 - any download failure is reported the same way
        raise SchemaSourceError(
            f"no draft schema: {where}downloading {url} failed: {type(exc).__name__}: {exc}"
        ) from None
    return SchemaFile(DRAFT, Path(url), data, sha256_hex(data)), f"{url} (unpinned)"


def _decoders(path: Path) -> int:
    """Import the generated module from ``path``; build a decoder for each registry type."""
    name = f"_mcp_trio_codegen_{module_name(DRAFT)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # msgspec resolves the (string) annotations through it
    try:
        spec.loader.exec_module(module)
        count = 0
        for entry in module.METHODS.values():
            for t in (entry.message, entry.params, *entry.results):
                if t is not None:
                    msgspec.json.Decoder(t)
                    count += 1
        return count
    finally:
        del sys.modules[name]


def draft_command(
    *,
    schema: Path | None,
    schema_dir: Path | None,
    download: Download | None,
    output_dir: Path,
    url: str = DRAFT_URL,
) -> int:
    try:
        found, origin = find_draft(schema=schema, schema_dir=schema_dir, download=download, url=url)
    except SchemaSourceError as exc:
        print(f"codegen: draft: {exc}", file=sys.stderr)
        return 1
    print(f"codegen: draft: schema from {origin}, sha256 {found.sha256}")
    output_dir.mkdir(parents=True, exist_ok=True)
    failed = False
    try:
        generated = generate_module(DRAFT, found.data, found.sha256)
    except GenerationError as exc:
        print(f"codegen: draft: does not generate: {exc}", file=sys.stderr)
        failed = True
    else:
        path = output_dir / f"{generated.module}.py"
        path.write_text(generated.source, encoding="utf-8")
        try:
            count = _decoders(path)
        except Exception as exc:  # noqa: BLE001 - whatever breaks is the report
            print(f"codegen: draft: {path} does not load: {type(exc).__name__}: {exc}", file=sys.stderr)
            failed = True
        else:
            print(f"codegen: draft: {path} generated; {count} registry types build a decoder")
    latest = list(load_pins())[-1]
    pinned = _pinned_schema(latest, schema_dir, download)
    if pinned is None:
        print(f"codegen: draft: {latest}'s schema is not at hand: no comparison", file=sys.stderr)
        return 1
    try:
        changes = diff(latest, pinned, DRAFT, json.loads(found.data))
    except Exception as exc:  # noqa: BLE001 - a draft the comparison cannot read is the report
        print(f"codegen: draft: cannot compare with {latest}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    text = render_text(changes)
    (output_dir / "draft-diff.md").write_text(text, encoding="utf-8")
    (output_dir / "draft-diff.json").write_text(
        json.dumps(changes.as_json(), indent=2) + "\n", encoding="utf-8"
    )
    print(text, end="")
    return 1 if failed else 0


def _pinned_schema(
    revision: str, schema_dir: Path | None, download: Download | None
) -> dict[str, object] | None:
    try:
        found = locate_schemas([load_pins()[revision]], schema_dir=schema_dir, download=download)
    except SchemaSourceError as exc:
        print(f"codegen: draft: {exc}", file=sys.stderr)
        return None
    loaded: dict[str, object] = json.loads(found[revision].data)
    return loaded
