"""``python -m codegen`` (from a checkout) or ``mcp-trio codegen``: regenerate the
``mcp_trio.types.v<revision>`` modules.

Usage::

    python -m codegen                      # regenerate every pinned revision
    python -m codegen --check              # exit 1 listing modules that differ
    python -m codegen --schema-dir DIR     # read DIR/<revision>/schema.json
    python -m codegen --revision 2025-11-25            # only one pinned revision
    python -m codegen --revision R --schema FILE [--output PATH]
                                           # a new/unpinned revision from any file
    python -m codegen --output-dir DIR     # write (or --check) the modules in DIR
    python -m codegen --diff OLD NEW [--json]          # what changed between two revisions
    python -m codegen --diff-page FILE [--check]       # the docs page of every revision's changes
    python -m codegen --draft [--output-dir DIR]       # the draft revision: generate, load, compare

Run from a checkout, the modules go to its ``mcp_trio/types/``.  Installed from a wheel
(``mcp-trio codegen``, the package ``mcp_trio_codegen``), they go to the current
directory (an installed package is never written to), and ``--check`` compares with the
installed ``mcp_trio/types`` (the modules that copy runs on).

Schemas come from ``--schema-dir``, else ``$MCP_TRIO_SCHEMA_DIR``, else
``../shared/mcp-schema``, else the download cache (see ``codegen._sources``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ._diff_cmd import diff_command, page_command
from ._draft import draft_command
from ._generate import (
    DCG_VERSION,
    TYPES_DIR,
    GenerationError,
    generate_all,
    installed_dcg_version,
    module_name,
    module_path,
)
from ._sources import (
    DEFAULT_PROG,
    ENV_SCHEMA_DIR,
    PINS_NAME,
    PROJECT_ROOT,
    SchemaSourceError,
    load_pins,
    locate_schemas,
    read_unpinned,
    resolve_schema_dir,
    sources_help,
    urllib_download,
)

__all__ = ["main"]


#: How to install what the generator needs, from where it runs.
INSTALL_HINT = (
    "pip install -e '.[codegen]' (in this checkout)"
    if PROJECT_ROOT is not None
    else "pip install 'mcp-trio[codegen]'"
)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=prog,
        description="Generate the mcp_trio.types.v<revision> modules from the MCP JSON schemas.",
        epilog=sources_help(load_pins()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="regenerate in memory; exit 1 if a module differs from the one in the output directory "
        "(default: this checkout's mcp_trio/types, or the installed mcp_trio/types)",
    )
    p.add_argument("--schema-dir", metavar="DIR", help="directory holding <revision>/schema.json")
    p.add_argument("--revision", metavar="R", help="only this revision (with --schema: any revision name)")
    p.add_argument(
        "--schema",
        metavar="FILE",
        type=Path,
        help="schema file for --revision (no sha256 pin needed)",
    )
    p.add_argument(
        "--output",
        metavar="PATH",
        type=Path,
        help="output file of --revision (default: v<R>.py in the output directory)",
    )
    p.add_argument(
        "--output-dir",
        metavar="DIR",
        type=Path,
        help="where modules are written and compared (default: mcp_trio/types of the "
        "checkout this runs from; installed from a wheel, the current directory for writing "
        "and the installed mcp_trio/types for --check)",
    )
    p.add_argument(
        "--diff",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="print what changed from revision OLD to NEW (methods, notifications, capabilities, "
        "definitions, fields, enum values) instead of generating; each is a pinned revision, a "
        "schema.json file, or a revision in the schema directory (draft)",
    )
    p.add_argument("--json", action="store_true", help="with --diff: print JSON")
    p.add_argument(
        "--diff-page",
        metavar="FILE",
        type=Path,
        help="write (with --check: compare) the Markdown page of what changed in each pinned "
        "revision (docs/guide/revisions-diff.md)",
    )
    p.add_argument(
        "--draft",
        action="store_true",
        help="generate the protocol's draft revision (--schema FILE, else DIR/draft/schema.json of the "
        "schema directory, else downloaded from the upstream default branch, unpinned) into "
        "--output-dir (default: the current directory), load it, and print what it changes from "
        "the newest pinned revision; exit 1 if any step fails",
    )
    p.add_argument("--jobs", type=int, default=None, help="parallel processes (default: one per CPU)")
    p.add_argument("--no-download", action="store_true", help="never download schemas")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")
    return p


def _fail(message: str, code: int = 2) -> int:
    print(f"codegen: error: {message}", file=sys.stderr)
    return code


def _stale_hint(prog: str, output_dir: Path | None) -> str:
    if output_dir is not None:
        return f"run `{prog} --output-dir {output_dir}` (the same options, without --check) to rewrite them"
    if TYPES_DIR is not None:
        return f"run `{prog}` (the same options, without --check) to regenerate them"
    return (
        "these are the installed mcp-trio's modules, which are not rewritten: a different "
        f"datamodel-code-generator than {DCG_VERSION} prints differently; `{prog} --output-dir DIR` "
        "writes what this generator makes, to compare"
    )


def main(argv: Sequence[str] | None = None, *, prog: str | None = None) -> int:
    """Run the code generator; returns the process exit code.

    ``prog`` is the command as the user typed it, for ``--help`` and the hints
    (``mcp-trio codegen`` passes its name; ``python -m codegen`` in a checkout).
    """
    prog = prog or DEFAULT_PROG
    args = _parser(prog).parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.draft and (args.revision is not None or args.check or args.output is not None):
        return _fail("--draft takes no --revision, --check or --output (it writes vdraft.py to --output-dir)")
    if args.schema is not None and args.revision is None and not args.draft:
        return _fail("--schema needs --revision")
    if args.output is not None and args.revision is None:
        return _fail("--output needs --revision")
    if args.check and args.output is not None:
        return _fail("--check compares the committed modules; it takes no --output")
    if args.json and args.diff is None:
        return _fail("--json goes with --diff")
    if args.diff is not None or args.diff_page is not None:
        try:
            if args.diff_page is not None:
                return page_command(
                    args.diff_page,
                    check=args.check,
                    schema_dir=args.schema_dir,
                    download=not args.no_download,
                    prog=prog,
                )
            return diff_command(
                *args.diff,
                as_json=args.json,
                schema_dir=args.schema_dir,
                download=not args.no_download,
                prog=prog,
            )
        except (SchemaSourceError, ValueError) as exc:
            return _fail(str(exc))
    say = (lambda *_a: None) if args.quiet else (lambda *a: print(*a))

    version = installed_dcg_version()
    if version is None:
        return _fail(
            f"datamodel-code-generator is not installed; install the pinned version with "
            f"{INSTALL_HINT} (datamodel-code-generator=={DCG_VERSION})"
        )
    if version != DCG_VERSION:
        print(
            f"codegen: warning: datamodel-code-generator {version} is installed but the "
            f"modules are pinned to {DCG_VERSION}; output may differ",
            file=sys.stderr,
        )

    if args.draft:
        return draft_command(
            schema=args.schema,
            schema_dir=resolve_schema_dir(args.schema_dir),
            download=None if args.no_download else urllib_download,
            output_dir=args.output_dir or Path.cwd(),
        )

    start = time.perf_counter()
    try:
        if args.schema is not None:
            schema = read_unpinned(args.revision, args.schema)
            jobs = [(schema.revision, schema.data, schema.sha256)]
        else:
            pins = load_pins()
            if args.revision is not None:
                if args.revision not in pins:
                    return _fail(
                        f"revision {args.revision} is not pinned in {PINS_NAME} "
                        f"(pinned: {', '.join(pins)}); pass --schema FILE for a new revision"
                    )
                pins = {args.revision: pins[args.revision]}
            if args.schema_dir is not None:
                origin = "--schema-dir"
            elif os.environ.get(ENV_SCHEMA_DIR):
                origin = f"${ENV_SCHEMA_DIR}"
            else:
                origin = "the default ../shared/mcp-schema"
            found = locate_schemas(
                pins.values(),
                schema_dir=resolve_schema_dir(args.schema_dir),
                origin=origin,
                download=None if args.no_download else urllib_download,
                prog=prog,
            )
            jobs = [(rev, found[rev].data, found[rev].sha256) for rev in pins]
        generated = generate_all(jobs, workers=args.jobs)
    except (SchemaSourceError, GenerationError) as exc:
        return _fail(str(exc))
    elapsed = time.perf_counter() - start

    if args.check:
        stale = []
        for g in generated:
            path = module_path(g.revision, args.output_dir, check=True)
            if not path.is_file() or path.read_text(encoding="utf-8") != g.source:
                stale.append(path)
        if stale:
            print("codegen: these generated modules are out of date:", file=sys.stderr)
            for path in stale:
                print(f"  {path}", file=sys.stderr)
            print(_stale_hint(prog, args.output_dir), file=sys.stderr)
            return 1
        say(f"codegen: {len(generated)} module(s) up to date ({elapsed:.1f} s)")
        return 0

    for g in generated:
        path = args.output if args.output is not None else module_path(g.revision, args.output_dir)
        path.parent.mkdir(parents=True, exist_ok=True)
        old = path.read_text(encoding="utf-8") if path.is_file() else None
        if old != g.source:
            path.write_text(g.source, encoding="utf-8")
        state = "unchanged" if old == g.source else "written"
        say(f"codegen: {g.revision} -> {path} ({state}, {g.seconds:.1f} s)")
    say(f"codegen: {len(generated)} module(s) in {elapsed:.1f} s")
    if args.schema is not None and args.output is None and args.output_dir is None and TYPES_DIR:
        say(f"codegen: import it as mcp_trio.types.{module_name(args.revision)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
