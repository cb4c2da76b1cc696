"""Finding, downloading and verifying the pinned MCP ``schema.json`` files.

The schema files are never committed.  For every revision pinned in
``schema/revisions.toml`` codegen looks, in this order, in:

1. the directory given with ``--schema-dir``;
2. the directory named by ``$MCP_TRIO_SCHEMA_DIR``;
3. ``../shared/mcp-schema`` next to the project root, when it runs from a checkout and
   that folder exists;
4. the download cache ``~/.cache/mcp-trio/schema/<commit>/<revision>/schema.json``
   (``$XDG_CACHE_HOME`` is honoured), filling it from the pinned URL.

A directory holds ``<revision>/schema.json``.  Whatever the source, the file's
sha256 must equal the pinned one.  Failures raise :class:`SchemaSourceError`
whose message says what is missing and how to supply it; the CLI prints it
without a traceback.

The downloader is a plain callable ``(url) -> bytes`` so tests (and offline
machines) can replace it.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DEFAULT_PROG",
    "ENV_SCHEMA_DIR",
    "PINS_NAME",
    "PROJECT_ROOT",
    "REVISIONS_TOML",
    "Download",
    "Pin",
    "SchemaFile",
    "SchemaSourceError",
    "default_cache_dir",
    "load_pins",
    "locate_schemas",
    "read_unpinned",
    "resolve_schema_dir",
    "sha256_hex",
    "sources_help",
    "urllib_download",
]

_HERE = Path(__file__).resolve().parent
#: The source checkout this generator runs from (``codegen/`` beside ``pyproject.toml``),
#: or ``None`` when it runs installed from a wheel (as the package ``mcp_trio_codegen``).
PROJECT_ROOT: Path | None = _HERE.parent if (_HERE.parent / "pyproject.toml").is_file() else None
#: The pins: ``schema/revisions.toml`` of the checkout, or the copy the wheel ships as
#: package data (``mcp_trio_codegen/schema/revisions.toml``).
REVISIONS_TOML = (
    PROJECT_ROOT / "schema" / "revisions.toml"
    if PROJECT_ROOT is not None
    else _HERE / "schema" / "revisions.toml"
)
#: How messages name the pins file: its path in the repository, or in the installed package.
PINS_NAME = "schema/revisions.toml" if PROJECT_ROOT is not None else "mcp_trio_codegen/schema/revisions.toml"
ENV_SCHEMA_DIR = "MCP_TRIO_SCHEMA_DIR"
#: The command in messages when the caller names none.
DEFAULT_PROG = "python -m codegen" if PROJECT_ROOT is not None else "mcp-trio codegen"

#: Fetch one URL and return its body.  Must raise on any failure.
Download = Callable[[str], bytes]


class SchemaSourceError(Exception):
    """A schema file could not be found, fetched or verified."""


@dataclass(frozen=True)
class Pin:
    """One revision as pinned in ``schema/revisions.toml``."""

    revision: str
    commit: str
    url: str
    sha256: str


@dataclass(frozen=True)
class SchemaFile:
    """A located and verified schema."""

    revision: str
    path: Path
    data: bytes
    sha256: str


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def load_pins(path: Path = REVISIONS_TOML) -> dict[str, Pin]:
    """Read the pinned revisions, in file order."""
    with path.open("rb") as f:
        doc = tomllib.load(f)
    pins: dict[str, Pin] = {}
    for revision, entry in doc.get("revisions", {}).items():
        try:
            pins[revision] = Pin(
                revision=revision,
                commit=entry["commit"],
                url=entry["url"],
                sha256=entry["sha256"].lower(),
            )
        except KeyError as exc:  # pragma: no cover - only on a broken toml
            raise SchemaSourceError(f"{path}: revision {revision!r} lacks the key {exc.args[0]!r}") from None
    return pins


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcp-trio" / "schema"


def resolve_schema_dir(
    cli_dir: str | os.PathLike[str] | None,
    *,
    environ: dict[str, str] | None = None,
    project_root: Path | None = PROJECT_ROOT,
) -> Path | None:
    """Pick the schema directory: CLI, then environment, then ../shared/mcp-schema.

    Returns ``None`` when none applies; the caller then uses the download cache.
    """
    env = os.environ if environ is None else environ
    if cli_dir is not None:
        return Path(cli_dir)
    if env.get(ENV_SCHEMA_DIR):
        return Path(env[ENV_SCHEMA_DIR])
    if project_root is None:
        return None
    shared = project_root.parent / "shared" / "mcp-schema"
    if shared.is_dir():
        return shared
    return None


def urllib_download(url: str, *, timeout: float = 30.0) -> bytes:
    """Default downloader (stdlib only)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - pinned https URL
        return bytes(response.read())


def _how_to_supply(pins: Iterable[Pin], cache_dir: Path, prog: str = DEFAULT_PROG) -> str:
    pins = list(pins)
    commit = pins[0].commit if pins else "<commit>"
    lines = [
        "Supply the schemas in one of three ways:",
        f"  1. {prog} --schema-dir DIR  (DIR/<revision>/schema.json)",
        f"  2. export {ENV_SCHEMA_DIR}=DIR  (same layout; used when --schema-dir is not given)",
        "  3. neither set"
        + (" and no ../shared/mcp-schema" if PROJECT_ROOT is not None else "")
        + ": codegen downloads the pinned files into",
        f"     {cache_dir}/<commit>/<revision>/schema.json (needs network; or put them there)",
        f"Files come from github.com/modelcontextprotocol/modelcontextprotocol at commit {commit},",
        f"path schema/<revision>/schema.json; their sha256 is pinned in {PINS_NAME}.",
    ]
    return "\n".join(lines)


def sources_help(pins: dict[str, Pin]) -> str:
    """Where the schemas come from, for ``--help`` (the schemas are not shipped)."""
    commits = sorted({pin.commit for pin in pins.values()})
    shared = "\n  3. ../shared/mcp-schema beside this checkout, when it exists;" if PROJECT_ROOT else ""
    last = 4 if PROJECT_ROOT else 3
    return (
        "where the schemas come from (they are not shipped with mcp-trio):\n"
        f"  pinned revisions: {', '.join(pins)}; each pinned by upstream commit, URL and sha256\n"
        f"  in {PINS_NAME}. The first of these that applies is used:\n"
        "  1. --schema-dir DIR: DIR/<revision>/schema.json (nothing is downloaded);\n"
        f"  2. ${ENV_SCHEMA_DIR}=DIR: the same layout;{shared}\n"
        f"  {last}. the cache {default_cache_dir()}/<commit>/<revision>/schema.json, filled by\n"
        "     downloading the pinned URL (--no-download: never), from\n"
        "     github.com/modelcontextprotocol/modelcontextprotocol at commit "
        f"{', '.join(c[:12] for c in commits)}.\n"
        "  Whatever the source, a file whose sha256 is not the pinned one is refused.\n"
        "  --revision R --schema FILE generates any revision (a draft, a new one) from FILE, unpinned."
    )


def _verify(pin: Pin, path: Path, data: bytes, origin: str) -> SchemaFile:
    digest = sha256_hex(data)
    if digest != pin.sha256:
        raise SchemaSourceError(
            f"sha256 mismatch for revision {pin.revision} ({origin}: {path}):\n"
            f"  expected {pin.sha256}\n"
            f"  got      {digest}\n"
            "The file is not the pinned upstream schema.json. Replace it with the file from "
            f"commit {pin.commit} ({pin.url}), or pin a new commit and sha256 in "
            f"{PINS_NAME}."
        )
    return SchemaFile(revision=pin.revision, path=path, data=data, sha256=digest)


def locate_schemas(
    pins: Iterable[Pin],
    *,
    schema_dir: Path | None,
    cache_dir: Path | None = None,
    download: Download | None = urllib_download,
    origin: str | None = None,
    prog: str = DEFAULT_PROG,
) -> dict[str, SchemaFile]:
    """Locate (or download) and verify the schema of every pinned revision.

    With ``schema_dir`` set, every file must be present there: a missing file is
    an error (nothing is downloaded behind the user's back).  Without it, the
    cache is used and filled with ``download`` (``None`` disables downloading).
    All problems are collected and raised together as one
    :class:`SchemaSourceError`; ``origin`` says where ``schema_dir`` came from
    (for the message).
    """
    pins = list(pins)
    cache = default_cache_dir() if cache_dir is None else cache_dir
    found: dict[str, SchemaFile] = {}
    problems: list[str] = []
    needs_help = False
    if schema_dir is not None and not schema_dir.is_dir():
        where = f" (from {origin})" if origin else ""
        raise SchemaSourceError(
            f"schema directory {schema_dir}{where} does not exist; it should hold "
            f"<revision>/schema.json for {', '.join(p.revision for p in pins)}\n\n"
            + _how_to_supply(pins, cache, prog)
        )
    for pin in pins:
        if schema_dir is not None:
            path = schema_dir / pin.revision / "schema.json"
            if not path.is_file():
                problems.append(f"missing {path} (revision {pin.revision})")
                needs_help = True
                continue
            try:
                found[pin.revision] = _verify(pin, path, path.read_bytes(), "schema dir")
            except SchemaSourceError as exc:
                problems.append(str(exc))
            continue

        path = cache / pin.commit / pin.revision / "schema.json"
        if path.is_file():
            try:
                found[pin.revision] = _verify(pin, path, path.read_bytes(), "cache")
            except SchemaSourceError as exc:
                problems.append(str(exc) + f"\nDelete {path} to download it again.")
            continue
        if download is None:
            problems.append(f"missing {path} (revision {pin.revision}) and downloading is disabled")
            needs_help = True
            continue
        try:
            data = download(pin.url)
        except Exception as exc:  # noqa: BLE001 - any download failure is reported the same way
            problems.append(
                f"could not download revision {pin.revision} from {pin.url}: {type(exc).__name__}: {exc}"
            )
            needs_help = True
            continue
        try:
            schema = _verify(pin, path, data, "download")
        except SchemaSourceError as exc:
            problems.append(str(exc))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".json.part")
        tmp.write_bytes(data)
        tmp.replace(path)
        found[pin.revision] = schema

    if problems:
        message = "\n".join(problems)
        if needs_help:
            message += "\n\n" + _how_to_supply(pins, cache, prog)
        raise SchemaSourceError(message)
    return found


def read_unpinned(revision: str, path: Path) -> SchemaFile:
    """Read a schema for ``--revision R --schema FILE`` (no pin required)."""
    if not path.is_file():
        raise SchemaSourceError(f"schema file {path} for revision {revision} does not exist")
    data = path.read_bytes()
    return SchemaFile(revision=revision, path=path, data=data, sha256=sha256_hex(data))
