"""One revision: schema bytes -> normalized schema -> dcg -> post-process -> module text."""

from __future__ import annotations

import importlib.util
import json
import multiprocessing
import os
import re
import time
import warnings
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from ._normalize import normalize
from ._postprocess import postprocess
from ._registry import derive, emit
from ._schema import Normalized, SchemaView, _walk_defs

__all__ = [
    "DCG_OPTIONS",
    "DCG_VERSION",
    "TYPES_DIR",
    "GenerationError",
    "generate_all",
    "generate_module",
    "installed_types_dir",
    "module_name",
    "module_path",
]

_ROOT = Path(__file__).resolve().parent.parent
#: Where the modules are written and compared by default: the checkout's ``mcp_trio/types``
#: when the generator runs from a source checkout; ``None`` when it runs installed from a
#: wheel, where the default is the current directory (never the installed package).
TYPES_DIR: Path | None = _ROOT / "mcp_trio" / "types" if (_ROOT / "pyproject.toml").is_file() else None

#: The datamodel-code-generator version the committed modules were made with.
#: Another version may print differently; ``--check`` then reports drift.
DCG_VERSION = "0.89.0"

#: dcg options (see docs/codegen.md for why each is set).
DCG_OPTIONS: dict[str, Any] = {
    "output_model_type": "msgspec.Struct",
    "target_python_version": "3.11",
    "disable_timestamp": True,
    "formatters": ["builtin"],
    # One field per line, so the post-process can work line by line.
    "builtin_format_line_length": 1000,
    "use_annotated": True,
    "field_constraints": True,
    "use_union_operator": True,
    "use_schema_description": True,
    "enum_field_as_literal": "all",
    "keyword_only": True,
    "remove_special_field_name_prefix": True,
    "use_title_as_name": True,
}


class GenerationError(Exception):
    """Generating a module failed (message names the revision and the cause)."""


@dataclass(frozen=True)
class Generated:
    revision: str
    module: str
    source: str
    seconds: float


def module_name(revision: str) -> str:
    """``2025-11-25`` -> ``v2025_11_25``; ``draft`` -> ``vdraft``."""
    return "v" + re.sub(r"[^0-9A-Za-z]+", "_", revision).strip("_")


def installed_types_dir() -> Path | None:
    """The ``mcp_trio/types`` folder of the ``mcp_trio`` this interpreter imports (found
    without importing it), or ``None`` when there is none."""
    spec = importlib.util.find_spec("mcp_trio")
    if spec is None or not spec.submodule_search_locations:
        return None
    types = Path(next(iter(spec.submodule_search_locations))) / "types"
    return types if types.is_dir() else None


def module_path(revision: str, directory: Path | None = None, *, check: bool = False) -> Path:
    """The module file of ``revision`` in ``directory``.

    The default folder is :data:`TYPES_DIR` in a checkout.  Installed from a wheel it is
    the installed ``mcp_trio/types`` for ``check`` (what ``--check`` compares against: the
    modules this copy of mcp-trio runs on) and the current directory for writing (an
    installed package is never written to).
    """
    if directory is None:
        if TYPES_DIR is not None:
            directory = TYPES_DIR
        elif check and (installed := installed_types_dir()) is not None:
            directory = installed
        else:
            directory = Path.cwd()
    return directory / f"{module_name(revision)}.py"


def installed_dcg_version() -> str | None:
    """The installed datamodel-code-generator's version, or ``None`` if it is missing."""
    try:
        return metadata.version("datamodel-code-generator")
    except metadata.PackageNotFoundError:
        return None


def run_dcg(schema: Mapping[str, Any]) -> str:
    """Print msgspec Structs for a (normalized) schema."""
    from datamodel_code_generator import (  # imported lazily: ~1 s
        DataModelType,
        Formatter,
        InputFileType,
        LiteralType,
        PythonVersion,
        generate,
    )

    options = dict(DCG_OPTIONS)
    options["output_model_type"] = DataModelType(options["output_model_type"])
    options["target_python_version"] = PythonVersion(options["target_python_version"])
    options["formatters"] = [Formatter(f) for f in options["formatters"]]
    options["enum_field_as_literal"] = LiteralType(options["enum_field_as_literal"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = generate(dict(schema), input_file_type=InputFileType.JsonSchema, **options)
    undecodable = [str(w.message) for w in caught if "msgspec cannot decode" in str(w.message)]
    if undecodable:
        raise GenerationError(
            "datamodel-code-generator reports unions msgspec cannot decode "
            "(a normalizer rule is missing):\n  " + "\n  ".join(undecodable)
        )
    if not isinstance(out, str):  # pragma: no cover - only with multi-module output
        raise GenerationError("datamodel-code-generator returned no single module")
    return out


def _expected_names(normalized: Normalized) -> set[str]:
    view = SchemaView(normalized.schema, "")
    names = set(view.defs)
    for _owner, path, node in _walk_defs(view):
        if path and isinstance(node.get("title"), str):
            names.add(node["title"])
    return names


def header_line(revision: str, sha256: str, dcg_version: str) -> str:
    return (
        f"# GENERATED by codegen from {revision}/schema.json sha256={sha256}; "
        f"datamodel-code-generator {dcg_version}; do not edit.\n"
    )


def generate_module(revision: str, data: bytes, sha256: str) -> Generated:
    """Generate the module text of one revision (pure: no files written)."""
    start = time.perf_counter()
    try:
        schema = json.loads(data)
        normalized = normalize(schema, revision)
        view = SchemaView(normalized.schema, revision)
        methods_src = emit(derive(view))
        source = postprocess(
            run_dcg(normalized.schema),
            revision=revision,
            header=header_line(revision, sha256, installed_dcg_version() or "unknown"),
            expected_names=_expected_names(normalized),
            field_docs=normalized.field_docs,
            replaced=normalized.replaced,
            methods_src=methods_src,
        )
    except GenerationError as exc:
        raise GenerationError(f"revision {revision}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - every rule error becomes one clear message
        raise GenerationError(f"revision {revision}: {type(exc).__name__}: {exc}") from exc
    return Generated(
        revision=revision,
        module=module_name(revision),
        source=source,
        seconds=time.perf_counter() - start,
    )


def _generate_job(job: tuple[str, bytes, str]) -> Generated:
    return generate_module(*job)


def generate_all(jobs: list[tuple[str, bytes, str]], *, workers: int | None = None) -> list[Generated]:
    """Generate several revisions, in parallel processes when that helps.

    ``jobs`` are ``(revision, schema bytes, sha256)``; results keep their order.
    """
    if workers is None:
        workers = min(len(jobs), os.cpu_count() or 1)
    if workers <= 1 or len(jobs) <= 1:
        return [_generate_job(job) for job in jobs]
    # "spawn": no fork of a possibly threaded parent (pytest, IDEs).
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        return list(pool.map(_generate_job, jobs))
