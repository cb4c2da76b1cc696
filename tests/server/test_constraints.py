"""Constraints on tool parameters (annotated_types, pydantic Field, msgspec.Meta): each one in
the advertised inputSchema and enforced on the call, or refused at registration.

No ``from __future__ import annotations`` here: the tools below use classes defined in the tests.
"""

import dataclasses
import subprocess
import sys
from typing import Annotated, Any

import annotated_types as at
import jsonschema
import msgspec
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field

from mcp_trio import McpError
from mcp_trio.server import Server
from mcp_trio.server._signature import ArgumentError, ResultError, ToolSignature
from tests._support.server import connected, text_of

Validator = jsonschema.Draft202012Validator


def one_parameter(hint: Any, default: Any = None) -> ToolSignature:
    """The signature of a tool taking one argument ``x`` of type ``hint`` (required without default)."""
    if default is None:

        def tool(x: Any) -> None: ...

    else:

        def tool(x: Any = default) -> None: ...

    tool.__annotations__["x"] = hint
    ts = ToolSignature.from_function(tool)
    Validator.check_schema(ts.input_schema)
    return ts


def refused(ts: ToolSignature, value: Any) -> str:
    with pytest.raises(ArgumentError) as info:
        ts.bind({"x": value})
    assert not Validator(ts.input_schema).is_valid({"x": value}), "the schema should refuse it too"
    return str(info.value)


def accepted(ts: ToolSignature, value: Any) -> None:
    assert ts.bind({"x": value}) == {"x": value}
    assert Validator(ts.input_schema).is_valid({"x": value})


# --------------------------------------------------------------------------- #
# Each constraint: in the schema and enforced
# --------------------------------------------------------------------------- #

CASES: list[tuple[str, Any, dict[str, Any], Any, Any, str]] = [
    # (name, hint, schema keywords, a valid value, an invalid one, what the error says)
    ("Ge", Annotated[int, at.Ge(1)], {"minimum": 1}, 1, 0, ">= 1"),
    ("Le", Annotated[int, at.Le(100)], {"maximum": 100}, 100, 500, "<= 100"),
    ("Gt", Annotated[float, at.Gt(0)], {"exclusiveMinimum": 0}, 0.5, 0.0, "> 0"),
    (
        "Lt",
        Annotated[int, at.Lt(10)],
        {"exclusiveMaximum": 10},
        9,
        10,
        "<= 9",
    ),  # (msgspec says it so for ints)
    (
        "Interval",
        Annotated[int, at.Interval(ge=1, lt=5)],
        {"minimum": 1, "exclusiveMaximum": 5},
        4,
        5,
        "<= 4",
    ),
    ("MultipleOf", Annotated[int, at.MultipleOf(5)], {"multipleOf": 5}, 15, 7, "multiple of 5"),
    ("MinLen", Annotated[str, at.MinLen(2)], {"minLength": 2}, "ab", "a", "length >= 2"),
    ("MaxLen", Annotated[list[int], at.MaxLen(2)], {"maxItems": 2}, [1, 2], [1, 2, 3], "length <= 2"),
    ("Len", Annotated[str, at.Len(1, 3)], {"minLength": 1, "maxLength": 3}, "abc", "", "length >= 1"),
    ("Field ge/le", Annotated[int, Field(ge=1, le=100)], {"minimum": 1, "maximum": 100}, 50, 500, "<= 100"),
    (
        "Field pattern",
        Annotated[str, Field(pattern=r"^[a-z]+$")],
        {"pattern": "^[a-z]+$"},
        "ab",
        "A",
        "regex",
    ),
    (
        "Field min_length",
        Annotated[list[str], Field(min_length=1)],
        {"minItems": 1},
        ["a"],
        [],
        "length >= 1",
    ),
    (
        "Field multiple_of",
        Annotated[float, Field(multiple_of=0.5)],
        {"multipleOf": 0.5},
        1.5,
        0.7,
        "multiple",
    ),
    ("PositiveInt", pydantic.PositiveInt, {"exclusiveMinimum": 0}, 1, 0, ">= 1"),
    (
        "StringConstraints",
        Annotated[str, pydantic.StringConstraints(min_length=2, pattern="^x")],
        {"minLength": 2, "pattern": "^x"},
        "xy",
        "ab",
        "regex",
    ),
    ("msgspec.Meta", Annotated[int, msgspec.Meta(ge=0)], {"minimum": 0}, 0, -1, ">= 0"),
    ("nested", list[Annotated[int, at.Ge(0)]], {}, [0, 1], [1, -1], "$.x[1]"),
    ("optional", Annotated[int, at.Le(3)] | None, {}, None, 4, "<= 3"),
]


@pytest.mark.parametrize(
    ("hint", "keywords", "good", "bad", "says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_constraint_is_advertised_and_enforced(
    hint: Any, keywords: dict[str, Any], good: Any, bad: Any, says: str
) -> None:
    ts = one_parameter(hint)
    prop = ts.input_schema["properties"]["x"]
    assert prop.items() >= keywords.items()
    accepted(ts, good)
    message = refused(ts, bad)
    assert message.startswith("$.x") and says in message, message


def test_descriptions_titles_and_examples_come_from_field_and_doc() -> None:
    def tool(
        limit: Annotated[int, Field(ge=1, description="How many rows", title="Limit", examples=[10])] = 10,
        q: Annotated[str, at.doc("The query")] = "",
        flag: Annotated[bool, Field(json_schema_extra={"x-ui": "toggle"}, deprecated=True)] = False,
    ) -> None:
        """A tool.

        Args:
            limit: (the docstring loses to the Field's description)
        """

    props = ToolSignature.from_function(tool).input_schema["properties"]
    assert props["limit"] == {
        "type": "integer",
        "minimum": 1,
        "description": "How many rows",
        "title": "Limit",
        "examples": [10],
        "default": 10,
    }
    assert props["q"] == {"type": "string", "description": "The query", "default": ""}
    assert props["flag"] == {"type": "boolean", "x-ui": "toggle", "deprecated": True, "default": False}


def test_unknown_metadata_is_left_alone() -> None:
    class Marker:
        pass

    ts = one_parameter(Annotated[int, "a note for another library", Marker()])
    assert ts.input_schema["properties"]["x"] == {"type": "integer"}
    accepted(ts, -5)


# --------------------------------------------------------------------------- #
# pydantic Field as a default, alias
# --------------------------------------------------------------------------- #


def test_a_field_default_is_shown_and_applied() -> None:
    def tool(
        page: int = Field(1, ge=1, description="Page number"),
        tags: list[str] = Field(default_factory=list, max_length=2),  # noqa: B008 - as tools are written
        size: int = Field(ge=1),
    ) -> None: ...

    ts = ToolSignature.from_function(tool)
    props = ts.input_schema["properties"]
    assert props["page"] == {"type": "integer", "minimum": 1, "description": "Page number", "default": 1}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}, "maxItems": 2}
    assert ts.input_schema["required"] == ["size"]
    first = ts.bind({"size": 1})
    assert first == {"size": 1, "page": 1, "tags": []}
    assert ts.bind({"size": 1})["tags"] is not first["tags"], "the factory makes a new list each call"
    with pytest.raises(ArgumentError, match=r"^\$\.page: Expected `int` >= 1$"):
        ts.bind({"size": 1, "page": 0})


def test_an_alias_names_the_argument() -> None:
    def tool(source: Annotated[str, Field(alias="from", min_length=1)], limit: int = 5) -> None: ...

    ts = ToolSignature.from_function(tool)
    assert list(ts.input_schema["properties"]) == ["from", "limit"]
    assert ts.input_schema["required"] == ["from"]
    assert ts.bind({"from": "here"}) == {"source": "here"}
    with pytest.raises(ArgumentError, match=r"^\$\.source: unknown argument; expected one of: from, limit$"):
        ts.bind({"source": "here"})
    with pytest.raises(ArgumentError, match=r"^\$\.from: Expected `str` of length >= 1$"):
        ts.bind({"from": ""})


# --------------------------------------------------------------------------- #
# Refused at registration, naming the parameter, the metadata and what to use
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class Nested:
    count: Annotated[int, at.Ge(0)]


REFUSALS: list[tuple[str, Any, str]] = [
    ("Predicate", Annotated[str, at.Predicate(str.islower)], r"Predicate\(.*a JSON Schema cannot express it"),
    ("IsDigit", at.IsDigit[str], r"Predicate"),
    ("Not", Annotated[int, at.Not(bool)], r"Not\("),
    ("Unit", Annotated[float, at.Unit("m")], r"Unit\("),
    (
        "one time zone",
        Annotated[Any, at.Timezone("UTC")],
        r"cannot require one time zone.*Timezone\(\.\.\.\)",
    ),
    ("validator", Annotated[int, pydantic.AfterValidator(abs)], r"AfterValidator.*not a constraint"),
    (
        "strip_whitespace",
        Annotated[str, pydantic.StringConstraints(strip_whitespace=True)],
        r"strip_whitespace",
    ),
    ("max_digits", Annotated[float, Field(max_digits=3)], r"max_digits=3"),
    ("Strict(False)", Annotated[int, pydantic.Strict(False)], r"checked strictly"),
    ("default inside Annotated", Annotated[int, Field(default=3)], r"write the default in the signature"),
    ("exclude", Annotated[int, Field(exclude=True)], r"Field\(exclude=True\).*no meaning"),
    ("callable json_schema_extra", Annotated[int, Field(json_schema_extra=lambda s: None)], r"as a dict"),
    ("a bound on a string", Annotated[str, at.Ge(1)], r"Can only set `ge` on a numeric type.*a type it fits"),
    ("nested field", Nested, r"field 'count' of Nested .*msgspec\.Meta"),
]


@pytest.mark.parametrize(("hint", "says"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_what_cannot_be_honoured_is_refused(hint: Any, says: str) -> None:
    with pytest.raises(TypeError, match=r"parameter 'x' of tool function `.*tool`") as info:
        one_parameter(hint)
    assert info.match(says)


def test_a_refusal_says_what_to_use_instead() -> None:
    with pytest.raises(TypeError) as info:
        one_parameter(Annotated[int, at.Predicate(lambda v: v % 2 == 0)])
    assert "use bounds, lengths, multiple_of or pattern" in str(info.value)
    assert "raise ToolError" in str(info.value)


def test_a_nested_type_may_use_msgspec_meta() -> None:
    @dataclasses.dataclass
    class Box:
        count: Annotated[int, msgspec.Meta(ge=0)]

    ts = one_parameter(Box)
    assert ts.bind({"x": {"count": 0}}) == {"x": Box(count=0)}
    assert refused(ts, {"count": -1}) == "$.x.count: Expected `int` >= 0"


# --------------------------------------------------------------------------- #
# The schema and the check agree
# --------------------------------------------------------------------------- #


@given(
    low=st.integers(-50, 50),
    span=st.integers(0, 50),
    step=st.integers(1, 7),
    value=st.integers(-120, 120) | st.floats(-120, 120, allow_nan=False),
)
def test_bind_accepts_exactly_what_the_advertised_schema_accepts(
    low: int, span: int, step: int, value: Any
) -> None:
    ts = one_parameter(Annotated[int, at.Ge(low), Field(le=low + span), at.MultipleOf(step)])
    schema_ok = Validator(ts.input_schema).is_valid({"x": value})
    try:
        ts.bind({"x": value})
    except ArgumentError:
        assert not schema_ok
    else:
        assert schema_ok


# --------------------------------------------------------------------------- #
# Over the protocol
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_violated_constraint_gets_the_invalid_arguments_answer(version: str) -> None:
    server = Server("bounded")

    @server.tool
    def page(
        query: Annotated[str, at.MinLen(1)],
        limit: Annotated[int, Field(ge=1, le=100, description="How many")] = 10,
    ) -> list[str]:
        return [query] * min(limit, 2)

    async with connected(server, version) as client:
        listed = msgspec.to_builtins(await client.request("tools/list", {}))
        assert listed["tools"][0]["inputSchema"]["properties"]["limit"] == {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "How many",
            "default": 10,
        }
        good = await client.request("tools/call", {"name": "page", "arguments": {"query": "q"}})
        assert good.structuredContent == {"result": ["q", "q"]}
        for arguments, says in (
            ({"query": "q", "limit": 500}, "$.limit: Expected `int` <= 100"),
            ({"query": ""}, "$.query: Expected `str` of length >= 1"),
        ):
            expected = f"Invalid arguments for tool page: {says}"
            request = {"name": "page", "arguments": arguments}
            if version >= "2025-11-25":
                result = await client.request("tools/call", request)
                assert result.isError is True and text_of(result) == expected
            else:
                with pytest.raises(McpError) as info:
                    await client.request("tools/call", request)
                assert info.value.code == -32602 and info.value.message == expected


def test_neither_pydantic_nor_annotated_types_is_imported_for_plain_tools() -> None:
    code = (
        "import sys, typing, msgspec\n"
        "from mcp_trio.server import Server\n"
        "server = Server('plain')\n"
        "@server.tool\n"
        "def f(x: typing.Annotated[int, msgspec.Meta(ge=1)],\n"
        "      note: typing.Annotated[str, 'a note'] = '') -> int:\n"
        "    return x\n"
        "print(sorted(m for m in ('pydantic', 'annotated_types') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_return_type_takes_the_same_constraints() -> None:
    def score() -> Annotated[float, at.Ge(0), Field(le=1, description="A share")]:
        return 0.5

    def odd() -> Annotated[int, at.Predicate(lambda v: v % 2 == 1)]:
        return 1

    ts = ToolSignature.from_function(score)
    assert ts.output_schema is not None
    assert ts.output_schema["properties"]["result"] == {
        "type": "number",
        "minimum": 0,
        "maximum": 1,
        "description": "A share",
    }
    assert ts.structured(0.5) == {"result": 0.5}
    with pytest.raises(ResultError, match=r"^\$\.result: Expected `float` <= 1"):
        ts.structured(1.5)
    with pytest.raises(TypeError, match=r"the return type of tool function `.*odd`: Predicate"):
        ToolSignature.from_function(odd)


def test_a_constraint_on_an_optional_type_is_for_its_value() -> None:
    def tool(x: Annotated[int | None, Field(ge=1, description="Or none")] = None) -> None: ...

    ts = ToolSignature.from_function(tool)
    assert ts.input_schema["properties"]["x"] == {
        "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
        "description": "Or none",
        "default": None,
    }
    accepted(ts, None)
    accepted(ts, 1)
    assert refused(ts, 0) == "$.x: Expected `int` >= 1"
