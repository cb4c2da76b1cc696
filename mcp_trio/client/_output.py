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
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from .. import _jsonschema
from .._exceptions import RemoteProtocolError
from .results import CallToolResult, Tool

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
