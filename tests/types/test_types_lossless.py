"""mcp_trio.types.lossless: decode then encode is identity on the JSON value, in every revision.

The messages are the official schema repository's examples (2026-07-28, the only
revision that has them) and the hand-written fixtures of the older revisions
(tests/types/fixtures), as they are and with unknown members added at random
objects that a Struct decodes (a newer peer's fields); and every newer
revision's messages decoded with an older revision's types.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_trio.types import lossless
from tests._support.types import LATEST, REVISIONS, example_files, fixture_files, module

Path_ = tuple[str | int, ...]


def _files(rev: str) -> list[Path]:
    return example_files() if rev == LATEST else fixture_files(rev)


def _type(rev: str, path: Path) -> Any:
    return getattr(module(rev), path.parent.name)


def _strict(value: Any) -> Any:
    """A JSON value where ``true`` and ``1`` differ (Python's ``==`` says True == 1)."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def _declared(struct: msgspec.Struct) -> set[str]:
    cls = type(struct)
    names = set(cls.__struct_encode_fields__)
    if cls.__struct_config__.tag_field is not None:
        names.add(cls.__struct_config__.tag_field)
    return names


def _struct_objects(decoded: Any, message: Any, path: Path_ = ()) -> list[tuple[Path_, frozenset[str]]]:
    """Every JSON object of ``message`` that a Struct of ``decoded`` came from: (path, declared names)."""
    found: list[tuple[Path_, frozenset[str]]] = []
    if isinstance(decoded, msgspec.Struct) and isinstance(message, dict):
        found.append((path, frozenset(_declared(decoded))))
        cls = type(decoded)
        for attr, wire in zip(cls.__struct_fields__, cls.__struct_encode_fields__, strict=True):
            if wire in message:
                found += _struct_objects(getattr(decoded, attr), message[wire], (*path, wire))
    elif isinstance(decoded, list) and isinstance(message, list):
        for i, (d, m) in enumerate(zip(decoded, message, strict=True)):
            found += _struct_objects(d, m, (*path, i))
    elif isinstance(decoded, dict) and isinstance(message, dict):
        for key, d in decoded.items():
            found += _struct_objects(d, message[key], (*path, key))
    return found


@functools.cache
def _corpus(rev: str) -> list[tuple[str, bytes, tuple[tuple[Path_, frozenset[str]], ...]]]:
    out = []
    for path in _files(rev):
        data = path.read_bytes()
        decoded = msgspec.json.decode(data, type=_type(rev, path))
        objects = tuple(_struct_objects(decoded, json.loads(data)))
        if objects:  # not an open dict (2025-11-25's GetTaskPayloadResult)
            out.append((path.parent.name, data, objects))
    return out


def _roundtrip(data: bytes, type_: Any) -> Any:
    return json.loads(lossless.encode(lossless.decode(data, type_)))


# ------------------------------------------------------------- the messages as they are


@pytest.mark.parametrize("rev", REVISIONS)
def test_every_message_of_the_revision_roundtrips(rev: str) -> None:
    files = _files(rev)
    if not files:
        pytest.skip("upstream examples not available (no MCP schema directory)")
    for path in files:
        original = json.loads(path.read_bytes())
        assert _strict(_roundtrip(path.read_bytes(), _type(rev, path))) == _strict(original), path


def test_the_example_the_ordinary_decoder_is_lossy_on_survives() -> None:
    # 2026-07-28's roots/list example carries an `id` that ListRootsRequest does not declare
    # (input requests are not JSON-RPC messages): the ordinary path drops it, this one does not.
    files = [p for p in example_files() if p.parent.name == "ListRootsRequest"]
    if not files:
        pytest.skip("upstream examples not available (no MCP schema directory)")
    data = files[0].read_bytes()
    type_ = module(LATEST).ListRootsRequest
    assert "id" not in json.loads(msgspec.json.encode(msgspec.json.decode(data, type=type_)))
    assert _roundtrip(data, type_) == json.loads(data)


# ------------------------------------------------------------- property: unknown members anywhere

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)


def _at(message: Any, path: Path_) -> Any:
    for step in path:
        message = message[step]
    return message


@pytest.mark.parametrize("rev", REVISIONS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_unknown_members_at_random_objects_survive(rev: str, data: st.DataObject) -> None:
    corpus = _corpus(rev)
    if not corpus:
        pytest.skip("upstream examples not available (no MCP schema directory)")
    name, raw, objects = data.draw(st.sampled_from(corpus), label="message")
    message = json.loads(raw)
    chosen = data.draw(st.lists(st.sampled_from(objects), min_size=1, max_size=4), label="objects")
    added = 0
    for path, declared in chosen:
        key = data.draw(_text.filter(lambda k, d=declared: k not in d), label="key")
        target = _at(message, path)
        added += key not in target
        target[key] = data.draw(_json_values, label="value")
    type_ = getattr(module(rev), name)
    encoded = json.dumps(message).encode()
    assert _strict(_roundtrip(encoded, type_)) == _strict(message)
    # The ordinary decoder is the lossy one (the rule the types guide states).
    if added:
        ordinary = json.loads(msgspec.json.encode(msgspec.json.decode(encoded, type=type_)))
        assert ordinary != message


# ------------------------------------------------------------- a newer peer, an older revision's types


def _newer_through_older() -> list[tuple[str, str, Path]]:
    pairs = []
    for i, old in enumerate(REVISIONS):
        for new in REVISIONS[i + 1 :]:
            pairs += [(old, new, p) for p in _files(new) if hasattr(module(old), p.parent.name)]
    return pairs


def test_a_newer_peers_messages_pass_through_an_older_revisions_types() -> None:
    passed = unreadable = 0
    for old, new, path in _newer_through_older():
        data = path.read_bytes()
        original = json.loads(data)
        type_ = _type(old, path)
        try:
            again = _roundtrip(data, type_)
        except msgspec.ValidationError:
            # A value the older revision cannot read at all (a content type or a union
            # member it does not have): the ordinary decoder rejects it the same way.
            with pytest.raises(msgspec.ValidationError):
                msgspec.json.decode(data, type=type_)
            unreadable += 1
            continue
        if "jsonrpc" in again and "jsonrpc" not in original:
            # a default the older wire needs (a 2026 input request is not a JSON-RPC message)
            assert again.pop("jsonrpc") == "2.0"
        assert _strict(again) == _strict(original), f"{new} {path.parent.name}/{path.name} as {old}"
        passed += 1
    # 622 pass (the ordinary decoder loses members in 133 of them) and 38 are
    # unreadable: new union members (audio, tool_use, url elicitation ...).
    assert passed >= 600 and unreadable <= 40, (passed, unreadable)


# ------------------------------------------------------------- nesting, spelled out

LIST = {
    "tools": [
        {
            "name": "search",
            "inputSchema": {"type": "object"},
            "x-new": {"rank": 1},
            "annotations": {"readOnlyHint": True, "x-hint": [1, 2]},
        },
        {"name": "plain", "inputSchema": {"type": "object"}},
    ],
    "nextCursor": "c2",
    "x-page": 2,
}


def test_a_tool_inside_a_tools_list_result_keeps_its_new_member() -> None:
    v = module("2025-06-18")
    data = json.dumps(LIST).encode()
    result = lossless.decode(data, v.ListToolsResult)
    assert isinstance(result, v.ListToolsResult)
    assert lossless.extras(result) == {"x-page": 2}
    assert lossless.extras(result.tools[0]) == {"x-new": {"rank": 1}}
    assert lossless.extras(result.tools[1]) == {}
    assert json.loads(lossless.encode(result)) == LIST


def test_a_content_block_keeps_its_new_member() -> None:
    v = module("2025-03-26")
    message = {
        "content": [
            {"type": "text", "text": "hi", "x-lang": "en"},
            {"type": "resource", "resource": {"uri": "a://b", "text": "t", "x-etag": "1"}},
        ],
        "isError": False,
    }
    result = lossless.decode(json.dumps(message), v.CallToolResult)
    assert lossless.extras(result.content[0]) == {"x-lang": "en"}
    assert json.loads(lossless.encode(result)) == message


def test_a_union_type_decodes_to_its_member_with_the_members_kept() -> None:
    v = module("2025-11-25")
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "t", "x-new": True},
        "x-trace": "abc",
    }
    decoded = lossless.decode(json.dumps(request).encode(), v.ClientRequest)
    assert isinstance(decoded, v.CallToolRequest)
    assert json.loads(lossless.encode(decoded)) == request
    assert json.loads(lossless.encode([decoded, {"k": decoded.params}])) == [
        request,
        {"k": request["params"]},
    ]


# ------------------------------------------------------------- editing, and what is not kept


def test_extras_is_the_instances_own_dict() -> None:
    v = module("2025-06-18")
    result = lossless.decode(json.dumps(LIST), v.ListToolsResult)
    tool = result.tools[0]
    kept = lossless.extras(tool)
    del kept["x-new"]
    kept["x-added"] = "by the proxy"
    kept["name"] = "ignored: a declared member is never written from the extras"
    out = json.loads(lossless.encode(result))
    assert out["tools"][0] == {
        "name": "search",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True, "x-hint": [1, 2]},
        "x-added": "by the proxy",
    }
    fresh = v.Tool(name="new", inputSchema={"type": "object"})
    lossless.extras(fresh)["x-mine"] = 1
    expected = {"name": "new", "inputSchema": {"type": "object"}, "x-mine": 1}
    assert json.loads(lossless.encode(fresh)) == expected


def test_replace_keeps_the_members_and_msgspec_replace_does_not() -> None:
    v = module("2025-06-18")
    result = lossless.decode(json.dumps(LIST), v.ListToolsResult)
    renamed = lossless.replace(result.tools[0], name="proxy_search")
    assert json.loads(lossless.encode(renamed)) == {**LIST["tools"][0], "name": "proxy_search"}
    assert lossless.extras(renamed) is not lossless.extras(result.tools[0])  # a copy
    plain = msgspec.structs.replace(result.tools[0], name="proxy_search")
    assert "x-new" not in json.loads(lossless.encode(plain))
    # the annotations Struct is shared, so its own member is still there
    assert json.loads(lossless.encode(plain))["annotations"]["x-hint"] == [1, 2]


def test_a_value_changed_after_decoding_is_encoded_as_changed() -> None:
    v = module("2025-06-18")
    result = lossless.decode(json.dumps(LIST), v.ListToolsResult)
    result.tools = [result.tools[1], result.tools[0]]
    result.nextCursor = msgspec.UNSET
    out = json.loads(lossless.encode(result))
    assert out == {"tools": [LIST["tools"][1], LIST["tools"][0]], "x-page": 2}


class _Closed(msgspec.Struct):
    name: str


class _Open(msgspec.Struct, dict=True, omit_defaults=True):
    items: list[_Closed]
    count: int = 0


def test_a_struct_without_dict_true_is_named_in_the_error() -> None:
    lossless.decode(b'{"items": [{"name": "a"}]}', _Open)  # nothing unknown: fine
    with pytest.raises(TypeError, match=r"_Closed cannot keep unknown members: declare it with dict=True"):
        lossless.decode(b'{"items": [{"name": "a", "extra": 1}]}', _Open)
    with pytest.raises(TypeError, match=r"_Closed cannot keep unknown members"):
        lossless.extras(_Closed(name="a"))


def test_a_struct_that_omits_defaults_still_omits_them() -> None:
    value = lossless.decode(b'{"items": [], "x": 1}', _Open)
    assert json.loads(lossless.encode(value)) == {"items": [], "x": 1}


def test_invalid_messages_fail_as_with_the_ordinary_decoder() -> None:
    v = module("2025-11-25")
    bad = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 3}}'
    with pytest.raises(msgspec.ValidationError) as ordinary:
        msgspec.json.decode(bad, type=v.CallToolRequest)
    with pytest.raises(msgspec.ValidationError) as kept:
        lossless.decode(bad, v.CallToolRequest)
    assert str(kept.value) == str(ordinary.value) == "Expected `str`, got `int` - at `$.params.name`"
    with pytest.raises(msgspec.DecodeError):
        lossless.decode(b'{"jsonrpc": ', v.CallToolRequest)


def test_the_result_type_the_wire_needs_is_encoded() -> None:
    v = module(LATEST)
    # An older server's result has no resultType; absent means "complete", and the
    # encoder writes it, as the engine does on the wire.
    result = lossless.decode(b'{"content": [], "x-new": 1}', v.CallToolResult)
    assert json.loads(lossless.encode(result)) == {"content": [], "resultType": "complete", "x-new": 1}
    assert json.loads(msgspec.json.encode(v.CallToolResult(content=[])))["resultType"] == "complete"
    required = v.InputRequiredResult(inputRequests={})
    assert json.loads(lossless.encode(required))["resultType"] == "input_required"


def test_the_tasks_extensions_types_keep_members_too() -> None:
    from mcp_trio.types import ext_tasks

    task = {
        "taskId": "t1",
        "status": "failed",
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": "2026-01-01T00:00:01Z",
        "ttlMs": None,
        "error": {"code": -32603, "message": "boom", "x-where": "step 2"},
        "resultType": "complete",
        "x-queue": "slow",
    }
    for type_ in (ext_tasks.GetTaskResult, ext_tasks.TaskStatusNotificationParams):
        assert _roundtrip(json.dumps(task).encode(), type_) == task
    ack = {"resultType": "complete", "x-ack": 1}
    assert _roundtrip(json.dumps(ack).encode(), ext_tasks.CancelTaskResult) == ack
