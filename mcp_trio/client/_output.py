"""Checking a tool's ``structuredContent`` against its ``outputSchema``, as clients SHOULD.

Rules:

* The schemas are those of the last ``tools/list`` pages read; a
  ``tools/list_changed`` notification forgets them (a tool not listed since
  is not checked).  Each is compiled once, on the first call of its tool.
* A result with ``isError`` is not checked.  A tool with an ``outputSchema``
  must send ``structuredContent`` that matches it; otherwise the call raises
  :class:`OutputValidationError` naming the first mismatch as
  ``<JSON path>: <reason>``, the format of the server's argument errors.
* The validator is ``jsonschema-rs`` (the ``validation`` extra).  Without it
  nothing is checked, and the first result that would have been says so, once
  per process: at DEBUG by default (a base install is quiet), as a WARNING for
  a client that asked for the checks (``validate_output=True``).  A schema it
  cannot compile is logged and not checked.
* ``call_tool(..., output_type=T)`` decodes ``structuredContent`` into ``T`` with
  ``msgspec.convert`` (a dataclass, ``msgspec.Struct``, ``TypedDict``, a primitive,
  ``list[...]``, ``dict[str, ...]`` ...), strictly (no ``"1"`` for an ``int``).  A value
  wrapped as ``{"result": value}`` (how servers send a tool's non-object output up to
  2025-11-25) is unwrapped when it does not decode as it is.  Missing or not matching:
  :class:`OutputDecodeError`.  With ``output_type``, a tool error raises
  :class:`ToolCallError` (there is nothing to decode), as ``raise_on_error=True`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, TypeVar

import msgspec

from .. import _jsonschema
from .._exceptions import RemoteProtocolError, ToolError
from .results import CallToolResult, Tool

T = TypeVar("T")

log = logging.getLogger("mcp_trio.client")


class OutputValidationError(RemoteProtocolError):
    """A tool's ``structuredContent`` does not match its ``outputSchema``.

    ``str(error)`` ends with ``<path>: <reason>``.

    Attributes:
        tool: The tool's name.
        path: The JSON path of the first mismatch in ``structuredContent`` (``$`` is its root).
        result: The result as received, for a caller that wants it anyway.
    """

    def __init__(self, tool: str, path: str, reason: str, result: CallToolResult) -> None:
        super().__init__(
            f"the structured content of tool {tool} does not match its outputSchema: {path}: {reason}"
        )
        self.tool = tool
        self.path = path
        self.result = result


class ToolCallError(ToolError):
    """The tool answered with a tool error (``isError``), raised by
    ``call_tool(..., raise_on_error=True)`` (and by any call with ``output_type``).

    ``str(error)`` is ``tool NAME failed: TEXT``.  A subclass of the server's
    :class:`~mcp_trio.ToolError`, so that a tool that calls another server's tool and lets
    this escape fails with that text, for the model to read, as if it had raised
    ``ToolError`` itself (not as an unexpected exception, which may be masked).

    Attributes:
        tool: The tool's name.
        result: The result as received.
        text: Its text (:attr:`~mcp_trio.client.results.CallToolResult.text`).
    """

    def __init__(self, tool: str, result: CallToolResult[Any]) -> None:
        self.tool = tool
        self.result = result
        self.text = result.text
        super().__init__(f"tool {tool} failed: {self.text or '(its result has no text)'}")


class OutputDecodeError(ValueError):
    """A tool's ``structuredContent`` is missing or does not decode into the
    ``output_type`` the call gave.  ``str(error)`` ends with ``<path>: <reason>``.

    Attributes:
        tool: The tool's name.
        output_type: The type asked for.
        path: The JSON path of the first mismatch (``$`` is ``structuredContent``).
        reason: What is wrong there.
        result: The result as received (``result.text`` may say what went wrong).
    """

    def __init__(
        self, tool: str, output_type: Any, path: str, reason: str, result: CallToolResult[Any]
    ) -> None:
        shown = getattr(output_type, "__name__", None) or repr(output_type)
        super().__init__(
            f"the structured content of tool {tool} does not decode as {shown}: {path}: {reason}"
        )
        self.tool = tool
        self.output_type = output_type
        self.path = path
        self.reason = reason
        self.result = result


def finish_call(
    name: str, result: CallToolResult[Any], output_type: type[T] | None, raise_on_error: bool
) -> CallToolResult[T]:
    """What ``call_tool`` does after the schema check: raise :class:`ToolCallError` for a
    tool error when asked (or when there is an ``output_type``), decode ``data``."""
    if result.isError and (raise_on_error or output_type is not None):
        raise ToolCallError(name, result)
    if output_type is not None:
        result._with_data(_decode(name, result, output_type))
    typed: CallToolResult[T] = result
    return typed


def _decode(name: str, result: CallToolResult[Any], output_type: type[T]) -> T:
    structured = result.structuredContent
    try:
        return msgspec.convert(structured, output_type)
    except msgspec.ValidationError as exc:
        failure = _where(exc)
        if isinstance(structured, dict) and structured.keys() == {"result"}:
            try:
                return msgspec.convert(structured["result"], output_type)
            except msgspec.ValidationError as inner:
                path, reason = _where(inner)
                failure = ("$.result" + path[1:], reason)
        if structured is None:
            text = result.text
            said = f"; its text: {text[:200]!r}" if text else ""
            failure = ("$", f"missing (the result has no structuredContent{said})")
        raise OutputDecodeError(name, output_type, *failure, result) from None
    except TypeError as exc:
        raise TypeError(
            f"call_tool({name!r}, output_type={output_type!r}): msgspec cannot decode into it: {exc}"
        ) from None


def _where(error: msgspec.ValidationError) -> tuple[str, str]:
    """(JSON path, reason) of msgspec's ``Expected `int`, got `str` - at `$.a```."""
    reason, at, path = str(error).rpartition(" - at `")
    return (path.rstrip("`"), reason) if at else ("$", str(error))


_UNCOMPILED: Any = object()
_BROKEN: Any = object()


#: Whether this process has said that the validator is missing (see the module's rules).
_told_missing = False


class OutputSchemas:
    """The ``outputSchema`` of each tool listed, compiled on first use."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.enabled = enabled is not False  # (None: checked when the validator is there)
        self._asked = enabled is True  # (then its absence is a warning)
        self._warned = False
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, Any] = {}

    def record(self, tools: Iterable[Tool]) -> None:
        """Remember the schemas of ``tools`` (one page of ``tools/list``)."""
        for tool in tools:
            schema = tool.outputSchema
            if schema is None:
                if self._schemas.pop(tool.name, None) is not None:
                    self._validators.pop(tool.name, None)
            elif self._schemas.get(tool.name) != schema:
                self._schemas[tool.name] = schema
                self._validators[tool.name] = _UNCOMPILED

    def forget(self) -> None:
        self._schemas.clear()
        self._validators.clear()

    def check(self, name: str, result: CallToolResult) -> None:
        """Raise :class:`OutputValidationError` if ``result`` does not match the tool's schema."""
        if not self.enabled or result.isError:
            return
        validator = self._validators.get(name)
        if validator is None or validator is _BROKEN:
            return
        if validator is _UNCOMPILED:
            validator = self._validators[name] = self._compile(name)
            if validator is _BROKEN:
                return
        structured = result.structuredContent
        if structured is None and not validator.is_valid(None):  # absent (or JSON null)
            raise OutputValidationError(name, "$", "missing (the tool declares an outputSchema)", result)
        found = _jsonschema.first_error(validator, structured)
        if found is not None:
            raise OutputValidationError(name, *found, result)

    def _compile(self, name: str) -> Any:
        if not _jsonschema.available():
            global _told_missing
            why = "structuredContent is not checked against outputSchema: %s"
            if self._asked and not self._warned:
                self._warned = True
                log.warning(why, _jsonschema.INSTALL_HINT)
            elif not _told_missing:
                log.debug(why, _jsonschema.INSTALL_HINT)
            _told_missing = True
            return _BROKEN
        try:
            return _jsonschema.compile_schema(self._schemas[name])
        except ValueError as exc:
            log.warning("tool %s: its outputSchema is not a valid JSON Schema, not checked: %s", name, exc)
            return _BROKEN
