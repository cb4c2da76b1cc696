"""The schemas a server advertises for its tools hold no ``$ref`` (some hosts cannot follow one),
except for recursive types, unless ``Server(keep_schema_refs=True)``.

No ``from __future__ import annotations`` here: the tools below use classes defined in the tests.
"""

import dataclasses
from typing import Any, TypedDict

import jsonschema
import msgspec

from mcp_trio.server import Server
from mcp_trio.server._signature import ToolSignature
from mcp_trio.server._typeschema import inline_refs
from tests._support.server import connected

Validator = jsonschema.Draft202012Validator


class Corner(TypedDict):
    x: int
    y: int


@dataclasses.dataclass
class Box:
    low: Corner
    high: Corner
    label: str = "box"


@dataclasses.dataclass
class Tree:
    label: str
    children: "list[Tree]"


def test_inline_refs_writes_out_every_definition_but_recursive_ones() -> None:
    def tool(a: Corner, b: list[Box], tree: Tree | None = None) -> None: ...

    schema = ToolSignature.from_function(tool).input_schema
    assert set(schema["$defs"]) == {"Corner", "Box", "Tree"}
    out = inline_refs(schema)
    Validator.check_schema(out)
    corner = {
        "title": "Corner",
        "type": "object",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
        "required": ["x", "y"],
    }
    assert out["properties"]["a"] == corner
    assert out["properties"]["b"]["items"]["properties"]["high"] == corner
    assert out["properties"]["tree"]["anyOf"][0] == {"$ref": "#/$defs/Tree"}
    assert set(out["$defs"]) == {"Tree"}
    assert out["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    tree = {"label": "t", "children": [{"label": "u", "children": []}]}
    for instance in (
        {"a": {"x": 1, "y": 2}, "b": []},
        {"a": {"x": 1}, "b": []},
        {"a": {"x": 1, "y": 2}, "b": [{"low": {"x": 0, "y": 0}, "high": {"x": 1, "y": 1}}]},
        {"a": {"x": 1, "y": 2}, "b": [{"low": {"x": 0, "y": 0}, "high": {"x": 1}}]},
        {"a": {"x": 1, "y": 2}, "b": [], "tree": tree},
        {"a": {"x": 1, "y": 2}, "b": [], "tree": {"label": "t", "children": [{"label": 3}]}},
    ):
        assert Validator(out).is_valid(instance) == Validator(schema).is_valid(instance)


def test_a_schema_without_defs_is_returned_as_it_is() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert inline_refs(schema) is schema


def test_a_sibling_of_a_ref_wins_over_the_definition() -> None:
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/P", "description": "mine"}},
        "$defs": {"P": {"type": "object", "description": "theirs"}},
    }
    assert inline_refs(schema) == {
        "type": "object",
        "properties": {"p": {"type": "object", "description": "mine"}},
    }


def box_server(**options: Any) -> Server:
    server = Server("refs", **options)

    @server.tool
    def grow(box: Box, by: int = 1) -> list[Corner]:
        return [box.low, {"x": box.high["x"] + by, "y": box.high["y"] + by}]

    @server.tool(input_schema={"type": "object", "$defs": {"n": {"type": "integer"}}})
    def raw(arguments: dict[str, Any]) -> str:
        return "written by hand"

    return server


async def tools_of(server: Server) -> dict[str, Any]:
    async with connected(server, "2025-11-25") as client:
        listed = await client.request("tools/list", {})
    tools: dict[str, Any] = {t["name"]: t for t in msgspec.to_builtins(listed)["tools"]}
    return tools


async def test_the_advertised_schemas_have_no_refs_unless_the_server_keeps_them() -> None:
    tools = await tools_of(box_server())
    grow = tools["grow"]
    assert "$ref" not in msgspec.json.encode(grow).decode()
    assert "$defs" not in grow["inputSchema"] and "$defs" not in grow["outputSchema"]
    assert grow["inputSchema"]["properties"]["box"]["properties"]["low"]["required"] == ["x", "y"]
    assert grow["outputSchema"]["properties"]["result"]["items"]["title"] == "Corner"
    # a hand-written schema is advertised as written
    assert tools["raw"]["inputSchema"] == {"type": "object", "$defs": {"n": {"type": "integer"}}}

    kept = (await tools_of(box_server(keep_schema_refs=True)))["grow"]
    assert kept["inputSchema"]["properties"]["box"] == {"$ref": "#/$defs/Box"}
    assert set(kept["inputSchema"]["$defs"]) == {"Box", "Corner"}
    assert kept["outputSchema"]["properties"]["result"]["items"] == {"$ref": "#/$defs/Corner"}


async def test_a_call_still_checks_what_the_schema_says() -> None:
    async with connected(box_server(), "2025-11-25") as client:
        box = {"low": {"x": 0, "y": 0}, "high": {"x": 1, "y": 1}}
        result = await client.request("tools/call", {"name": "grow", "arguments": {"box": box, "by": 2}})
        assert result.structuredContent == {"result": [{"x": 0, "y": 0}, {"x": 3, "y": 3}]}
        del box["high"]["y"]
        result = await client.request("tools/call", {"name": "grow", "arguments": {"box": box}})
        assert result.isError is True
        says = "Invalid arguments for tool grow: $.box.high.y: missing required field"
        assert result.content[0].text == says
