"""Derive MCP tool schemas, argument binding and structured results from signatures.

`ToolSignature.from_function(fn)` inspects a tool function once and builds every
msgspec object it needs up front, so that `bind` and `structured` are cheap.

Rules for the input (``inputSchema`` and `ToolSignature.bind`):

* Every parameter becomes a property of one JSON object; the schema is always an
  inline ``{"type": "object", ...}`` (never a top-level ``$ref``), nested named
  types (Structs, dataclasses, TypedDicts, Enums) go to ``$defs``, and unknown
  properties are forbidden (``"additionalProperties": false``).
* Parameters without a default are ``required``.  A default is shown as
  ``"default"`` when it survives a JSON round trip unchanged; when an argument is
  omitted, `bind` leaves it out so the function applies its own default.
* Parameters for which ``skip(annotation)`` is true are injected by the framework
  (e.g. the request context): they are excluded from the schema and from `bind`,
  and listed in `ToolSignature.injected`.  ``skip`` receives the resolved
  annotation, ``Annotated`` wrapper included; parameters without an annotation
  are typed `typing.Any`.
* ``*args``, ``**kwargs`` and positional-only parameters are rejected with a
  `TypeError`; `bind` produces keyword arguments only.
* String annotations (``from __future__ import annotations``) are resolved with
  `typing.get_type_hints` against the function's module globals, so the names
  they use must be importable there.
* ``Annotated[T, msgspec.Meta(...)]`` supplies description, title, examples and
  constraints (bounds, lengths, pattern); so do annotated_types and pydantic's
  ``Field`` (inside ``Annotated`` or as the default), turned into `msgspec.Meta` by
  :mod:`._constraints`, which refuses (`TypeError`) what cannot be honoured.  A
  ``Field``'s ``alias`` is the argument's name, its default or default factory
  applies when the argument is omitted.  A parameter without a description takes
  it from the ``Args:`` section of a Google-style docstring.
* A parameter whose type holds a pydantic ``BaseModel`` is described and validated
  by pydantic (:mod:`._pydantic`); its ``$defs`` join the others.
* Types are strict, as in JSON Schema: ``"1"`` is not an integer, ``true`` is not
  an integer or a number.  Like JSON Schema, an integral float (``1.0``) is
  accepted for an integer and passed on as `int`.
* Validation errors raise `ArgumentError`, whose message starts with the JSON path
  of the offending value, e.g. ``"$.limit: Expected `int` >= 1"``.

Rules for the output (``outputSchema`` and `ToolSignature.structured`):

* A return type takes the same constraints as a parameter; one holding a pydantic
  model is described (serialization schema) and dumped (``mode="json"``) by pydantic.
* A return annotation whose schema is a JSON object (a non-array-like Struct, a
  dataclass, a TypedDict, ``dict[str, X]``) is used as is; any other type ``T``
  is wrapped as ``{"result": T}`` and `ToolSignature.wraps_output` is true.
* With ``structured_output=None`` (the default) there is no output schema when
  the return annotation is missing, ``None``, ``Any``/``object``, a type msgspec
  cannot describe, or a type for which ``is_content(annotation)`` is true (also
  checked on union members and on the item type of lists/tuples/sequences): the
  caller then produces MCP content itself.  ``structured_output=False`` never
  gives an output schema; ``True`` always does (``None``/``Any`` are wrapped) and
  raises `TypeError` when that is impossible.
* `structured` converts a return value with `msgspec.to_builtins`, validates it
  against the return type, and wraps it when `wraps_output`; a mismatch raises
  `ResultError` naming the path inside the structured content.
"""

from __future__ import annotations

import inspect
import keyword
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import msgspec.inspect as mi

from ._constraints import declare, is_field_info, mentions_pydantic_model, top_alias, translate
from ._pydantic import PydanticInvalid, PydanticType
from ._typeschema import (
    _MISSING,
    _annotation_source,
    _describe,
    _docstring_params,
    _has_description,
    _has_non_str_keys,
    _is_object_schema,
    _json_default,
    _mentions_content,
    _schema_for,
    _strip_annotated,
)

__all__ = ["ArgumentError", "ResultError", "ToolSignature"]


class ArgumentError(ValueError):
    """Tool arguments that do not match the tool's input schema.

    ``str(error)`` is ``"<path>: <reason>"``; ``path`` is the JSON path alone.
    """

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


class ResultError(ValueError):
    """A tool's return value that does not match its declared return type."""

    def __init__(self, message: str, path: str = "$") -> None:
        super().__init__(message)
        self.path = path


def _skip_nothing(annotation: Any) -> bool:
    return False


_AT_RE = re.compile(r"^(?P<reason>.*) - at `(?P<path>[^`]*)`$", re.S)
_KEY_AT_RE = re.compile(r"^(?P<reason>.*) - at `key` in `(?P<path>[^`]*)`$", re.S)
_MISSING_FIELD_RE = re.compile(r"^Object missing required field `(?P<name>.*)`$", re.S)
_UNKNOWN_FIELD_RE = re.compile(r"^Object contains unknown field `(?P<name>.*)`$", re.S)


def _split_error(message: str) -> tuple[str, str]:
    """Split a msgspec validation message into ``(path, reason)``."""
    match = _KEY_AT_RE.match(message)
    if match is not None:
        return match["path"], f"{match['reason']} (in a key)"
    match = _AT_RE.match(message)
    if match is not None:
        return match["path"], match["reason"]
    return "$", message


def _join(path: str, name: str) -> str:
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{path}.{name}"
    return f"{path}[{msgspec.json.encode(name).decode()}]"


def _integral_floats_to_int(value: Any) -> Any:
    """``value`` with every integral float replaced by an int (the same object if none)."""
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if type(value) is dict:
        changed = False
        out = {}
        for key, item in value.items():
            new = _integral_floats_to_int(item)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value
    if type(value) in (list, tuple):
        items = [_integral_floats_to_int(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=False)):
            return items
        return value
    return value


_FIELD_TYPE = type(msgspec.field())


def _default_of(spec: Any) -> Any:
    """The default in a `msgspec.defstruct` field spec (a value or a `msgspec.field`)."""
    return spec.default if isinstance(spec, _FIELD_TYPE) else spec


class _Params:
    """What the parameters of one function need beyond a msgspec field: the pydantic
    types that validate some of them, their argument names on the wire (``alias``)
    and the defaults a pydantic ``Field`` gives (see :mod:`._constraints`)."""

    def __init__(self) -> None:
        self.pydantic: dict[str, PydanticType] = {}
        self.keywords: dict[str, dict[str, Any]] = {}
        self.wire: dict[str, str] = {}
        self.fills: list[tuple[str, Any, Callable[[], Any] | None]] = []

    def declare(self, param: inspect.Parameter, hint: Any, where: str) -> tuple[Any, Any, str | None]:
        """``(type for msgspec, default shown or NODEFAULT when required, wire name)``."""
        default = param.default
        if mentions_pydantic_model(hint):
            declared = declare(Any, default, where)
            declared.alias = top_alias(hint) or declared.alias
            self.pydantic[param.name] = PydanticType(hint)
            self.keywords[param.name] = _schema_for(declared.hint) if declared.hint is not Any else {}
            hint = Any
        else:
            declared = declare(hint, default, where)
            hint = declared.hint
        if declared.alias is not None:
            self.wire[param.name] = declared.alias
        if declared.has_field_default:
            self.fills.append((param.name, declared.default, declared.default_factory))
            return (
                hint,
                _MISSING if declared.default_factory is not None else declared.default,
                declared.alias,
            )
        if default is param.empty or is_field_info(default):  # (a Field without a default)
            return hint, msgspec.NODEFAULT, declared.alias
        return hint, default, declared.alias

    def describe(self, properties: dict[str, Any], schema: dict[str, Any], docs: dict[str, str]) -> None:
        """Put the schemas pydantic gives in ``properties`` (their ``$defs`` in ``schema``'s)."""
        for field, ptype in self.pydantic.items():
            wire = self.wire.get(field, field)
            described = ptype.schema()
            defs = described.pop("$defs", {})
            described.update(self.keywords[field])
            if "description" not in described and field in docs:
                described["description"] = docs[field]
            properties[wire] = {**properties[wire], **described}
            all_defs = schema.setdefault("$defs", {})
            for def_name, definition in defs.items():
                if all_defs.get(def_name, definition) != definition:
                    raise TypeError(
                        f"two different types are named {def_name!r} in the schema of parameter "
                        f"{field!r}; rename one of them"
                    )
                all_defs[def_name] = definition


# --------------------------------------------------------------------------- #
# ToolSignature
# --------------------------------------------------------------------------- #


class ToolSignature:
    """The MCP view of a tool function: schemas, argument binding, result shaping."""

    __slots__ = (
        "input_schema",
        "output_schema",
        "wraps_output",
        "injected",
        "_name",
        "_args_type",
        "_fields",
        "_all_fields",
        "_result_type",
        "_result_str_keys",
        "_pydantic",
        "_fills",
        "_result_pydantic",
    )

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    wraps_output: bool
    injected: tuple[str, ...]
    _name: str
    _args_type: Any
    _fields: tuple[str, ...]
    _all_fields: tuple[str, ...]
    _result_type: Any
    _result_str_keys: Any
    #: ``(parameter, its pydantic type, its JSON path)`` for arguments pydantic validates.
    _pydantic: tuple[tuple[str, PydanticType, str], ...]
    #: ``(parameter, default, default factory)`` for the defaults of pydantic ``Field`` s.
    _fills: tuple[tuple[str, Any, Callable[[], Any] | None], ...]
    _result_pydantic: PydanticType | None

    def __init__(self) -> None:  # pragma: no cover - use from_function
        raise TypeError("use ToolSignature.from_function(fn)")

    def __repr__(self) -> str:
        return f"<ToolSignature of {self._name}>"

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        skip: Callable[[Any], bool] = _skip_nothing,
        structured_output: bool | None = None,
        is_content: Callable[[Any], bool] = _skip_nothing,
        kind: str = "tool",
    ) -> ToolSignature:
        """Inspect ``fn`` and build its schemas (see the module docstring for the rules).

        ``skip(annotation)`` marks parameters injected by the framework.
        ``structured_output`` forces (True) or suppresses (False) the output schema;
        ``None`` decides from the return annotation, treating annotations for which
        ``is_content(annotation)`` is true as producing MCP content directly.
        """
        name = _describe(fn)
        if not callable(fn):
            raise TypeError(f"{kind} {name} is not callable")
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"cannot read the signature of {kind} function {name}: {exc}") from exc
        source = _annotation_source(fn)
        try:
            hints = typing.get_type_hints(source, include_extras=True)
        except Exception as exc:
            raise TypeError(f"cannot resolve the annotations of {kind} function {name}: {exc}") from exc
        docs = _docstring_params(inspect.getdoc(source))

        struct_fields: list[tuple[str, Any, Any]] = []
        defaults: dict[str, Any] = {}
        injected: list[str] = []
        params = _Params()
        for param in sig.parameters.values():
            if param.kind is param.VAR_POSITIONAL:
                raise TypeError(
                    f"{kind} function {name} takes *{param.name}; {kind} parameters must be named (no *args)"
                )
            if param.kind is param.VAR_KEYWORD:
                raise TypeError(
                    f"{kind} function {name} takes **{param.name}; "
                    f"{kind} parameters must be declared (no **kwargs)"
                )
            if param.kind is param.POSITIONAL_ONLY:
                raise TypeError(
                    f"{kind} function {name} has positional-only parameter {param.name!r}; "
                    f"{kind} arguments are passed by keyword"
                )
            if param.name in hints:
                hint = hints[param.name]
            elif param.annotation is param.empty:
                hint = Any
            else:
                hint = param.annotation
            if skip(hint):
                injected.append(param.name)
                continue
            hint, field_default, wire = params.declare(
                param, hint, f"parameter {param.name!r} of {kind} function {name}"
            )
            if not _has_description(hint) and param.name in docs and param.name not in params.pydantic:
                hint = typing.Annotated[hint, msgspec.Meta(description=docs[param.name])]
            if field_default is msgspec.NODEFAULT:
                struct_fields.append(
                    (param.name, hint, msgspec.field(name=wire) if wire else msgspec.NODEFAULT)
                )
            else:
                struct_fields.append(
                    (
                        param.name,
                        typing.Union[hint, msgspec.UnsetType],  # noqa: UP007 - hint may be a string
                        msgspec.field(default=msgspec.UNSET, name=wire) if wire else msgspec.UNSET,
                    )
                )
                default = _json_default(field_default)
                if default is not _MISSING:
                    defaults[wire or param.name] = default

        # (only a signature that needs more than msgspec pays for it on each call)
        self = object.__new__(_FinishingSignature if params.pydantic or params.fills else cls)
        self._name = name
        self.injected = tuple(injected)
        self._fields = tuple(f for f, _, d in struct_fields if _default_of(d) is not msgspec.NODEFAULT)
        self._all_fields = tuple(params.wire.get(f, f) for f, _, _ in struct_fields)
        self._pydantic = tuple((f, t, _join("$", params.wire.get(f, f))) for f, t in params.pydantic.items())
        self._fills = tuple(params.fills)
        try:
            args_type = msgspec.defstruct(
                "ToolArguments",
                [(f, t) if d is msgspec.NODEFAULT else (f, t, d) for f, t, d in struct_fields],
                kw_only=True,
                forbid_unknown_fields=True,
                module=__name__,
            )
            schema = _schema_for(args_type)
            # Let msgspec check (and cache) the field types now, so that an
            # unsupported type fails here rather than in the first bind.
            try:
                msgspec.convert({}, args_type)
            except msgspec.ValidationError:
                pass
        except (TypeError, ValueError) as exc:
            raise TypeError(_unsupported(f"{kind} function {name}", struct_fields, exc)) from None
        self._args_type = args_type

        schema.pop("title", None)
        schema.pop("description", None)
        properties = schema.setdefault("properties", {})
        params.describe(properties, schema, docs)
        for field, value in defaults.items():
            properties[field]["default"] = value
        if not schema.get("required", True):
            del schema["required"]
        input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        for key, value in schema.items():
            if key not in ("type", "properties"):
                input_schema[key] = value
        self.input_schema = input_schema

        self._build_output(fn, name, sig, hints, structured_output, is_content)
        return self

    def _build_output(
        self,
        fn: Any,
        name: str,
        sig: inspect.Signature,
        hints: dict[str, Any],
        structured_output: bool | None,
        is_content: Callable[[Any], bool],
    ) -> None:
        self.output_schema = None
        self.wraps_output = False
        self._result_type = None
        self._result_str_keys = False
        self._result_pydantic = None
        if structured_output is False:
            return
        if "return" in hints:
            ret = hints["return"]
        elif sig.return_annotation is not sig.empty:
            ret = sig.return_annotation
        else:
            if structured_output:
                raise TypeError(f"tool function {name} needs a return annotation for structured output")
            return
        bare = _strip_annotated(ret)
        if bare is None or bare is type(None):
            if not structured_output:
                return
            ret = None
        elif bare is Any or bare is object:
            if not structured_output:
                return
            ret = Any
        elif bare in (typing.NoReturn, typing.Never):
            if structured_output:
                raise TypeError(f"tool function {name} never returns; it has no output")
            return
        elif structured_output is None and _mentions_content(ret, is_content):
            return
        result_pydantic = None
        if not mentions_pydantic_model(ret):  # (a refusal is raised, whatever structured_output says)
            ret = translate(ret, f"the return type of tool function {name}")
        try:
            if mentions_pydantic_model(ret):
                result_pydantic = PydanticType(ret)
                schema = result_pydantic.schema(output=True)
                ret = Any
            else:
                schema = _schema_for(ret)
            result_type = msgspec.defstruct("ToolResult", [("result", ret)], module=__name__)
            try:
                msgspec.convert({}, result_type)
            except msgspec.ValidationError:
                pass
            str_keys = _has_non_str_keys(mi.type_info(ret))
        except (TypeError, ValueError) as exc:
            if structured_output:
                raise TypeError(f"return type of tool function {name} cannot be structured: {exc}") from exc
            return
        if _is_object_schema(schema):
            self.output_schema = schema
        else:
            defs = schema.pop("$defs", None)
            wrapped: dict[str, Any] = {
                "type": "object",
                "properties": {"result": schema},
                "required": ["result"],
            }
            if defs:
                wrapped["$defs"] = defs
            self.output_schema = wrapped
            self.wraps_output = True
        self._result_type = result_type
        self._result_str_keys = str_keys
        self._result_pydantic = result_pydantic

    # ------------------------------------------------------------------ #

    def bind(self, arguments: dict[str, Any] | None, *, strict: bool = True) -> dict[str, Any]:
        """Validate MCP ``arguments`` and convert them to keyword arguments.

        ``strict=False`` also converts strings to the annotated numbers and
        booleans (prompt arguments are strings on the wire).

        Injected parameters are not included; omitted optional ones are left
        out so the function's own defaults apply.  Raises `ArgumentError`.
        """
        if arguments is None:
            arguments = {}
        try:
            # (strict is msgspec's default: the tools' hot path passes no keyword)
            obj = (
                msgspec.convert(arguments, self._args_type)
                if strict
                else msgspec.convert(arguments, self._args_type, strict=False)
            )
        except msgspec.ValidationError as exc:
            obj = self._retry(arguments, exc, strict)
        kwargs = msgspec.structs.asdict(obj)
        for field in self._fields:
            if kwargs[field] is msgspec.UNSET:
                del kwargs[field]
        return kwargs

    def _retry(self, arguments: Any, exc: msgspec.ValidationError, strict: bool = True) -> Any:
        # JSON Schema counts 1.0 as an integer; msgspec does not.  Only on the
        # error path, try again with integral floats turned into ints.
        normalised = _integral_floats_to_int(arguments)
        if normalised is not arguments:
            try:
                return msgspec.convert(normalised, self._args_type, strict=strict)
            except msgspec.ValidationError as again:
                exc = again
        raise self._argument_error(str(exc)) from None

    def _argument_error(self, message: str) -> ArgumentError:
        path, reason = _split_error(message)
        top = path == "$"
        missing = _MISSING_FIELD_RE.match(reason)
        unknown = _UNKNOWN_FIELD_RE.match(reason)
        if missing is not None:
            path = _join(path, missing["name"])
            reason = "missing required argument" if top else "missing required field"
        elif unknown is not None:
            path = _join(path, unknown["name"])
            if not top:
                reason = "unknown field"
            elif self._all_fields:
                reason = "unknown argument; expected one of: " + ", ".join(self._all_fields)
            else:
                reason = "unknown argument; this tool takes no arguments"
        return ArgumentError(f"{path}: {reason}", path)

    def structured(self, value: Any) -> Any:
        """The ``structuredContent`` for a return value of the tool function.

        Raises `ResultError` when ``value`` does not match the return type, and
        `TypeError` when the tool has no output schema.
        """
        if self._result_type is None:
            raise TypeError(f"tool function {self._name} has no structured output")
        if self._result_pydantic is not None:
            where = "$.result" if self.wraps_output else "$"
            try:
                plain = self._result_pydantic.dump(value, where)
            except PydanticInvalid as exc:
                raise ResultError(str(exc), exc.path) from None
            return {"result": plain} if self.wraps_output else plain
        try:
            plain = msgspec.to_builtins(value)
        except (TypeError, ValueError, OverflowError) as exc:
            where = "$.result" if self.wraps_output else "$"
            raise ResultError(f"{where}: cannot serialise the result: {exc}", where) from None
        try:
            msgspec.convert({"result": plain}, self._result_type)
        except msgspec.ValidationError as exc:
            path, reason = _split_error(str(exc))
            missing = _MISSING_FIELD_RE.match(reason)
            unknown = _UNKNOWN_FIELD_RE.match(reason)
            if missing is not None:
                path, reason = _join(path, missing["name"]), "missing required field"
            elif unknown is not None:
                path, reason = _join(path, unknown["name"]), "unknown field"
            if not self.wraps_output:
                path = "$" + path[len("$.result") :]
            raise ResultError(f"{path}: {reason}", path) from None
        if self._result_str_keys:
            plain = msgspec.to_builtins(plain, str_keys=True)
        if self.wraps_output:
            return {"result": plain}
        return plain


class _FinishingSignature(ToolSignature):
    """A `ToolSignature` whose arguments need more than msgspec's decoding: some are
    validated by pydantic, some take the default of a pydantic ``Field``."""

    __slots__ = ()

    def bind(self, arguments: dict[str, Any] | None, *, strict: bool = True) -> dict[str, Any]:
        kwargs = super().bind(arguments, strict=strict)
        self._finish(kwargs)
        return kwargs

    def _finish(self, kwargs: dict[str, Any]) -> None:
        """Validate the arguments pydantic checks, apply the defaults of ``Field`` s."""
        for field, ptype, path in self._pydantic:
            if field in kwargs:
                try:
                    kwargs[field] = ptype.validate(kwargs[field], path)
                except PydanticInvalid as exc:
                    raise ArgumentError(str(exc), exc.path) from None
        for field, value, factory in self._fills:
            if field not in kwargs:
                kwargs[field] = value if factory is None else factory()


SUPPORTED_TYPES = (
    "str, int, float, bool, None, bytes, list/tuple/set/frozenset and dict[str, ...] of these, "
    "Literal, Enum, Optional and unions, datetime/date/time/timedelta, UUID, Decimal, "
    "dataclasses, TypedDict, NamedTuple and msgspec.Struct"
)


def _unsupported(what: str, fields: list[tuple[str, Any, Any]], exc: Exception) -> str:
    """The registration error for a signature msgspec refuses, naming the parameter."""
    for field, hint, _ in fields:
        try:
            probe = msgspec.defstruct("Probe", [(field, hint)], module=__name__)
            msgspec.json.schema(probe)
            msgspec.convert({}, probe)
        except msgspec.ValidationError:
            continue
        except (TypeError, ValueError) as probe:
            shown = hint.__qualname__ if isinstance(hint, type) else repr(hint)
            if str(probe).startswith("Can only set"):  # a constraint on a type it does not fit
                reason = str(probe).split(" - ", 1)[0]
                return (
                    f"parameter {field!r} of {what}: {reason} ({shown}); put the constraint on a type it fits"
                )
            return (
                f"unsupported parameter type in {what}: parameter {field!r} has a type "
                f"that cannot come from JSON "
                f"({shown}); supported: {SUPPORTED_TYPES}"
            )
    return f"unsupported parameter type in {what}: {exc}"
