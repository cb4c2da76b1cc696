"""The layout of docs/architecture.md, enforced on the source.

* Each part of ``mcp_trio`` (a top-level module or package: ``_core``,
  ``transports``, ``server``, ...) sits in a layer; a module imports only from
  parts of lower layers, or from its own part.  Some parts also have a list of
  third-party packages they may use.
* The module tree in docs/architecture.md names every module, its job and what
  it may import (the ``→`` lines below it: other parts by name, modules of its
  own part with a leading dot); every import that runs must be listed there,
  and every module listed must exist.
* No import cycle between modules, counting the imports inside functions too;
  only imports under ``if TYPE_CHECKING:`` are left out (they do not run).
* No class of the library, the generator, the benchmarks or the example
  authorization server is over 400 lines counted with its in-package bases
  (docs/architecture.md; the classes over it when the rule came in may only
  shrink).  It replaces the cap of 600 lines per module, which was met by
  spreading classes over mixin files.
* The private APIs of dependencies are used only in the compat modules.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

from tests._support.paths import ROOT

PACKAGE = ROOT / "mcp_trio"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

# part -> layer
LAYERS: dict[str, int] = {
    "_version": 0,
    "_exceptions": 0,
    "types": 1,  # types._wire is layer 0 inside it: the generated modules import it
    "_jsonrpc": 2,
    "store": 2,  # what the workers share (sessions, events, tasks, bus); below the transports that use it
    "_jsonschema": 1,  # JSON Schema checks (the validation extra), for the server and the client
    "_core": 3,
    "transports": 3,
    "_engine": 4,
    "middleware": 4,  # what server and client wrap their handlers with (the engine only under TYPE_CHECKING)
    "server": 5,
    "client": 5,
    "auth": 5,
    "fuzzing": 5,
    "testing": 5,  # what users' tests use: the channel contract checked, a raw JSON-RPC peer
    "proxy": 6,  # proxy(target): a server (server) forwarding to another over a client (client)
    "_cli": 7,
    "__main__": 8,  # python -m mcp_trio: runs the command
    "": 7,  # mcp_trio/__init__.py
}

STDLIB = set(sys.stdlib_module_names) | {"__future__"}

# module prefix -> third-party packages it may import (longest prefix wins)
THIRD_PARTY: dict[str, set[str]] = {
    "mcp_trio.types": {"msgspec"},
    "mcp_trio._jsonrpc": {"msgspec"},
    "mcp_trio.store": {"msgspec", "trio"},
    # the ``redis`` extra: only open_store reaches this module, inside the function
    "mcp_trio.store._redis": {"msgspec", "trio", "coredis", "anyio"},
    # the ``fast`` extra: only the lean door's parser="httptools" reaches this module, inside a function
    "mcp_trio.transports.http.doors._httptools": {"h11", "httptools"},
    "mcp_trio._exceptions": set(),
    "mcp_trio.server._uritemplate": set(),
    "mcp_trio.server._cursor": set(),
    "mcp_trio.server._signature": {"msgspec"},
    "mcp_trio.server._typeschema": {"msgspec"},
    # pydantic and annotated_types are optional: recognised through sys.modules, never imported
    "mcp_trio.server._constraints": {"msgspec"},
    "mcp_trio.server._pydantic": {"msgspec"},
    "mcp_trio.server._results": {"msgspec"},
    "mcp_trio.server._mrtr": {"msgspec"},
    "mcp_trio._core": {"msgspec"},  # sans-IO: never trio
    "mcp_trio.transports": {"msgspec", "trio", "h11", "wsproto", "hypercorn"},
    "mcp_trio._engine": {"msgspec", "trio"},
    "mcp_trio.middleware": {"msgspec", "trio"},
    "mcp_trio.fuzzing": {"msgspec", "h11", "hypothesis"},
    # the ``validation`` extra, imported where structured results are checked
    "mcp_trio._jsonschema": {"msgspec", "jsonschema_rs"},
    # OAuth: JOSE (the ``auth`` extra: PyJWT and cryptography) imported where JWTs are made
    "mcp_trio.auth": {"msgspec", "trio", "h11", "hypercorn", "jwt", "cryptography"},
    "mcp_trio": {"msgspec", "trio", "h11", "wsproto", "hypercorn"},
}

# Lazy imports allowed inside functions only (the CLI reaching the generator, an optional extra).
LAZY_ALLOWED = {
    ("mcp_trio._cli", "mcp_trio_codegen.__main__"),
    ("mcp_trio.middleware._otel", "opentelemetry"),  # the ``otel`` extra, when OpenTelemetry() is made
}

GENERATED = re.compile(r"mcp_trio\.types\.v\d{4}_\d{2}_\d{2}$")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def part_of(module: str) -> str:
    """``mcp_trio.server._tools`` -> ``server``; ``mcp_trio`` -> ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def layer_of(module: str) -> int:
    if module == "mcp_trio.types._wire":
        return 0
    return LAYERS[part_of(module)]


def _longest(table: dict[str, set[str]], module: str) -> str:
    best = ""
    for prefix in table:
        if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > len(best):
            best = prefix
    assert best, module
    return best


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def imports_of(path: Path) -> tuple[tuple[str, bool], ...]:
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
                        # ``from .pkg import submodule`` imports the submodule too
                        found.extend(
                            (f"{target}.{alias.name}", top)
                            for alias in child.names
                            if _is_module(f"{target}.{alias.name}")
                        )
                else:
                    found.append((child.module or "", top))
            nested = top and not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            visit(child, nested)

    visit(tree, True)
    return tuple(found)


def _is_module(name: str) -> bool:
    candidate = ROOT.joinpath(*name.split("."))
    return candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists()


def _resolve_internal(name: str) -> str:
    """``mcp_trio.x.Y`` may name an attribute; walk back to a real module."""
    parts = name.split(".")
    while parts:
        if _is_module(".".join(parts)):
            return ".".join(parts)
        parts.pop()
    raise AssertionError(f"cannot resolve {name}")


def internal_imports(path: Path) -> set[str]:
    importer = module_name(path)
    targets = {_resolve_internal(name) for name, _ in imports_of(path) if name.split(".")[0] == "mcp_trio"}
    targets.discard(importer)
    return targets


SOURCES = sorted(PACKAGE.rglob("*.py"))
# the library, and the tooling beside it: the generator, the benchmarks, the example
# authorization server (examples/everything.py, the conformance fixture server, is one file
# on purpose: the suite's fixture list, served by path)
HAND_WRITTEN = [
    *(p for p in SOURCES if not GENERATED.match(module_name(p))),
    *sorted((ROOT / "codegen").rglob("*.py")),
    *sorted((ROOT / "benchmarks").rglob("*.py")),
    *sorted((ROOT / "examples" / "authorization_server").rglob("*.py")),
]


def _check_layers(path: Path) -> list[str]:
    importer = module_name(path)
    own_layer = layer_of(importer)
    allowed_third = THIRD_PARTY[_longest(THIRD_PARTY, importer)]
    problems = []
    for target in sorted(internal_imports(path)):
        target_layer = layer_of(target)
        if target_layer < own_layer or part_of(target) == part_of(importer):
            continue
        problems.append(f"{importer} (layer {own_layer}) imports {target} (layer {target_layer})")
    for name, top in imports_of(path):
        root = name.split(".")[0]
        if root == "mcp_trio" or root in STDLIB:
            continue
        if (importer, name) in LAZY_ALLOWED and not top:
            continue
        if root not in allowed_third:
            problems.append(f"{importer} imports third-party {name!r} (allowed: {sorted(allowed_third)})")
    return problems


def test_imports_follow_the_layers() -> None:
    problems = [problem for path in SOURCES for problem in _check_layers(path)]
    assert not problems, "\n".join(problems)


def test_the_checker_catches_an_upward_import() -> None:
    fake = PACKAGE / "_core" / "_zz_probe_upward.py"
    fake.write_text("from .._engine._session import Session\nimport trio\n")
    try:
        problems = _check_layers(fake)
    finally:
        fake.unlink()
    assert problems == [
        "mcp_trio._core._zz_probe_upward (layer 3) imports mcp_trio._engine._session (layer 4)",
        "mcp_trio._core._zz_probe_upward imports third-party 'trio' (allowed: ['msgspec'])",
    ]


def test_the_layer_table_covers_every_part() -> None:
    assert {part_of(module_name(p)) for p in SOURCES} == set(LAYERS)


def test_core_has_no_async_code() -> None:
    for path in (PACKAGE / "_core").rglob("*.py"):
        tree = ast.parse(path.read_text())
        bad = [n.name for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)]
        assert not bad, f"{path}: async def in the sans-IO core: {bad}"


#: Modules that decide without I/O, with everything they import: never trio, never async.
SANS_IO = ("mcp_trio.transports.http.server._planner",)


def test_the_sans_io_modules_stay_sans_io() -> None:
    """The HTTP planner (like ``_core``) runs no I/O: no module it imports, however indirectly,
    imports trio or a web server's package, or defines a coroutine."""
    by_name = {module_name(p): p for p in SOURCES}
    for root in SANS_IO:
        seen, todo = set(), [root]
        while todo:
            module = todo.pop()
            if module in seen:
                continue
            seen.add(module)
            path = by_name[module]
            tree = ast.parse(path.read_text())
            coroutines = [n.name for n in ast.walk(tree) if isinstance(n, ast.AsyncFunctionDef)]
            assert not coroutines, f"{module} (imported by {root}): async def {coroutines}"
            for name, top in imports_of(path):
                if not top:
                    continue
                if name.split(".")[0] == "mcp_trio":
                    todo.append(_resolve_internal(name))
                else:
                    assert name.split(".")[0] in STDLIB | {"msgspec"}, (
                        f"{module} (imported by {root}) imports {name}"
                    )
        assert len(seen) > 3, seen  # it did follow the imports


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _import_graph() -> dict[str, set[str]]:
    graph = {}
    for path in SOURCES:
        importer = module_name(path)
        # importing a package's submodule runs the package first: count that edge too,
        # except a package's own modules importing it (always already running)
        targets = set()
        for target in internal_imports(path):
            targets.add(target)
        graph[importer] = {t for t in targets if not importer.startswith(t + ".")}
    return graph


def test_no_import_cycles() -> None:
    cycles = _cycles(_import_graph())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


# --- the tree of docs/architecture.md ------------------------------------------------------

_TREE_LINE = re.compile(r"^(?P<indent> *)(?P<name>\S+)(?: +(?P<rest>.*))?$")


def documented_tree() -> dict[str, set[str]]:
    """module (or generated-module pattern) -> what docs/architecture.md says it may import."""
    text = ARCHITECTURE.read_text()
    block = re.search(r"<!-- tree -->\s*```text\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no ```text block after <!-- tree -->"
    tree: dict[str, set[str]] = {}
    folders: list[tuple[int, str]] = []
    last = ""
    for line in block.group(1).splitlines():
        if not line.strip():
            continue
        if line.lstrip().startswith("→"):  # more of the last module's imports
            assert last, line
            tree[last] |= set(line.lstrip()[1:].split())
            continue
        m = _TREE_LINE.match(line)
        assert m, line
        depth = len(m["indent"])
        while folders and folders[-1][0] >= depth:
            folders.pop()
        name = m["name"]
        prefix = [f for _, f in folders]
        if name.endswith("/"):
            folders.append((depth, name[:-1]))
            continue
        assert name.endswith(".py"), f"not a module or a folder: {line!r}"
        parts = [*prefix, name[:-3]]
        if parts[-1] == "__init__":
            parts.pop()
        rest = m["rest"] or ""
        _, arrow, imports = rest.partition("→")
        assert arrow or "→" not in line, line
        last = ".".join(parts)
        tree[last] = set(imports.split())
    return tree


def _documented(module: str, tree: dict[str, set[str]]) -> set[str] | None:
    if module in tree:
        return tree[module]
    if GENERATED.match(module):
        return tree.get("mcp_trio.types.v*")
    return None


def test_the_tree_lists_every_module_and_only_those() -> None:
    tree = documented_tree()
    modules = {module_name(p) for p in SOURCES}
    missing = sorted(m for m in modules if _documented(m, tree) is None)
    ghosts = sorted(m for m in tree if m not in modules and not m.endswith("*"))
    assert not missing, f"modules not in docs/architecture.md's tree: {missing}"
    assert not ghosts, f"docs/architecture.md's tree names modules that do not exist: {ghosts}"


def _allowed(importer: str, target: str, listed: set[str]) -> bool:
    part = part_of(importer)
    if part_of(target) != part:
        return part_of(target) in listed or target.removeprefix("mcp_trio.") in listed
    base = f"mcp_trio.{part}" if part else "mcp_trio"
    relative = "." + target.removeprefix(base).lstrip(".")
    return any(relative == entry or relative.startswith(entry + ".") for entry in listed)


def test_modules_import_only_what_the_tree_says() -> None:
    tree = documented_tree()
    problems = []
    for path in SOURCES:
        importer = module_name(path)
        listed = _documented(importer, tree)
        if listed is None:
            problems.append(f"{importer} is not in docs/architecture.md's tree")
            continue
        extra = sorted(t for t in internal_imports(path) if not _allowed(importer, t, listed))
        if extra:
            problems.append(f"{importer} imports {extra}, which docs/architecture.md does not list")
    assert not problems, "\n".join(problems)


def test_the_tree_check_tells_listed_from_unlisted_imports() -> None:
    listed = {"_engine", "transports", "._results", ".http"}
    assert _allowed("mcp_trio.server._tools", "mcp_trio._engine._session", listed)
    assert _allowed("mcp_trio.server._tools", "mcp_trio.server._results", listed)
    assert not _allowed("mcp_trio.server._tools", "mcp_trio.server._prompts", listed)
    assert not _allowed("mcp_trio.server._tools", "mcp_trio._core._session", listed)
    assert _allowed("mcp_trio.transports.stdio", "mcp_trio.transports.http._sse", listed)
    assert not _allowed("mcp_trio.transports.stdio", "mcp_trio.transports.memory", listed)


def test_public_names_have_a_public_module() -> None:
    import mcp_trio

    for name in dir(mcp_trio):
        if name.startswith("_"):
            continue
        obj = getattr(mcp_trio, name)
        module = getattr(obj, "__module__", None)
        if module is not None and isinstance(module, str) and module.startswith("mcp_trio"):
            assert not any(part.startswith("_") for part in module.split(".")), (name, module)


# --- private APIs of dependencies: only in compat modules ---------------------------------------

#: Dependencies whose private modules a compat module may reach (and nothing else may).
PRIVATE_CHECKED = {"trio", "h11", "hypercorn", "wsproto", "httptools", "msgspec", "coredis"}
#: Private members of hypercorn's connection server that the hypercorn door touches.
HYPERCORN_PRIVATE = {"_read_data", "_initiate_server_close", "_task_group", "spawn_app", "idle_task"}


def _private_uses(path: Path) -> list[str]:
    """What ``path`` uses of a dependency's private API (see the compat modules)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules = [node.module]
        for module in modules:
            parts = module.split(".")
            if parts[0] in PRIVATE_CHECKED and any(part.startswith("_") for part in parts[1:]):
                found.append(f"line {node.lineno}: imports {module}")
        if isinstance(node, ast.Attribute) and node.attr in HYPERCORN_PRIVATE:
            found.append(f"line {node.lineno}: hypercorn's {node.attr}")
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "coroutine"
            and ast.unparse(node.value) == "types"
        ):
            found.append(f"line {node.lineno}: a coroutine stepped by hand (trio's trap protocol)")
    return found


def test_private_apis_of_dependencies_are_used_only_in_compat_modules() -> None:
    problems = [
        f"{path.relative_to(ROOT)} {use}"
        for path in SOURCES
        if not path.name.startswith("_compat_") and not GENERATED.match(module_name(path))
        for use in _private_uses(path)
    ]
    assert not problems, "private APIs outside a _compat_ module:\n" + "\n".join(problems)
    compat = [path for path in SOURCES if path.name.startswith("_compat_")]
    assert {path.name for path in compat} == {"_compat_trio.py", "_compat_h11.py", "_compat_hypercorn.py"}
    assert all(_private_uses(path) for path in compat if path.name != "_compat_hypercorn.py")


def test_the_private_api_check_sees_an_import_and_a_member(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from h11._headers import Headers\nserver._read_data()\n@types.coroutine\ndef f(): ...\n"
    )
    assert len(_private_uses(probe)) == 3


# --- classes, counted with their bases (docs/architecture.md: "collaborators, not mixins") ------

MAX_CLASS_LINES = 400
#: Classes still over the guideline, each at most its size when the guideline came in: they may
#: only shrink (into orchestrators over collaborators that own their state), and an entry goes
#: once its class is under the guideline.
OVERSIZED: dict[str, int] = {}


@cache
def _classes() -> dict[str, tuple[int, list[str]]]:
    """``module.Class`` -> (its lines, the ``module.Class`` of each in-package base)."""
    found: dict[str, tuple[int, list[str]]] = {}
    for path in HAND_WRITTEN:
        module = module_name(path)
        tree = ast.parse(path.read_text(), str(path))
        imported: dict[str, str] = {}
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in tree.body:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                for alias in node.names:
                    imported[alias.asname or alias.name] = f"{base}.{alias.name}"
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = []
                for base in node.bases:
                    name = ast.unparse(base).split("[")[0]
                    target = imported.get(name, f"{module}.{name}")
                    if target.split(".")[0] == module.split(".")[0]:  # (an in-package base)
                        bases.append(target)
                found[f"{module}.{node.name}"] = (node.end_lineno - node.lineno + 1, bases)
    return found


def class_family(name: str) -> set[str]:
    """Class ``name`` (``module.Class``) and its in-package bases, all the way up."""
    classes = _classes()
    family: set[str] = set()
    todo = [name]
    while todo:
        cls = todo.pop()
        if cls in classes and cls not in family:
            family.add(cls)
            todo.extend(classes[cls][1])
    return family


def class_size(name: str) -> int:
    """The lines of class ``name`` and of its in-package bases, each counted once."""
    return sum(_classes()[cls][0] for cls in class_family(name))


def test_no_class_is_over_400_lines_with_its_bases() -> None:
    problems = []
    for name in _classes():
        size = class_size(name)
        if size > OVERSIZED.get(name, MAX_CLASS_LINES):
            problems.append(f"{name}: {size} lines (at most {OVERSIZED.get(name, MAX_CLASS_LINES)})")
    assert not problems, f"classes over {MAX_CLASS_LINES} lines with their bases:\n" + "\n".join(problems)
    gone = [name for name in OVERSIZED if name not in _classes() or class_size(name) <= MAX_CLASS_LINES]
    assert not gone, f"under {MAX_CLASS_LINES} lines now (or gone): take them out of OVERSIZED: {gone}"


def test_the_class_size_counts_a_shared_base_once() -> None:
    # (a Streamable HTTP session with the capability classes it declares; no mixin families
    # are left, so the sum over the family, a set, is what is checked)
    name = "mcp_trio.transports.http.server._streams._HttpSession"
    family = class_family(name)
    assert {"mcp_trio.transports._base.PushInput", "mcp_trio.transports._base.HostedSession"} <= family
    assert class_size(name) == sum(_classes()[cls][0] for cls in family)
