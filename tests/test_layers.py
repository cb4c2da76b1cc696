"""The dependency direction of docs/architecture.md, enforced on the source.

Each module of ``mcp_trio`` belongs to a layer; a module may import only from
lower layers, or from its own layer inside its own package.  Some layers also
have a list of third-party packages they may use.  Imports under
``if TYPE_CHECKING:`` are not counted (they do not run).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "mcp_trio"

# module prefix -> layer (longest prefix wins)
LAYERS: dict[str, int] = {
    "mcp_trio._version": 0,
    "mcp_trio._exceptions": 0,
    "mcp_trio.types._wire": 0,
    "mcp_trio.types": 1,
    "mcp_trio._jsonrpc": 2,
    "mcp_trio._core": 3,
    "mcp_trio.transports": 3,
    "mcp_trio._engine": 4,
    "mcp_trio.server": 5,
    "mcp_trio.client": 5,
    "mcp_trio.auth": 5,
    "mcp_trio.testing": 5,
    "mcp_trio.fuzzing": 5,
    "mcp_trio._cli": 6,
    "mcp_trio": 6,
}

STDLIB = set(sys.stdlib_module_names) | {"__future__"}

# module prefix -> third-party packages it may import
THIRD_PARTY: dict[str, set[str]] = {
    "mcp_trio.types": {"msgspec"},
    "mcp_trio._jsonrpc": {"msgspec"},
    "mcp_trio._exceptions": set(),
    "mcp_trio.server._uritemplate": set(),
    "mcp_trio.server._cursor": set(),
    "mcp_trio.server._signature": {"msgspec"},
    "mcp_trio._core": {"msgspec"},  # sans-IO: never trio
    "mcp_trio.server._mrtr": {"msgspec"},
    "mcp_trio.transports": {"msgspec", "trio", "h11", "wsproto", "hypercorn"},
    "mcp_trio._engine._session": {"msgspec", "trio"},
    "mcp_trio._engine._context": {"msgspec", "trio"},
    "mcp_trio.fuzzing": {"msgspec", "h11", "hypothesis"},
    # OAuth: JOSE (the ``auth`` extra: PyJWT and cryptography) imported where JWTs are made
    "mcp_trio.auth": {"msgspec", "trio", "h11", "hypercorn", "jwt", "cryptography"},
    "mcp_trio": {"msgspec", "trio", "h11", "wsproto", "hypercorn"},
}

# Lazy imports allowed inside functions only (the CLI reaching the dev-time generator).
LAZY_ALLOWED = {("mcp_trio._cli", "mcp_trio_codegen.__main__")}


def _longest(table: dict[str, object], module: str) -> str:
    best = ""
    for prefix in table:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    assert best, module
    return best


def layer_of(module: str) -> int:
    return LAYERS[_longest(LAYERS, module)]  # type: ignore[return-value]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> list[tuple[str, bool]]:
    """(imported module, at module level?) for every import that runs."""
    tree = ast.parse(path.read_text(), str(path))
    mod = module_name(path)
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub, top)
                continue
            if isinstance(child, ast.Import):
                found.extend((alias.name, top) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")
                    if child.level > 1:
                        base = base[: -(child.level - 1)]
                    target = ".".join(base + ([child.module] if child.module else []))
                    if child.module is None:
                        found.extend((f"{target}.{alias.name}", top) for alias in child.names)
                    else:
                        found.append((target, top))
                else:
                    found.append((child.module or "", top))
            nested = top and not isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            visit(child, nested)

    visit(tree, True)
    return found


def _resolve_internal(name: str) -> str:
    """``mcp_trio.x.Y`` may name an attribute; walk back to a real module."""
    parts = name.split(".")
    while parts:
        candidate = ROOT.joinpath(*parts)
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            return ".".join(parts)
        parts.pop()
    raise AssertionError(f"cannot resolve {name}")


SOURCES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_imports_follow_the_layers(path: Path) -> None:
    importer = module_name(path)
    own_layer = layer_of(importer)
    allowed_third = THIRD_PARTY[_longest(THIRD_PARTY, importer)]
    problems = []
    for name, top in imports_of(path):
        root = name.split(".")[0]
        if root == "mcp_trio":
            target = _resolve_internal(name)
            if target == importer:
                continue
            target_layer = layer_of(target)
            same_package = target.split(".")[:2] == importer.split(".")[:2]
            if target_layer < own_layer or (target_layer == own_layer and same_package):
                continue
            problems.append(f"{importer} (layer {own_layer}) imports {target} (layer {target_layer})")
        elif root in STDLIB:
            continue
        elif (importer, name) in LAZY_ALLOWED and not top:
            continue
        elif root not in allowed_third:
            problems.append(f"{importer} imports third-party {name!r} (allowed: {sorted(allowed_third)})")
    assert not problems, "\n".join(problems)


def test_core_has_no_async_code() -> None:
    for path in (PACKAGE / "_core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        bad = [n.name for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)]
        assert not bad, f"{path}: async def in the sans-IO core: {bad}"


def test_the_layer_table_covers_every_module() -> None:
    for path in SOURCES:
        layer_of(module_name(path))


def test_the_checker_catches_an_upward_import(tmp_path: Path) -> None:
    fake = PACKAGE / "_core" / "_zz_probe_upward.py"
    fake.write_text("from .._engine._session import Session\nimport trio\n")
    try:
        with pytest.raises(AssertionError, match="imports"):
            test_imports_follow_the_layers(fake)
    finally:
        fake.unlink()


def test_public_names_have_a_public_module() -> None:
    import mcp_trio

    for name in dir(mcp_trio):
        if name.startswith("_"):
            continue
        obj = getattr(mcp_trio, name)
        module = getattr(obj, "__module__", None)
        if module is not None and isinstance(module, str) and module.startswith("mcp_trio"):
            assert not any(part.startswith("_") for part in module.split(".")), (name, module)
