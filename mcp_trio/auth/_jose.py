"""PyJWT (with cryptography), imported only when a feature needs signed JWTs.

The rest of :mod:`mcp_trio.auth` works without it, so it lives in the ``auth``
extra and a missing install fails with the command that fixes it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["require_jwt"]


def require_jwt(purpose: str) -> Any:
    """The ``jwt`` module; an ImportError naming ``purpose`` and the extra when it is missing."""
    try:
        import jwt
    except ImportError:  # pragma: no cover - depends on the installation
        raise ImportError(f"{purpose} needs PyJWT with cryptography: pip install 'mcp-trio[auth]'") from None
    return jwt
