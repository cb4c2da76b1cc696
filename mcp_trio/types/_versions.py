"""The protocol revisions this package speaks, and cached codecs for their types.

Each revision has one generated module (``mcp_trio.types.v2025_11_25`` ...),
imported on first use by :func:`module_for`.
"""

from __future__ import annotations

import functools
import importlib
import re
from types import ModuleType
from typing import Any

import msgspec

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "decoder_for",
    "encode",
    "encoder",
    "is_stateless",
    "module_for",
    "module_name",
    "supports_batching",
]

#: Every supported revision, newest first (the negotiation preference order).
SUPPORTED_VERSIONS: tuple[str, ...] = (
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
)
#: The newest revision.
LATEST_VERSION = "2026-07-28"

#: First revision without the initialize handshake (version and capabilities
#: travel in each request's ``_meta``).
_FIRST_STATELESS = "2026-07-28"
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def module_name(version: str) -> str:
    """``"2025-11-25"`` -> ``"v2025_11_25"``."""
    return "v" + version.replace("-", "_")


def module_for(version: str) -> ModuleType:
    """The generated module of a supported revision (imported on first use).

    Raises ``ValueError`` for a revision this package does not support.
    """
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"unsupported protocol version {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}"
        )
    return importlib.import_module(f"{__package__}.{module_name(version)}")


def is_stateless(version: str) -> bool:
    """True for 2026-07-28 and later (no initialize handshake, ``server/discover``)."""
    if version == "draft":
        return True
    return bool(_DATE.match(version)) and version >= _FIRST_STATELESS


def supports_batching(version: str) -> bool:
    """JSON-RPC batches exist only in 2025-03-26."""
    return version == "2025-03-26"


@functools.cache
def decoder_for(type_: Any) -> msgspec.json.Decoder[Any]:
    """A JSON decoder for ``type_``, built once and reused."""
    return msgspec.json.Decoder(type_)


#: The one JSON encoder (no per-type state is needed to encode).
encoder = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    """Encode ``obj`` (a Struct, dict, list, ...) to JSON bytes."""
    return encoder.encode(obj)
