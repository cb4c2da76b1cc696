"""Tool parameters and results holding a pydantic model: pydantic validates and describes them.

No ``from __future__ import annotations`` here: the tools below use classes defined in the tests.
"""

from typing import Annotated, Any, TypedDict

import annotated_types as at
import jsonschema
import msgspec
import pytest
from pydantic import BaseModel, ConfigDict, Field

from mcp_trio import McpError
from mcp_trio.server import Server
from mcp_trio.server._signature import ArgumentError, ResultError, ToolSignature
from tests._support.server import connected, text_of

Validator = jsonschema.Draft202012Validator


class Point(BaseModel):
    x: int = Field(ge=0, description="Distance from the left")
    y: int


class Shape(BaseModel):
    name: str
    points: list[Point] = Field(min_length=1)


def test_a_model_argument_is_validated_by_pydantic() -> None:
    def tool(shape: Shape, extra: Point | None = None) -> None:
        """Draw.

        Args:
            shape: What to draw.
        """

    ts = ToolSignature.from_function(tool)
    shape = ts.input_schema["properties"]["shape"]
    assert shape["description"] == "What to draw."
    assert shape["properties"]["points"]["minItems"] == 1
    assert ts.input_schema["$defs"]["Point"]["properties"]["x"]["minimum"] == 0
    Validator.check_schema(ts.input_schema)
    bound = ts.bind({"shape": {"name": "s", "points": [{"x": 1, "y": 2}]}})
    assert bound == {"shape": Shape(name="s", points=[Point(x=1, y=2)])}
    assert ts.bind({"shape": {"name": "s", "points": [{"x": 0, "y": 0}]}, "extra": {"x": 3, "y": 4}})[
        "extra"
    ] == Point(x=3, y=4)
    with pytest.raises(ArgumentError) as info:
        ts.bind({"shape": {"name": "s", "points": [{"x": -1, "y": 2}]}})
    assert str(info.value) == "$.shape.points[0].x: Input should be greater than or equal to 0"
    assert info.value.path == "$.shape.points[0].x"
    with pytest.raises(ArgumentError, match=r"^\$\.shape\.points: List should have at least 1 item"):
        ts.bind({"shape": {"name": "s", "points": []}})


def test_a_model_result_is_dumped_by_pydantic() -> None:
    def tool() -> Shape:
        return Shape(name="s", points=[Point(x=1, y=2)])

    def many() -> list[Point]:
        return [Point(x=1, y=2)]

    ts = ToolSignature.from_function(tool)
    assert ts.output_schema == Shape.model_json_schema(mode="serialization")
    assert ts.structured(tool()) == {"name": "s", "points": [{"x": 1, "y": 2}]}
    with pytest.raises(ResultError):
        ts.structured({"name": "s"})
    wrapped = ToolSignature.from_function(many)
    assert wrapped.wraps_output and wrapped.output_schema is not None
    assert wrapped.output_schema["properties"]["result"]["type"] == "array"
    assert wrapped.structured(many()) == {"result": [{"x": 1, "y": 2}]}


class Corner(TypedDict):
    x: int
    y: int


def ref_server(**options: Any) -> Server:
    server = Server("refs", **options)

    @server.tool
    def draw(shape: Shape, corner: Corner, limit: Annotated[int, at.Le(100)] = 10) -> list[Point]:
        return shape.points[:limit]

    return server


async def tools_of(server: Server) -> dict[str, Any]:
    async with connected(server, "2025-11-25") as client:
        listed = await client.request("tools/list", {})
    tools: dict[str, Any] = {t["name"]: t for t in msgspec.to_builtins(listed)["tools"]}
    return tools


async def test_a_model_in_the_advertised_schemas_is_written_out_too() -> None:
    draw = (await tools_of(ref_server()))["draw"]
    assert "$ref" not in msgspec.json.encode(draw).decode()
    assert draw["inputSchema"]["properties"]["limit"] == {"type": "integer", "maximum": 100, "default": 10}
    assert draw["inputSchema"]["properties"]["shape"]["properties"]["points"]["items"]["title"] == "Point"
    assert draw["outputSchema"]["properties"]["result"]["items"]["required"] == ["x", "y"]

    kept = (await tools_of(ref_server(keep_schema_refs=True)))["draw"]
    assert set(kept["inputSchema"]["$defs"]) == {"Corner", "Point"}
    assert kept["outputSchema"]["properties"]["result"]["items"] == {"$ref": "#/$defs/Point"}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_an_invalid_model_gets_the_invalid_arguments_answer(version: str) -> None:
    server = ref_server()

    def call(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"name": "draw", "arguments": arguments}

    shape = {"name": "s", "points": [{"x": 1, "y": 2}]}
    async with connected(server, version) as client:
        good = await client.request("tools/call", call({"shape": shape, "corner": {"x": 0, "y": 0}}))
        assert good.structuredContent == {"result": [{"x": 1, "y": 2}]}
        for arguments, says in (
            ({"shape": shape, "corner": {"x": 0, "y": 0}, "limit": 500}, "$.limit: Expected `int` <= 100"),
            (
                {"shape": {"name": "s", "points": [{"x": -1, "y": 2}]}, "corner": {"x": 0, "y": 0}},
                "$.shape.points[0].x: Input should be greater than or equal to 0",
            ),
        ):
            expected = f"Invalid arguments for tool draw: {says}"
            if version >= "2025-11-25":
                result = await client.request("tools/call", call(arguments))
                assert result.isError is True and text_of(result) == expected
            else:
                with pytest.raises(McpError) as info:
                    await client.request("tools/call", call(arguments))
                assert info.value.code == -32602 and info.value.message == expected


def test_an_alias_names_a_model_argument_too() -> None:
    def tool(point: Annotated[Point, Field(alias="at", description="Where")]) -> None: ...

    ts = ToolSignature.from_function(tool)
    assert list(ts.input_schema["properties"]) == ["at"]
    assert ts.input_schema["properties"]["at"]["description"] == "Where"
    assert ts.bind({"at": {"x": 1, "y": 1}}) == {"point": Point(x=1, y=1)}


class StrictPoint(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")

    x: int
    y: int


def test_the_model_configuration_decides_how_strict_pydantic_is() -> None:
    def tool(lax: Point | None = None, strict: StrictPoint | None = None) -> None: ...

    ts = ToolSignature.from_function(tool)
    assert ts.bind({"lax": {"x": "1", "y": 2, "z": 3}}) == {"lax": Point(x=1, y=2)}
    with pytest.raises(ArgumentError, match=r"^\$\.strict\.x: Input should be a valid integer"):
        ts.bind({"strict": {"x": "1", "y": 2}})
    with pytest.raises(ArgumentError, match=r"^\$\.strict\.z: Extra inputs are not permitted"):
        ts.bind({"strict": {"x": 1, "y": 2, "z": 3}})
    assert ts.input_schema["properties"]["strict"]["anyOf"][0] == {"$ref": "#/$defs/StrictPoint"}
    assert ts.input_schema["$defs"]["StrictPoint"]["additionalProperties"] is False


def test_models_mix_with_other_parameters_and_field_defaults() -> None:
    def tool(
        limit: Annotated[int, at.Le(3)],
        points: list[Point] = Field(default_factory=list, description="Where"),  # noqa: B008
    ) -> int:
        return limit

    ts = ToolSignature.from_function(tool)
    assert ts.input_schema["properties"]["points"]["description"] == "Where"
    assert ts.input_schema["required"] == ["limit"]
    assert ts.bind({"limit": 3}) == {"limit": 3, "points": []}
    assert ts.bind({"limit": 1, "points": [{"x": 0, "y": 0}]}) == {"limit": 1, "points": [Point(x=0, y=0)]}
    with pytest.raises(ArgumentError, match=r"^\$\.limit: Expected `int` <= 3$"):
        ts.bind({"limit": 4, "points": []})
    with pytest.raises(ArgumentError, match=r"^\$\.points\[1\]\.y: Field required$"):
        ts.bind({"limit": 1, "points": [{"x": 0, "y": 0}, {"x": 1}]})
