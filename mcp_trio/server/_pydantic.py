"""Tool parameters and results whose type holds a pydantic ``BaseModel``.

pydantic validates them and describes them: `PydanticType` wraps a
``pydantic.TypeAdapter`` of the annotation (the model itself, ``list[Model]``,
``Model | None``, ``Annotated[Model, Field(...)]`` ...), whose JSON Schema is the
one ``model_json_schema`` gives for a model; arguments go through
``validate_python`` (so the model's own configuration decides, e.g. ``strict`` or
``extra="forbid"``), results through ``dump_python(mode="json")``.

pydantic is not a dependency and this module never imports it: a `PydanticType`
is made only for an annotation holding a model class, so pydantic is already in
``sys.modules``.
"""

from __future__ import annotations

import keyword
import sys
import warnings
from typing import Any, Literal

import msgspec

__all__ = ["PydanticInvalid", "PydanticType"]

_REF_TEMPLATE = "#/$defs/{model}"


class PydanticInvalid(ValueError):
    """What pydantic refused: ``str(error)`` is ``"<path>: <reason>"`` (up to three
    of them, separated by ``; ``), ``path`` the JSON path of the first."""

    def __init__(self, path: str, text: str) -> None:
        super().__init__(text)
        self.path = path


def _path(base: str, loc: tuple[int | str, ...]) -> str:
    for part in loc:
        if isinstance(part, int):
            base = f"{base}[{part}]"
        elif part.isidentifier() and not keyword.iskeyword(part):
            base = f"{base}.{part}"
        else:
            base = f"{base}[{msgspec.json.encode(part).decode()}]"
    return base


class PydanticType:
    """A type pydantic validates and describes."""

    __slots__ = ("_adapter", "_validation_error")

    def __init__(self, tp: Any) -> None:
        pydantic = sys.modules["pydantic"]  # (imported: tp holds one of its models)
        with warnings.catch_warnings():
            # (a Field's alias names the argument: mcp-trio reads it, pydantic need not)
            warnings.filterwarnings("ignore", message=r"The 'alias' attribute")
            self._adapter = pydantic.TypeAdapter(tp)
        self._validation_error = pydantic.ValidationError

    def schema(self, *, output: bool = False) -> dict[str, Any]:
        """The JSON Schema of values (``output``: as results are dumped)."""
        mode: Literal["validation", "serialization"] = "serialization" if output else "validation"
        schema: dict[str, Any] = self._adapter.json_schema(mode=mode, ref_template=_REF_TEMPLATE)
        return schema

    def _invalid(self, exc: Any, base: str) -> PydanticInvalid:
        errors = exc.errors(include_url=False)
        shown = [f"{_path(base, tuple(e['loc']))}: {e['msg']}" for e in errors[:3]]
        if len(errors) > 3:
            shown.append(f"and {len(errors) - 3} more")
        first = _path(base, tuple(errors[0]["loc"])) if errors else base
        return PydanticInvalid(first, "; ".join(shown) or f"{base}: invalid")

    def validate(self, value: Any, base: str) -> Any:
        """``value`` (decoded JSON) validated; raises `PydanticInvalid` at ``base``'s path."""
        try:
            return self._adapter.validate_python(value)
        except self._validation_error as exc:
            raise self._invalid(exc, base) from None

    def dump(self, value: Any, base: str) -> Any:
        """``value`` (a result) checked against the type and turned into JSON builtins."""
        try:
            checked = self._adapter.validate_python(value)
        except self._validation_error as exc:
            raise self._invalid(exc, base) from None
        return self._adapter.dump_python(checked, mode="json")
