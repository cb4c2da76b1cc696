"""Capability checks: is a capability path advertised in a capabilities object?"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["as_dict", "has_capability"]


def as_dict(value: Any) -> dict[str, Any]:
    """A capabilities/implementation object (Struct or mapping) as a plain dict."""
    if value is None or value is msgspec.UNSET:
        return {}
    if isinstance(value, dict):
        return value
    out = msgspec.to_builtins(value)
    if not isinstance(out, dict):
        raise TypeError(f"expected an object, got {type(value).__name__}")
    return out


def has_capability(capabilities: dict[str, Any], path: tuple[str, ...]) -> bool:
    """True when ``path`` is advertised.

    An object at the end of the path counts as advertised (``"tools": {}``);
    a boolean flag such as ``listChanged`` or ``subscribe`` must be ``true``.
    """
    node: Any = capabilities
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    if node is None or node is False:
        return False
    return True
