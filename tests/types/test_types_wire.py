"""Wire behaviour of the generated types: strictness, numbers, open objects, defaults."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_trio.types import UNSET
from mcp_trio.types._versions import error_message
from tests._support.types import LATEST, OLDER, REVISIONS, example_files, fixture_files, module

PRE_2026 = [r for r in REVISIONS if r != LATEST]
WITH_ELICITATION = ["2025-06-18", "2025-11-25", LATEST]


def _call_tool(rev: str, **params: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"name": "get_weather", "arguments": {"x": 1}}
    if rev == LATEST:
        p["_meta"] = {
            "io.modelcontextprotocol/protocolVersion": LATEST,
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    p.update(params)
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": p}


def _error(type_: Any, message: Any) -> str:
    """The rejection as the library reports it (path rooted at ``$``)."""
    with pytest.raises(msgspec.ValidationError) as info:
        msgspec.json.decode(json.dumps(message).encode(), type=type_)
    return error_message(info.value)


def _create_message(rev: str, max_tokens: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": "s1",
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": max_tokens,
        },
    }


# ---------------------------------------------------------------- rejected input


@pytest.mark.parametrize("rev", REVISIONS)
def test_wrong_type_names_the_path(rev: str) -> None:
    err = _error(module(rev).CallToolRequest, _call_tool(rev, name=5))
    assert err == "Expected `str`, got `int` - at `$.params.name`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_missing_required_field(rev: str) -> None:
    msg = _call_tool(rev)
    del msg["params"]["name"]
    assert _error(module(rev).CallToolRequest, msg) == (
        "Object missing required field `name` - at `$.params`"
    )
    msg = _call_tool(rev)
    del msg["id"]
    assert _error(module(rev).CallToolRequest, msg) == "Object missing required field `id` - at `$`"
    assert _error(module(rev).CallToolRequest, [msg]) == "Expected `object`, got `array` - at `$`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_unknown_method_on_request_union(rev: str) -> None:
    msg = {"jsonrpc": "2.0", "id": 1, "method": "tools/frobnicate", "params": {}}
    assert _error(module(rev).ClientRequest, msg) == "Invalid value 'tools/frobnicate' - at `$.method`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_bool_is_never_an_id(rev: str) -> None:
    msg = _call_tool(rev)
    msg["id"] = True
    assert _error(module(rev).CallToolRequest, msg) == "Expected `int | str`, got `bool` - at `$.id`"
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": False}}
    assert "got `bool` - at `$.params.requestId`" in _error(module(rev).CancelledNotification, note)


@pytest.mark.parametrize("rev", REVISIONS)
def test_float_where_int_is_required(rev: str) -> None:
    type_ = module(rev).CreateMessageRequest
    msg = _create_message(rev, 1.5)
    if rev == LATEST:  # an input request: {method, params} only
        del msg["jsonrpc"], msg["id"]
    assert _error(type_, msg) == "Expected `int`, got `float` - at `$.params.maxTokens`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_wrong_jsonrpc_version(rev: str) -> None:
    msg = _call_tool(rev)
    msg["jsonrpc"] = "1.0"
    assert _error(module(rev).CallToolRequest, msg) == "Invalid enum value '1.0' - at `$.jsonrpc`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_unknown_content_type(rev: str) -> None:
    result = {"content": [{"type": "video", "data": "x"}]}
    assert _error(module(rev).CallToolResult, result) == "Invalid value 'video' - at `$.content[0].type`"


# ---------------------------------------------------------------- numbers


@pytest.mark.parametrize("rev", REVISIONS)
def test_progress_is_a_float(rev: str) -> None:
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": "t", "progress": 0.5, "total": 2},
    }
    decoded = msgspec.json.decode(json.dumps(note), type=module(rev).ProgressNotification)
    assert decoded.params.progress == 0.5
    assert isinstance(decoded.params.progress, float)
    assert isinstance(decoded.params.total, float)


@pytest.mark.parametrize("rev", WITH_ELICITATION)
def test_elicitation_answers_keep_numbers(rev: str) -> None:
    result = {"action": "accept", "content": {"height": 1.85, "age": 36, "ok": True, "name": "Ada"}}
    decoded = msgspec.json.decode(json.dumps(result), type=module(rev).ElicitResult)
    assert decoded.content == {"height": 1.85, "age": 36, "ok": True, "name": "Ada"}
    assert type(decoded.content["age"]) is int  # sent as an integer, kept as one
    assert json.loads(msgspec.json.encode(decoded)) == result


@pytest.mark.parametrize("rev", REVISIONS)
def test_priorities_and_temperature_are_floats(rev: str) -> None:
    mod = module(rev)
    prefs = msgspec.json.decode(b'{"costPriority": 1, "speedPriority": 0.25}', type=mod.ModelPreferences)
    assert prefs.costPriority == 1.0 and isinstance(prefs.costPriority, float)
    assert "Expected `float` <= 1.0" in _error(mod.ModelPreferences, {"costPriority": 1.5})
    msg = _create_message(rev, 100)
    msg["params"]["temperature"] = 1
    if rev == LATEST:
        del msg["jsonrpc"], msg["id"]
    decoded = msgspec.json.decode(json.dumps(msg), type=mod.CreateMessageRequest)
    assert isinstance(decoded.params.temperature, float)


# ---------------------------------------------------------------- wire messages and defaults


@pytest.mark.parametrize("rev", REVISIONS)
def test_requests_are_full_wire_messages(rev: str) -> None:
    mod = module(rev)
    msg = _call_tool(rev)
    msg["params"]["_meta"] = {
        **msg["params"].get("_meta", {}),
        "progressToken": 7,
        "traceparent": "00-abc-01",
        "com.example/x": [1, None],
    }
    decoded = msgspec.json.decode(json.dumps(msg), type=mod.CallToolRequest)
    assert decoded.id == 1 and decoded.jsonrpc == "2.0"
    assert decoded.params.meta["traceparent"] == "00-abc-01"
    assert json.loads(msgspec.json.encode(decoded)) == msg


@pytest.mark.parametrize("rev", REVISIONS)
def test_jsonrpc_defaults_and_is_always_encoded(rev: str) -> None:
    mod = module(rev)
    ping = mod.ProgressNotification(params=mod.ProgressNotificationParams(progressToken=1, progress=0.5))
    assert ping.jsonrpc == "2.0"
    encoded = json.loads(msgspec.json.encode(ping))
    assert encoded == {
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": 1, "progress": 0.5},
    }


@pytest.mark.parametrize("rev", REVISIONS)
def test_absent_stays_absent(rev: str) -> None:
    mod = module(rev)
    block = msgspec.json.decode(b'{"type": "text", "text": "hi"}', type=mod.TextContent)
    assert block.annotations is UNSET
    assert msgspec.json.encode(block) == b'{"type":"text","text":"hi"}'


@pytest.mark.parametrize("rev", REVISIONS)
def test_content_blocks_are_a_tagged_union(rev: str) -> None:
    mod = module(rev)
    result = msgspec.json.decode(
        b'{"content": [{"type": "text", "text": "a"},'
        b' {"type": "image", "data": "AA==", "mimeType": "image/png"},'
        b' {"type": "resource", "resource": {"uri": "x:/a", "blob": "AA=="}}]}',
        type=mod.CallToolResult,
    )
    assert [type(c) for c in result.content] == [
        mod.TextContent,
        mod.ImageContent,
        mod.EmbeddedResource,
    ]
    assert result.content[2].resource.blob == "AA=="
    assert result.content[2].resource.text is UNSET


MESSAGE_UNIONS = ("ClientRequest", "ClientNotification", "ServerRequest", "ServerNotification")
UNION_CASES = [(rev, u) for rev in REVISIONS for u in MESSAGE_UNIONS if hasattr(module(rev), u)]


def _members(union: Any) -> tuple[type, ...]:
    # A union of one message is the message type itself.
    return typing.get_args(union) or (union,)


def _messages_by_definition(rev: str) -> dict[str, list[Path]]:
    """Fixture (older revisions) or upstream example (latest) files, by definition name."""
    found: dict[str, list[Path]] = {}
    for path in fixture_files(rev) if rev in OLDER else example_files():
        found.setdefault(path.parent.name, []).append(path)
    return found


@pytest.mark.parametrize(("rev", "union"), UNION_CASES)
def test_request_union_dispatches_on_method(rev: str, union: str) -> None:
    mod = module(rev)
    union_type = getattr(mod, union)
    members = _members(union_type)
    # The union holds exactly the registry's messages of its kind and sender.
    kind = "request" if union.endswith("Request") else "notification"
    sender = "client" if union.startswith("Client") else "server"
    expected = {
        spec.message
        for spec in mod.METHODS.values()
        if spec.kind == kind and spec.direction in (sender, "both") and not spec.input_request
    }
    assert set(members) == expected
    if union == "ClientRequest":  # needs no fixture files
        decoded = msgspec.json.decode(json.dumps(_call_tool(rev)), type=union_type)
        assert type(decoded) is mod.CallToolRequest
    messages = _messages_by_definition(rev)
    if not messages:
        pytest.skip("upstream examples not available (no MCP schema directory)")
    # Every member is reached through the union, by its method.
    for member in members:
        paths = messages.get(member.__name__)
        assert paths, f"no fixture for {member.__name__}"
        for path in paths:
            decoded = msgspec.json.decode(path.read_bytes(), type=union_type)
            assert type(decoded) is member, path
    # A message of another union (the other direction or kind) is refused by its method.
    others = {
        other
        for name in MESSAGE_UNIONS
        if name != union and hasattr(mod, name)
        for other in _members(getattr(mod, name))
    } - set(members)
    assert others
    for other in others:
        message = json.loads(messages[other.__name__][0].read_bytes())
        assert _error(union_type, message) == f"Invalid value '{message['method']}' - at `$.method`"


@pytest.mark.parametrize("rev", REVISIONS)
def test_open_objects_keep_everything(rev: str) -> None:
    mod = module(rev)
    schema = {
        "type": "object",
        "$defs": {"a": {"type": "string"}},
        "oneOf": [{"required": ["a"]}],
        "additionalProperties": False,
        "properties": {"a": {"$ref": "#/$defs/a"}},
    }
    tool: dict[str, Any] = {"name": "t", "inputSchema": schema}
    if "meta" in mod.Tool.__struct_fields__:  # Tool._meta exists from 2025-06-18 on
        tool["_meta"] = {"vendor/key": {"deep": [1, 2]}}
    decoded = msgspec.json.decode(json.dumps(tool), type=mod.Tool)
    assert decoded.inputSchema == schema
    assert json.loads(msgspec.json.encode(decoded)) == tool


@pytest.mark.parametrize("rev", WITH_ELICITATION)
def test_structured_content_is_any_json(rev: str) -> None:
    mod = module(rev)
    for value in ({"a": [1, 2.5, None]}, [1, "x"], "text", 3, None):
        result = {"content": [], "structuredContent": value}
        decoded = msgspec.json.decode(json.dumps(result), type=mod.CallToolResult)
        assert decoded.structuredContent == value


@pytest.mark.parametrize("rev", REVISIONS)
def test_resource_contents_merged_and_originals_constructible(rev: str) -> None:
    mod = module(rev)
    text = mod.TextResourceContents(uri="file:///a", text="hello")
    blob = mod.BlobResourceContents(uri="file:///b", blob="AA==", mimeType="image/png")
    extra: dict[str, Any] = {"cacheScope": "public", "ttlMs": 0} if rev == LATEST else {}
    result = mod.ReadResourceResult(contents=[text, blob], **extra)
    decoded = msgspec.json.decode(msgspec.json.encode(result), type=mod.ReadResourceResult)
    assert [type(c) for c in decoded.contents] == [mod.AnyResourceContents] * 2
    assert decoded.contents[0].text == "hello" and decoded.contents[0].blob is UNSET
    assert decoded.contents[1].blob == "AA==" and decoded.contents[1].text is UNSET
    merged = mod.AnyResourceContents(uri="file:///a", text="hello")
    assert json.loads(msgspec.json.encode(merged)) == json.loads(msgspec.json.encode(text))


@pytest.mark.parametrize("rev", ["2025-11-25", LATEST])
def test_elicit_params_merged(rev: str) -> None:
    mod = module(rev)
    url = {"mode": "url", "message": "Sign in", "url": "https://x.example/", "elicitationId": "e1"}
    form = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
    if rev == LATEST:
        del url["elicitationId"]
    for params in (url, form):
        decoded = msgspec.json.decode(json.dumps(params), type=mod.ElicitRequestParams)
        assert json.loads(msgspec.json.encode(decoded)) == params
    assert "Invalid enum value 'sms'" in _error(mod.ElicitRequestParams, {**url, "mode": "sms"})
    # The member Structs are still there for construction.
    built = mod.ElicitRequestURLParams(
        mode="url",
        message="Sign in",
        url="https://x.example/",
        **({"elicitationId": "e1"} if rev != LATEST else {}),
    )
    assert json.loads(msgspec.json.encode(built)) == url


def test_result_type_defaults_to_complete() -> None:
    mod = module(LATEST)
    decoded = msgspec.json.decode(b'{"content": []}', type=mod.CallToolResult)
    assert decoded.resultType == "complete"
    assert json.loads(msgspec.json.encode(decoded)) == {"content": [], "resultType": "complete"}
    assert mod.CallToolResult(content=[]).resultType == "complete"
    needs_input = msgspec.json.decode(b'{"requestState": "s"}', type=mod.InputRequiredResult)
    assert needs_input.resultType == "input_required"
    assert "Invalid enum value 'complete'" in _error(mod.InputRequiredResult, {"resultType": "complete"})


def test_input_requests_and_responses_2026() -> None:
    mod = module(LATEST)
    result = {
        "resultType": "input_required",
        "inputRequests": {
            "a": {"method": "roots/list"},
            "b": {
                "method": "elicitation/create",
                "params": {
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            },
        },
        "requestState": "opaque",
    }
    decoded = msgspec.json.decode(json.dumps(result), type=mod.InputRequiredResult)
    assert type(decoded.inputRequests["a"]) is mod.ListRootsRequest
    assert type(decoded.inputRequests["b"]) is mod.ElicitRequest
    assert json.loads(msgspec.json.encode(decoded)) == result
    # inputResponses values stay plain objects until paired with their request.
    params = {
        "name": "t",
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": LATEST,
            "io.modelcontextprotocol/clientCapabilities": {},
        },
        "inputResponses": {"a": {"roots": []}, "b": {"action": "decline"}},
    }
    decoded_params = msgspec.json.decode(json.dumps(params), type=mod.CallToolRequestParams)
    assert decoded_params.inputResponses == {"a": {"roots": []}, "b": {"action": "decline"}}


@pytest.mark.parametrize("rev", PRE_2026)
def test_result_extras_are_dropped_by_design(rev: str) -> None:
    # Result is an open object, but a Struct keeps only declared fields: an
    # undeclared top-level key is lost on re-encoding (documented; forward the
    # raw bytes when only forwarding).
    decoded = msgspec.json.decode(b'{"content": [], "vendorKey": 1}', type=module(rev).CallToolResult)
    assert "vendorKey" not in json.loads(msgspec.json.encode(decoded))


@pytest.mark.parametrize("rev", REVISIONS)
def test_meta_is_an_open_dict(rev: str) -> None:
    mod = module(rev)
    meta = {"progressToken": "p", "traceparent": "00-1-2-01", "com.example/a": {"b": [None, 1.5]}}
    note = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": 3, "_meta": meta},
    }
    decoded = msgspec.json.decode(json.dumps(note), type=mod.CancelledNotification)
    assert decoded.params.meta == meta


# ---------------------------------------------------------------- property: open values survive


_json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_json_values = st.recursive(
    _json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@pytest.mark.parametrize("rev", REVISIONS)
@settings(max_examples=60, deadline=None)
@given(
    arguments=st.dictionaries(st.text(max_size=8), _json_values, max_size=5),
    extra_meta=st.dictionaries(
        st.text(min_size=1, max_size=8).filter(lambda k: not k.startswith("io.")),
        _json_values,
        max_size=3,
    ),
    request_id=st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=10),
)
def test_tools_call_roundtrips_any_json(
    rev: str, arguments: dict[str, Any], extra_meta: dict[str, Any], request_id: int | str
) -> None:
    msg = _call_tool(rev, arguments=arguments)
    msg["id"] = request_id
    msg["params"]["_meta"] = {**extra_meta, **msg["params"].get("_meta", {})}
    data = json.dumps(msg).encode()
    decoded = msgspec.json.decode(data, type=module(rev).CallToolRequest)
    assert json.loads(msgspec.json.encode(decoded)) == json.loads(data)
