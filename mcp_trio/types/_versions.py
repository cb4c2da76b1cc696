"""The protocol revisions this package speaks, and cached codecs for their types.

Each revision has one generated module (``mcp_trio.types.v2025_11_25`` ...),
imported on first use by :func:`module_for`.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import msgspec

from ._wire import ExtensionSpec, MethodSpec

__all__ = [
    "LATEST_VERSION",
    "SUPPORTED_VERSIONS",
    "SUBSCRIPTION_ID",
    "TASKS_EXTENSION",
    "capabilities_for",
    "decoder_for",
    "encode",
    "encoder",
    "error_message",
    "extension",
    "is_stateless",
    "known_extensions",
    "methods_for",
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


_MODULES: dict[str, ModuleType] = {}


def module_for(version: str) -> ModuleType:
    """The generated module of a supported revision (imported on first use).

    Raises ``ValueError`` for a revision this package does not support.
    """
    module = _MODULES.get(version)
    if module is not None:
        return module
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"unsupported protocol version {version!r}; supported: {', '.join(SUPPORTED_VERSIONS)}"
        )
    module = importlib.import_module(f"{__package__}.{module_name(version)}")
    _MODULES[version] = module
    return module


#: The identifier of the Tasks extension (types in ``types.ext_tasks``).
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# the _meta key tagging each notification of a subscriptions/listen stream (2026-07-28)
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: Extensions this package knows: identifier -> module holding its ``ExtensionSpec``.
_EXTENSION_MODULES: dict[str, tuple[str, str]] = {
    TASKS_EXTENSION: ("ext_tasks", "TASKS"),
}


def extension(identifier: str) -> ExtensionSpec | None:
    """The registry additions of a known extension (``None`` for an unknown one)."""
    found = _EXTENSION_MODULES.get(identifier)
    if found is None:
        return None
    module = importlib.import_module(f"{__package__}.{found[0]}")
    spec: ExtensionSpec = getattr(module, found[1])
    return spec


def known_extensions(identifiers: Iterable[str]) -> frozenset[str]:
    """The identifiers among ``identifiers`` that this package implements."""
    return frozenset(i for i in identifiers if i in _EXTENSION_MODULES)


@functools.cache
def methods_for(version: str, extensions: frozenset[str] = frozenset()) -> dict[str, MethodSpec]:
    """The method registry of ``version`` with the given extensions merged in.

    An extension adds its methods and its alternative results (appended after
    the revision's own).  Extensions that build on the stateless revisions do
    not apply to earlier ones; unknown identifiers are ignored.
    """
    base: dict[str, MethodSpec] = module_for(version).METHODS
    specs = [extension(e) for e in sorted(extensions)]
    active = [s for s in specs if s is not None and (is_stateless(version) or not s.stateless_only)]
    if not active:
        return base
    merged = dict(base)
    for ext in active:
        for method, extra in ext.results.items():
            spec = merged.get(method)
            if spec is not None:
                merged[method] = msgspec.structs.replace(spec, results=spec.results + extra)
        merged.update(ext.methods)
    return merged


def is_stateless(version: str) -> bool:
    """True for 2026-07-28 and later (no initialize handshake, ``server/discover``)."""
    known = _STATELESS.get(version)
    if known is not None:
        return known
    if version == "draft":
        return True
    return bool(_DATE.match(version)) and version >= _FIRST_STATELESS


#: The answer of :func:`is_stateless` for every supported revision (asked on
#: every request: a lookup instead of a regular expression).
_STATELESS: dict[str, bool] = {v: bool(_DATE.match(v)) and v >= _FIRST_STATELESS for v in SUPPORTED_VERSIONS}


@functools.cache
def _removed_capabilities(version: str, kind: str) -> frozenset[str]:
    """The standard ``kind`` (``ServerCapabilities`` / ``ClientCapabilities``)
    keys that an earlier supported revision defines and ``version`` does not."""
    own = set(getattr(module_for(version), kind).__struct_fields__)
    earlier: set[str] = set()
    for other in SUPPORTED_VERSIONS:
        if other < version:
            earlier.update(getattr(module_for(other), kind).__struct_fields__)
    return frozenset(earlier - own)


def capabilities_for(version: str, capabilities: dict[str, Any], role: str) -> dict[str, Any]:
    """The capabilities a ``role`` (``"server"`` or ``"client"``) advertises in ``version``.

    A standard capability that the protocol removed (the 2025-11-25 ``tasks``,
    replaced by the Tasks extension in 2026-07-28) is left out of the
    revisions after its removal, where it would mean nothing or something
    else.  Capabilities newer than ``version`` and non-standard ones are kept:
    a peer ignores what it does not know.
    """
    kind = "ServerCapabilities" if role == "server" else "ClientCapabilities"
    removed = _removed_capabilities(version, kind) if version in SUPPORTED_VERSIONS else frozenset()
    if not removed.intersection(capabilities):
        return capabilities
    return {key: value for key, value in capabilities.items() if key not in removed}


def supports_batching(version: str) -> bool:
    """JSON-RPC batches exist only in 2025-03-26."""
    return version == "2025-03-26"


@functools.cache
def decoder_for(type_: Any) -> msgspec.json.Decoder[Any]:
    """A JSON decoder for ``type_``, built once and reused."""
    return msgspec.json.Decoder(type_)


_ERROR_PATH = re.compile(r" - at `(key` in `)?\$([^`]*)`\Z")


def error_message(exc: msgspec.ValidationError, root: str = "$") -> str:
    """The text of a decode error, naming where it happened with the path rooted at ``root``.

    msgspec names the path of a nested error (`` - at `$.params.name` ``) but
    says nothing for one at the top level (``Object missing required field
    `id` ``); that one gets `` - at `$` `` too, so every rejection names its
    path.  With ``root="$.params"`` the paths are those of the enclosing
    message.
    """
    text = str(exc)
    found = _ERROR_PATH.search(text)
    if found is None:
        return f"{text} - at `{root}`"
    return f"{text[: found.start()]} - at `{found.group(1) or ''}{root}{found.group(2)}`"


#: The one JSON encoder (no per-type state is needed to encode).
encoder = msgspec.json.Encoder()


def encode(obj: Any) -> bytes:
    """Encode ``obj`` (a Struct, dict, list, ...) to JSON bytes."""
    return encoder.encode(obj)
