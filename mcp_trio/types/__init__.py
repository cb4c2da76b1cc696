"""Wire types of every supported MCP revision.

``mcp_trio.types.v2024_11_05`` ... ``mcp_trio.types.v2026_07_28`` are generated
from the official schemas (see ``docs/codegen.md``); each ends with
``PROTOCOL_VERSION``, ``REPLACED`` and the method registry ``METHODS``.
``mcp_trio.types.ext_tasks`` (hand-written) holds the types of the Tasks
extension, ``io.modelcontextprotocol/tasks``; ``mcp_trio.types.lossless``
decodes and encodes them keeping the members they do not declare.  The
revision modules are imported lazily, on first attribute access: a process
that speaks one revision never builds the Structs of the other four.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._wire import UNSET as UNSET
from ._wire import MethodSpec as MethodSpec
from ._wire import RequestId as RequestId
from ._wire import UnsetType as UnsetType

if TYPE_CHECKING:
    from . import ext_tasks as ext_tasks
    from . import lossless as lossless
    from . import v2024_11_05 as v2024_11_05
    from . import v2025_03_26 as v2025_03_26
    from . import v2025_06_18 as v2025_06_18
    from . import v2025_11_25 as v2025_11_25
    from . import v2026_07_28 as v2026_07_28

_REVISION_MODULES = frozenset(
    {"v2024_11_05", "v2025_03_26", "v2025_06_18", "v2025_11_25", "v2026_07_28", "ext_tasks", "lossless"}
)

__all__ = [
    "UNSET",
    "MethodSpec",
    "RequestId",
    "UnsetType",
    "v2024_11_05",
    "v2025_03_26",
    "v2025_06_18",
    "v2025_11_25",
    "v2026_07_28",
    "ext_tasks",
    "lossless",
]


def __getattr__(name: str) -> Any:
    if name in _REVISION_MODULES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _REVISION_MODULES)
