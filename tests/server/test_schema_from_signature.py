"""Tool schemas derived from Python signatures (mcp_trio.server._signature).

This module deliberately uses ``from __future__ import annotations`` so that every
annotation below is a string that has to be resolved.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import functools
import math
from typing import Annotated, Any, Literal, TypedDict

import jsonschema
import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import Meta

from mcp_trio import RequestContext
from mcp_trio.server._signature import ArgumentError, ResultError, ToolSignature

Validator = jsonschema.Draft202012Validator


def is_context(annotation: Any) -> bool:
    return annotation is RequestContext


def sig(fn: Any, **kw: Any) -> ToolSignature:
    """Build a ToolSignature and check both schemas are valid 2020-12 schemas."""
    ts = ToolSignature.from_function(fn, **kw)
    for schema in (ts.input_schema, ts.output_schema):
        if schema is None:
            continue
        Validator.check_schema(schema)
        assert "$ref" not in schema
        assert schema["type"] == "object"
    return ts


def validates(schema: dict[str, Any], instance: Any) -> bool:
    return Validator(schema).is_valid(instance)


# --------------------------------------------------------------------------- #
# Types used by the tools (module level, so string annotations resolve)
# --------------------------------------------------------------------------- #


class HitStruct(msgspec.Struct):
    title: str
    score: float = 0.0


@dataclasses.dataclass
class HitDataclass:
    title: str
    score: float = 0.0


class HitTypedDict(TypedDict):
    title: str
    score: float


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Point(msgspec.Struct):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    corner: Point
    label: Annotated[str, Meta(max_length=5)] = "box"


class Tree(msgspec.Struct):
    value: int
    children: list[Tree] = []


class Pair(msgspec.Struct, array_like=True):
    a: int
    b: str


class Stamped(msgspec.Struct):
    at: datetime.datetime
    color: Color


class NotSerialisable:
    pass


class TextContent(msgspec.Struct):
    text: str


# --------------------------------------------------------------------------- #
# The two motivating examples
# --------------------------------------------------------------------------- #


async def add(
    a: int,
    b: int = 2,
    *,
    note: Annotated[str, Meta(description="why")] = "",
    ctx: RequestContext,
) -> int:
    return a + b


def test_add_input_schema_exact() -> None:
    ts = sig(add, skip=is_context)
    assert ts.input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer", "default": 2},
            "note": {"type": "string", "description": "why", "default": ""},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert ts.injected == ("ctx",)


def test_add_output_is_wrapped() -> None:
    ts = sig(add, skip=is_context)
    assert ts.wraps_output is True
    assert ts.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert ts.structured(5) == {"result": 5}
    assert validates(ts.output_schema, ts.structured(5))


def test_add_bind_excludes_injected_and_keeps_function_defaults() -> None:
    ts = sig(add, skip=is_context)
    assert ts.bind({"a": 1}) == {"a": 1}
    assert ts.bind({"a": 1, "b": 3, "note": "n"}) == {"a": 1, "b": 3, "note": "n"}
    with pytest.raises(ArgumentError, match=r"^\$\.ctx: unknown argument"):
        ts.bind({"a": 1, "ctx": None})


def test_default_skip_skips_nothing() -> None:
    def f(a: int, ctx: RequestContext) -> None: ...

    # RequestContext is not a msgspec type; without `skip` it must be rejected.
    with pytest.raises(TypeError, match=r"unsupported parameter type in tool function .*f"):
        ToolSignature.from_function(f)
    assert sig(f, skip=is_context).injected == ("ctx",)


def search_struct(
    query: str,
    limit: Annotated[int, Meta(ge=1, le=100)] = 10,
    tags: list[str] | None = None,
) -> list[HitStruct]:
    return []


def search_dataclass(
    query: str,
    limit: Annotated[int, Meta(ge=1, le=100)] = 10,
    tags: list[str] | None = None,
) -> list[HitDataclass]:
    return []


def search_typeddict(
    query: str,
    limit: Annotated[int, Meta(ge=1, le=100)] = 10,
    tags: list[str] | None = None,
) -> list[HitTypedDict]:
    return []


SEARCH_INPUT = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
        "tags": {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
            "default": None,
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("fn", "hit", "score_required"),
    [
        (search_struct, "HitStruct", False),
        (search_dataclass, "HitDataclass", False),
        (search_typeddict, "HitTypedDict", True),
    ],
)
def test_search_schemas(fn: Any, hit: str, score_required: bool) -> None:
    ts = sig(fn)
    assert ts.input_schema == SEARCH_INPUT
    assert ts.injected == ()
    assert ts.wraps_output is True
    out = ts.output_schema
    assert out is not None
    assert out["properties"] == {"result": {"type": "array", "items": {"$ref": f"#/$defs/{hit}"}}}
    assert out["required"] == ["result"]
    hit_schema = out["$defs"][hit]
    assert hit_schema["type"] == "object"
    assert hit_schema["properties"]["title"] == {"type": "string"}
    assert hit_schema["properties"]["score"]["type"] == "number"
    assert sorted(hit_schema["required"]) == (["score", "title"] if score_required else ["title"])


def test_search_bind() -> None:
    ts = sig(search_struct)
    assert ts.bind({"query": "q"}) == {"query": "q"}
    assert ts.bind({"query": "q", "limit": 5, "tags": ["a", "b"]}) == {
        "query": "q",
        "limit": 5,
        "tags": ["a", "b"],
    }
    assert ts.bind({"query": "q", "tags": None}) == {"query": "q", "tags": None}


def test_search_structured_list_of_each_kind() -> None:
    for fn, hit in [
        (search_struct, HitStruct("a", 1.5)),
        (search_dataclass, HitDataclass("a", 1.5)),
        (search_typeddict, HitTypedDict(title="a", score=1.5)),
    ]:
        ts = sig(fn)
        content = ts.structured([hit])
        assert content == {"result": [{"title": "a", "score": 1.5}]}
        assert validates(ts.output_schema, content)


# --------------------------------------------------------------------------- #
# Input schemas
# --------------------------------------------------------------------------- #


def test_no_parameters() -> None:
    def ping() -> str:
        return "pong"

    ts = sig(ping)
    assert ts.input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    assert ts.bind(None) == {}
    assert ts.bind({}) == {}
    with pytest.raises(ArgumentError, match=r"^\$\.x: unknown argument; this tool takes no"):
        ts.bind({"x": 1})


def test_meta_annotations() -> None:
    def f(
        name: Annotated[
            str,
            Meta(
                title="Name",
                description="who",
                pattern="^[a-z]+$",
                min_length=1,
                max_length=8,
                examples=["bob"],
            ),
        ],
        ratio: Annotated[float, Meta(gt=0, lt=1)] = 0.5,
        items: Annotated[list[int], Meta(min_length=1, max_length=3)] = (1,),  # type: ignore[assignment]
    ) -> None: ...

    props = sig(f).input_schema["properties"]
    assert props["name"] == {
        "title": "Name",
        "description": "who",
        "examples": ["bob"],
        "type": "string",
        "minLength": 1,
        "maxLength": 8,
        "pattern": "^[a-z]+$",
    }
    assert props["ratio"] == {
        "type": "number",
        "exclusiveMinimum": 0,
        "exclusiveMaximum": 1,
        "default": 0.5,
    }
    assert props["items"] == {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 1,
        "maxItems": 3,
        "default": [1],
    }


def test_docstring_args_give_descriptions() -> None:
    def f(
        query: str,
        limit: int = 10,
        mode: Annotated[str, Meta(description="from meta")] = "x",
        bare: bool = False,
    ) -> None:
        """Search things.

        Longer text that mentions limit: not a parameter line.

        Args:
            query (str): The text to search
                for, continued on an indented line.
            limit: Maximum number of hits.
            mode: Ignored, Meta wins.

        Returns:
            nothing: really.
        """

    props = sig(f).input_schema["properties"]
    assert props["query"]["description"] == "The text to search for, continued on an indented line."
    assert props["limit"]["description"] == "Maximum number of hits."
    assert props["mode"]["description"] == "from meta"
    assert "description" not in props["bare"]


def test_defaults_shown_only_when_json_serialisable() -> None:
    sentinel = object()

    def f(
        a: int = 1,
        b: Any = sentinel,
        c: float = math.inf,
        d: tuple[int, int] = (1, 2),
        e: Color = Color.RED,
        g: str | None = None,
        h: dict[str, int] | None = None,
    ) -> None: ...

    ts = sig(f)
    props = ts.input_schema["properties"]
    assert props["a"]["default"] == 1
    assert "default" not in props["b"]
    assert "default" not in props["c"]
    assert props["d"]["default"] == [1, 2]
    assert props["e"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert props["g"]["default"] is None
    assert "required" not in ts.input_schema
    # Omitted arguments are left to the function, even unserialisable defaults.
    assert ts.bind({}) == {}


def test_keyword_only_required_after_optional() -> None:
    def f(a: int = 1, *, b: str, c: bool = True) -> None: ...

    ts = sig(f)
    assert ts.input_schema["required"] == ["b"]
    assert list(ts.input_schema["properties"]) == ["a", "b", "c"]
    assert ts.bind({"b": "x"}) == {"b": "x"}


def test_optional_union_literal_enum() -> None:
    def f(
        a: int | None,
        b: int | str = 0,
        c: Literal["x", "y"] = "x",
        d: Color = Color.GREEN,
        e: int | None = None,
    ) -> None: ...

    ts = sig(f)
    props = ts.input_schema["properties"]
    assert props["a"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert props["b"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert props["c"] == {"enum": ["x", "y"], "default": "x"}
    assert props["d"] == {"$ref": "#/$defs/Color", "default": "green"}
    assert ts.input_schema["$defs"]["Color"] == {"title": "Color", "enum": ["green", "red"]}
    assert ts.input_schema["required"] == ["a"]

    assert ts.bind({"a": None}) == {"a": None}
    assert ts.bind({"a": 1, "b": "s", "c": "y", "d": "red"}) == {
        "a": 1,
        "b": "s",
        "c": "y",
        "d": Color.RED,
    }
    with pytest.raises(ArgumentError, match=r"^\$\.c: Invalid enum value 'z'$"):
        ts.bind({"a": 1, "c": "z"})
    with pytest.raises(ArgumentError, match=r"^\$\.d: Invalid enum value 'blue'$"):
        ts.bind({"a": 1, "d": "blue"})


def test_nested_types_go_to_defs() -> None:
    def f(
        box: Box, points: list[Point], tree: Tree | None = None, hit: HitTypedDict | None = None
    ) -> None: ...

    ts = sig(f)
    schema = ts.input_schema
    assert schema["properties"]["box"] == {"$ref": "#/$defs/Box"}
    assert schema["properties"]["points"] == {"type": "array", "items": {"$ref": "#/$defs/Point"}}
    assert set(schema["$defs"]) == {"Box", "Point", "Tree", "HitTypedDict"}
    assert schema["$defs"]["Box"]["properties"]["corner"] == {"$ref": "#/$defs/Point"}
    assert schema["$defs"]["Box"]["properties"]["label"] == {
        "type": "string",
        "maxLength": 5,
        "default": "box",
    }
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}

    args = {
        "box": {"corner": {"x": 1, "y": 2}},
        "points": [{"x": 0, "y": 0}],
        "tree": {"value": 1, "children": [{"value": 2}]},
    }
    assert validates(schema, args)
    bound = ts.bind(args)
    assert bound["box"] == Box(Point(1, 2))
    assert bound["points"] == [Point(0, 0)]
    assert bound["tree"] == Tree(1, [Tree(2)])

    with pytest.raises(ArgumentError, match=r"^\$\.box\.corner\.y: Expected `int`, got `str`$"):
        ts.bind({"box": {"corner": {"x": 1, "y": "2"}}, "points": []})
    with pytest.raises(ArgumentError, match=r"^\$\.box\.corner\.y: missing required field$"):
        ts.bind({"box": {"corner": {"x": 1}}, "points": []})
    with pytest.raises(ArgumentError, match=r"^\$\.points\[1\]: Expected `object`, got `int`$"):
        ts.bind({"box": {"corner": {"x": 1, "y": 2}}, "points": [{"x": 0, "y": 0}, 3]})
    with pytest.raises(ArgumentError, match=r"^\$\.box\.label: Expected `str` of length <= 5$"):
        ts.bind({"box": {"corner": {"x": 1, "y": 2}, "label": "toolong"}, "points": []})


def test_containers() -> None:
    def f(
        a: list[str],
        b: tuple[int, str],
        c: set[int],
        d: dict[str, float],
        e: tuple[int, ...] = (),
        g: frozenset[str] = frozenset(),
    ) -> None: ...

    ts = sig(f)
    props = ts.input_schema["properties"]
    assert props["a"] == {"type": "array", "items": {"type": "string"}}
    assert props["b"] == {
        "type": "array",
        "minItems": 2,
        "maxItems": 2,
        "prefixItems": [{"type": "integer"}, {"type": "string"}],
        "items": False,
    }
    assert props["c"] == {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    assert props["d"] == {"type": "object", "additionalProperties": {"type": "number"}}
    assert props["e"] == {"type": "array", "items": {"type": "integer"}, "default": []}
    bound = ts.bind({"a": ["x"], "b": [1, "y"], "c": [3, 4], "d": {"k": 1}, "e": [5]})
    assert bound == {"a": ["x"], "b": (1, "y"), "c": {3, 4}, "d": {"k": 1.0}, "e": (5,)}
    assert type(bound["d"]["k"]) is float
    with pytest.raises(ArgumentError, match=r"^\$\.b: Expected `array` of length 2, got 1$"):
        ts.bind({"a": [], "b": [1], "c": [], "d": {}})


def test_unannotated_parameter_is_any() -> None:
    def f(x, y: int = 0):  # type: ignore[no-untyped-def]
        return x

    ts = sig(f)
    assert ts.input_schema["properties"]["x"] == {}
    assert ts.output_schema is None
    assert ts.bind({"x": {"anything": [1, None]}}) == {"x": {"anything": [1, None]}}


MARKER = object()
INJECT = object()


def test_non_meta_annotated_metadata_is_ignored() -> None:
    def f(x: Annotated[int, MARKER, Meta(ge=0)]) -> None: ...

    assert sig(f).input_schema["properties"]["x"] == {"type": "integer", "minimum": 0}


def test_skip_sees_annotated_annotation() -> None:
    def f(a: int, session: Annotated[object, INJECT]) -> None: ...

    def skip(annotation: Any) -> bool:
        return INJECT in getattr(annotation, "__metadata__", ())

    ts = sig(f, skip=skip)
    assert ts.injected == ("session",)
    assert list(ts.input_schema["properties"]) == ["a"]


# --------------------------------------------------------------------------- #
# Kinds of callables and rejected signatures
# --------------------------------------------------------------------------- #


def greet(greeting: str, name: str, punctuation: str = "!") -> str:
    return f"{greeting}, {name}{punctuation}"


def test_functools_partial() -> None:
    p = functools.partial(greet, "Hello")
    ts = sig(p)
    assert ts.input_schema["required"] == ["name"]
    assert list(ts.input_schema["properties"]) == ["name", "punctuation"]
    assert p(**ts.bind({"name": "Ann"})) == "Hello, Ann!"

    kw = functools.partial(greet, punctuation="?")
    ts = sig(kw)
    assert ts.input_schema["properties"]["punctuation"] == {"type": "string", "default": "?"}
    assert kw(**ts.bind({"greeting": "Hi", "name": "Bo"})) == "Hi, Bo?"


class Calculator:
    """A tool provider."""

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def shift(self, value: int, ctx: RequestContext) -> Point:
        """Shift a value.

        Args:
            value: The value to shift.
        """
        return Point(value + self.offset, 0)

    @staticmethod
    def double(value: float) -> float:
        return value * 2

    def __call__(self, value: int) -> int:
        return value + self.offset


def test_bound_method_static_method_and_callable_instance() -> None:
    calc = Calculator(10)
    ts = sig(calc.shift, skip=is_context)
    assert ts.input_schema["properties"] == {
        "value": {"type": "integer", "description": "The value to shift."}
    }
    assert ts.injected == ("ctx",)
    assert ts.wraps_output is False
    assert ts.structured(calc.shift(**ts.bind({"value": 1}), ctx=None)) == {"x": 11, "y": 0}  # type: ignore[arg-type]

    ts = sig(Calculator.double)
    assert ts.input_schema["properties"] == {"value": {"type": "number"}}
    assert ts.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
    }

    ts = sig(calc)
    assert ts.input_schema["required"] == ["value"]
    assert ts.structured(calc(**ts.bind({"value": 1}))) == {"result": 11}


def test_decorated_with_functools_wraps() -> None:
    def deco(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    ts = sig(deco(greet))
    assert ts.input_schema["required"] == ["greeting", "name"]


def test_rejects_var_args() -> None:
    def star(*names: str) -> None: ...

    def double_star(a: int, **extra: Any) -> None: ...

    def positional(a: int, /, b: int) -> None: ...

    with pytest.raises(TypeError, match=r"tool function `.*star` takes \*names"):
        ToolSignature.from_function(star)
    with pytest.raises(TypeError, match=r"tool function `.*double_star` takes \*\*extra"):
        ToolSignature.from_function(double_star)
    with pytest.raises(TypeError, match=r"tool function `.*positional` has positional-only parameter 'a'"):
        ToolSignature.from_function(positional)


def test_unresolvable_forward_reference() -> None:
    def f(x: NoSuchType) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(TypeError, match=r"cannot resolve the annotations of tool function `.*f`"):
        ToolSignature.from_function(f)


def test_forward_references_are_strings_here() -> None:
    # The point of `from __future__ import annotations` in this module.
    assert search_struct.__annotations__["limit"] == "Annotated[int, Meta(ge=1, le=100)]"
    assert sig(search_struct).input_schema["properties"]["limit"]["maximum"] == 100


def test_unsupported_parameter_type_names_the_function() -> None:
    def f(x: NotSerialisable) -> None: ...

    with pytest.raises(TypeError, match=r"(?s)tool function `.*f`.*NotSerialisable"):
        ToolSignature.from_function(f)


# --------------------------------------------------------------------------- #
# bind: errors and strictness
# --------------------------------------------------------------------------- #


def limits(
    query: str,
    limit: Annotated[int, Meta(ge=1, le=100)] = 10,
    ratio: float = 0.5,
    flag: bool = False,
    tags: list[str] | None = None,
) -> None: ...


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "$.query: missing required argument"),
        ({"query": 1}, "$.query: Expected `str`, got `int`"),
        ({"query": None}, "$.query: Expected `str`, got `null`"),
        ({"query": "q", "limit": 0}, "$.limit: Expected `int` >= 1"),
        ({"query": "q", "limit": 101}, "$.limit: Expected `int` <= 100"),
        ({"query": "q", "limit": "1"}, "$.limit: Expected `int`, got `str`"),
        ({"query": "q", "limit": True}, "$.limit: Expected `int`, got `bool`"),
        ({"query": "q", "limit": 1.5}, "$.limit: Expected `int`, got `float`"),
        ({"query": "q", "limit": None}, "$.limit: Expected `int`, got `null`"),
        ({"query": "q", "ratio": "0.5"}, "$.ratio: Expected `float`, got `str`"),
        ({"query": "q", "ratio": False}, "$.ratio: Expected `float`, got `bool`"),
        ({"query": "q", "flag": 1}, "$.flag: Expected `bool`, got `int`"),
        ({"query": "q", "tags": "a"}, "$.tags: Expected `array | null`, got `str`"),
        ({"query": "q", "tags": ["a", 2]}, "$.tags[1]: Expected `str`, got `int`"),
        (
            {"query": "q", "limt": 5},
            "$.limt: unknown argument; expected one of: query, limit, ratio, flag, tags",
        ),
        (
            {"query": "q", "a b": 5},
            '$["a b"]: unknown argument; expected one of: query, limit, ratio, flag, tags',
        ),
        ([], "$: Expected `object`, got `array`"),
        ("x", "$: Expected `object`, got `str`"),
    ],
)
def test_bind_errors(arguments: Any, message: str) -> None:
    ts = sig(limits)
    with pytest.raises(ArgumentError) as info:
        ts.bind(arguments)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)
    assert info.value.path == message.split(": ", 1)[0]
    # The schema agrees that these arguments are invalid.
    assert not validates(ts.input_schema, arguments)


def test_bind_happy_paths() -> None:
    ts = sig(limits)
    assert ts.bind({"query": "q"}) == {"query": "q"}
    bound = ts.bind({"query": "q", "limit": 100, "ratio": 1, "flag": True, "tags": None})
    assert bound == {"query": "q", "limit": 100, "ratio": 1.0, "flag": True, "tags": None}
    assert type(bound["ratio"]) is float


def test_bind_accepts_integral_floats_for_integers_like_json_schema() -> None:
    ts = sig(limits)
    args = {"query": "q", "limit": 5.0}
    assert validates(ts.input_schema, args)
    bound = ts.bind(args)
    assert bound == {"query": "q", "limit": 5}
    assert type(bound["limit"]) is int
    # Still range-checked after the conversion.
    with pytest.raises(ArgumentError, match=r"^\$\.limit: Expected `int` <= 100$"):
        ts.bind({"query": "q", "limit": 500.0})
    # The reported error is the real one, not the float.
    with pytest.raises(ArgumentError, match=r"^\$\.query: Expected `str`, got `int`$"):
        ts.bind({"query": 3, "limit": 5.0})


def test_bind_does_not_mutate_or_share_arguments() -> None:
    ts = sig(limits)
    args = {"query": "q", "limit": 2.0, "tags": ["a"]}
    before = msgspec.json.encode(args)
    ts.bind(args)
    assert msgspec.json.encode(args) == before


def test_everything_is_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ts = sig(search_struct)

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("built at call time")

    monkeypatch.setattr(msgspec, "defstruct", forbidden)
    monkeypatch.setattr(msgspec.json, "schema", forbidden)
    monkeypatch.setattr(msgspec.json, "schema_components", forbidden)
    assert ts.bind({"query": "q", "limit": 3}) == {"query": "q", "limit": 3}
    with pytest.raises(ArgumentError):
        ts.bind({"query": "q", "limit": 3.5})
    assert ts.structured([HitStruct("t")]) == {"result": [{"title": "t", "score": 0.0}]}


# --------------------------------------------------------------------------- #
# Output schemas and structured content
# --------------------------------------------------------------------------- #


def ret_struct() -> HitStruct:
    return HitStruct("a")


def ret_dataclass() -> HitDataclass:
    return HitDataclass("a")


def ret_typeddict() -> HitTypedDict:
    return {"title": "a", "score": 0.0}


def ret_dict() -> dict[str, int]:
    return {}


def ret_int() -> int:
    return 1


def ret_list() -> list[Point]:
    return []


@pytest.mark.parametrize(
    ("fn", "title"),
    [(ret_struct, "HitStruct"), (ret_dataclass, "HitDataclass"), (ret_typeddict, "HitTypedDict")],
)
def test_object_returns_are_not_wrapped(fn: Any, title: str) -> None:
    ts = sig(fn)
    assert ts.wraps_output is False
    out = ts.output_schema
    assert out is not None
    assert out["title"] == title
    assert out["type"] == "object"
    assert "$defs" not in out
    content = ts.structured(fn())
    assert content == {"title": "a", "score": 0.0}
    assert validates(out, content)


def test_dict_return() -> None:
    ts = sig(ret_dict)
    assert ts.wraps_output is False
    assert ts.output_schema == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert ts.structured({"a": 1}) == {"a": 1}
    # msgspec does not name the key of a mapping value in its paths.
    with pytest.raises(ResultError, match=r"^\$\[\.\.\.\]: Expected `int`, got `str`$"):
        ts.structured({"a": 1, "b": "x"})


def test_int_return() -> None:
    ts = sig(ret_int)
    assert ts.wraps_output is True
    assert ts.structured(3) == {"result": 3}
    with pytest.raises(ResultError, match=r"^\$\.result: Expected `int`, got `str`$"):
        ts.structured("3")
    with pytest.raises(ResultError, match=r"^\$\.result: Expected `int`, got `bool`$"):
        ts.structured(True)


def test_list_return() -> None:
    ts = sig(ret_list)
    assert ts.wraps_output is True
    assert ts.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"$ref": "#/$defs/Point"}}},
        "required": ["result"],
        "$defs": {
            "Point": {
                "title": "Point",
                "type": "object",
                "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"],
            }
        },
    }
    content = ts.structured([Point(1, 2), {"x": 3, "y": 4}])
    assert content == {"result": [{"x": 1, "y": 2}, {"x": 3, "y": 4}]}
    assert validates(ts.output_schema, content)
    with pytest.raises(ResultError, match=r"^\$\.result\[0\]\.y: missing required field$"):
        ts.structured([{"x": 1}])


def test_struct_return_validation_errors() -> None:
    ts = sig(ret_struct)
    with pytest.raises(ResultError, match=r"^\$\.score: Expected `float`, got `str`$"):
        ts.structured(HitStruct("a", "bad"))  # type: ignore[arg-type]
    with pytest.raises(ResultError, match=r"^\$: Expected `object`, got `null`$"):
        ts.structured(None)
    with pytest.raises(ResultError, match=r"cannot serialise"):
        ts.structured(NotSerialisable())


def test_recursive_struct_return_keeps_its_definition() -> None:
    def f() -> Tree:
        return Tree(1)

    ts = sig(f)
    assert ts.wraps_output is False
    out = ts.output_schema
    assert out is not None
    assert out["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "Tree" in out["$defs"]
    content = ts.structured(Tree(1, [Tree(2)]))
    assert content == {"value": 1, "children": [{"value": 2, "children": []}]}
    assert validates(out, content)


def test_non_object_types_are_wrapped() -> None:
    def optional_struct() -> HitStruct | None: ...
    def array_like() -> Pair: ...
    def text() -> str: ...
    def literal() -> Literal["a", "b"]: ...

    for fn in (optional_struct, array_like, text, literal):
        ts = sig(fn)
        assert ts.wraps_output is True, fn
        assert ts.output_schema is not None
        assert ts.output_schema["required"] == ["result"]
    assert sig(optional_struct).structured(None) == {"result": None}
    assert sig(array_like).structured(Pair(1, "x")) == {"result": [1, "x"]}


def test_special_types_in_results() -> None:
    def f() -> Stamped: ...
    def g() -> dict[int, str]: ...

    ts = sig(f)
    when = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    content = ts.structured(Stamped(when, Color.RED))
    assert content == {"at": "2025-01-02T03:04:05Z", "color": "red"}
    assert validates(ts.output_schema, content)

    ts = sig(g)
    assert ts.structured({1: "a"}) == {"1": "a"}


def test_no_output_schema_cases() -> None:
    def none() -> None: ...
    def missing():  # type: ignore[no-untyped-def]
        ...
    def anything() -> Any: ...
    def obj() -> object: ...
    def unsupported() -> NotSerialisable: ...
    def content() -> TextContent: ...
    def contents() -> list[TextContent]: ...
    def maybe_content() -> TextContent | None: ...

    for fn in (none, missing, anything, obj, unsupported):
        ts = sig(fn)
        assert ts.output_schema is None, fn
        assert ts.wraps_output is False
        with pytest.raises(TypeError, match="has no structured output"):
            ts.structured(1)

    def is_content(annotation: Any) -> bool:
        return annotation is TextContent

    for fn in (content, contents, maybe_content):
        assert sig(fn).output_schema is not None
        assert sig(fn, is_content=is_content).output_schema is None, fn

    # The caller decides explicitly.
    assert sig(ret_struct, structured_output=False).output_schema is None
    forced = sig(content, structured_output=True, is_content=is_content)
    assert forced.output_schema is not None
    assert forced.structured(TextContent("t")) == {"text": "t"}


def test_forced_structured_output() -> None:
    def none() -> None: ...
    def anything() -> Any: ...
    def missing():  # type: ignore[no-untyped-def]
        ...
    def unsupported() -> NotSerialisable: ...

    ts = sig(none, structured_output=True)
    assert ts.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "null"}},
        "required": ["result"],
    }
    assert ts.structured(None) == {"result": None}

    ts = sig(anything, structured_output=True)
    assert ts.output_schema == {
        "type": "object",
        "properties": {"result": {}},
        "required": ["result"],
    }
    assert ts.structured([1, "x"]) == {"result": [1, "x"]}

    with pytest.raises(TypeError, match=r"`.*missing` needs a return annotation"):
        ToolSignature.from_function(missing, structured_output=True)
    with pytest.raises(TypeError, match=r"`.*unsupported` cannot be structured"):
        ToolSignature.from_function(unsupported, structured_output=True)


# --------------------------------------------------------------------------- #
# Property: JSON Schema validation and bind agree
# --------------------------------------------------------------------------- #


def prop_tool(
    count: int,
    name: Annotated[str, Meta(min_length=1, max_length=8, pattern="^[a-z]+$")],
    ratio: Annotated[float, Meta(gt=0, le=1)] = 0.5,
    flag: bool = False,
    tags: Annotated[list[str], Meta(max_length=3)] | None = None,
    level: Annotated[int, Meta(ge=0, le=10)] = 3,
    mode: Literal[1, 2, 3] = 1,
    opt: int | None = None,
    label: str = "",
) -> None: ...


PROP = ToolSignature.from_function(prop_tool)
PROP_VALIDATOR = Validator(PROP.input_schema)
FIELDS = list(PROP.input_schema["properties"])

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.integers(min_value=-3, max_value=12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(min_value=-3, max_value=12).map(float)
    | st.sampled_from([0.0, -0.0, 1.0, 0.5, 1e300, 5e-324, True, False, "", "1", "abc"])
    | st.text(max_size=10)
    | st.from_regex(r"[a-z]{1,9}", fullmatch=True)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
keys = st.sampled_from([*FIELDS, "extra", "Count"])


def is_accepted(arguments: Any) -> bool:
    try:
        PROP.bind(arguments)
    except ArgumentError:
        return False
    return True


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(keys, json_values, max_size=6))
def test_property_bind_agrees_with_json_schema(arguments: dict[str, Any]) -> None:
    assert PROP_VALIDATOR.is_valid(arguments) == is_accepted(arguments), arguments


valid_arguments = st.fixed_dictionaries(
    {
        "count": st.integers(min_value=-(2**63), max_value=2**63)
        | st.integers(min_value=-(2**52), max_value=2**52).map(float),
        "name": st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    },
    optional={
        "ratio": st.floats(min_value=0, max_value=1, exclude_min=True) | st.just(1),
        "flag": st.booleans(),
        "tags": st.none() | st.lists(st.text(max_size=5), max_size=3),
        "level": st.integers(min_value=0, max_value=10) | st.sampled_from([0.0, 10.0]),
        "mode": st.sampled_from([1, 2, 3, 2.0]),
        "opt": st.none() | st.integers() | st.just(-0.0),
        "label": st.text(max_size=10),
    },
)


@settings(max_examples=300, deadline=None)
@given(valid_arguments)
def test_property_valid_arguments_are_bound_faithfully(arguments: dict[str, Any]) -> None:
    assert PROP_VALIDATOR.is_valid(arguments)
    bound = PROP.bind(arguments)
    assert set(bound) == set(arguments)
    for key, value in arguments.items():
        assert bound[key] == value
        if isinstance(value, float) and key not in ("ratio",):
            assert type(bound[key]) is int
    if "ratio" in bound:
        assert type(bound["ratio"]) is float
    prop_tool(**bound)


@settings(max_examples=500, deadline=None)
@given(
    valid_arguments,
    st.dictionaries(keys, json_values, max_size=2),
    st.sets(st.sampled_from(FIELDS), max_size=2),
)
def test_property_mutated_arguments(
    arguments: dict[str, Any], changes: dict[str, Any], dropped: set[str]
) -> None:
    arguments = {k: v for k, v in {**arguments, **changes}.items() if k not in dropped}
    assert PROP_VALIDATOR.is_valid(arguments) == is_accepted(arguments), arguments
