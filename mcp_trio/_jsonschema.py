"""JSON Schema checks for the server and the client.

``jsonschema-rs`` (the ``validation`` extra) checks the arguments of tools
declared with ``input_schema=`` (server) and ``structuredContent`` against
``outputSchema`` (client).

Errors are one line, ``<JSON path>: <reason>``, the format of the server's
argument errors (``$`` is the checked value's root).
"""

from __future__ import annotations

import keyword
from typing import Any

import msgspec

INSTALL_HINT = "install mcp-trio[validation] (jsonschema-rs)"
_NOT_YET = object()


def __getattr__(name: str) -> Any:
    """``jsonschema_rs`` (None when it is not installed), imported at its first use rather
    than at startup: about 6 ms of a server's cold start, for servers that declare no
    ``input_schema=`` and clients that never see an ``outputSchema``."""
    if name != "jsonschema_rs":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module: Any
    try:
        import jsonschema_rs as module
    except ImportError:  # pragma: no cover - the validation extra is not installed
        module = None
    globals()["jsonschema_rs"] = module
    return module


def _validators() -> Any:
    found = globals().get("jsonschema_rs", _NOT_YET)
    return __getattr__("jsonschema_rs") if found is _NOT_YET else found


def available() -> bool:
    """Whether the validator is installed."""
    return _validators() is not None


def compile_schema(schema: Any) -> Any:
    """A validator for ``schema``; ``ValueError`` (its first line) when the schema
    is not valid JSON Schema.  Needs :func:`available`."""
    jsonschema_rs = _validators()
    try:
        return jsonschema_rs.validator_for(schema)
    except (jsonschema_rs.ValidationError, ValueError) as exc:
        raise ValueError(str(exc).splitlines()[0]) from None


def first_error(validator: Any, instance: Any) -> tuple[str, str] | None:
    """``(JSON path, reason)`` of the first mismatch of ``instance``, or None."""
    if validator.is_valid(instance):  # the common case, without building errors
        return None
    for error in validator.iter_errors(instance):
        return _where(error)
    return None


def _where(error: Any) -> tuple[str, str]:
    path = "$"
    for part in error.instance_path:
        path = _join(path, part)
    kind = error.kind
    if type(kind).__name__ == "Required":
        return _join(path, kind.property), "missing required property"
    return path, str(error.message)


def _join(path: str, part: str | int) -> str:
    if isinstance(part, int):
        return f"{path}[{part}]"
    if part.isidentifier() and not keyword.iskeyword(part):
        return f"{path}.{part}"
    return f"{path}[{msgspec.json.encode(part).decode()}]"
