"""Generated tools/call messages travel through two real sessions unchanged.

hypothesis builds the params (any name, any JSON arguments, ``_meta`` with any
keys and values) and the result (a mix of every content type the revision
has, ``_meta``, ``isError`` and, where the revision has it, ``structuredContent``
with any JSON value); the server handler must see exactly those params and the
client must get exactly that result, compared as JSON, in every revision.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_trio import RequestContext, open_memory_transport_pair, open_session
from mcp_trio.types import _versions

#: What the core itself adds to the ``_meta`` of a stateless request.
INJECTED = {
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
# Keys the protocol gives a meaning to are left out: the rest is opaque to the engine.
meta_objects = st.dictionaries(
    st.text(max_size=12).filter(lambda k: k != "progressToken" and "modelcontextprotocol" not in k),
    json_values,
    max_size=3,
)
base64_data = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())


def _annotations(version: str) -> st.SearchStrategy[dict[str, Any]]:
    fields: dict[str, st.SearchStrategy[Any]] = {
        "audience": st.lists(st.sampled_from(["user", "assistant"]), max_size=2),
        "priority": st.floats(0, 1),
    }
    if version >= "2025-06-18":
        fields["lastModified"] = st.just("2025-01-12T15:00:58Z")
    return st.fixed_dictionaries({}, optional=fields)


def _content_block(version: str) -> st.SearchStrategy[dict[str, Any]]:
    modern_meta = version >= "2025-06-18"  # content blocks carry _meta from 2025-06-18 on

    def block(kind: str, required: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
        optional: dict[str, st.SearchStrategy[Any]] = {"annotations": _annotations(version)}
        if modern_meta:
            optional["_meta"] = meta_objects
        return st.fixed_dictionaries({"type": st.just(kind), **required}, optional=optional)

    resource_meta = {"_meta": meta_objects} if modern_meta else {}
    resource = st.fixed_dictionaries(
        {"uri": st.just("file:///a.txt"), "text": st.text(max_size=20)},
        optional={"mimeType": st.just("text/plain"), **resource_meta},
    ) | st.fixed_dictionaries(
        {"uri": st.just("file:///b.bin"), "blob": base64_data},
        optional={"mimeType": st.just("application/octet-stream"), **resource_meta},
    )
    kinds = [
        block("text", {"text": st.text(max_size=20)}),
        block("image", {"data": base64_data, "mimeType": st.just("image/png")}),
        block("resource", {"resource": resource}),
    ]
    if version >= "2025-03-26":
        kinds.append(block("audio", {"data": base64_data, "mimeType": st.just("audio/wav")}))
    if version >= "2025-06-18":
        kinds.append(block("resource_link", {"uri": st.just("file:///c.md"), "name": st.text(max_size=8)}))
    return st.one_of(kinds)


def _call(version: str) -> st.SearchStrategy[tuple[dict[str, Any], dict[str, Any]]]:
    params = st.fixed_dictionaries(
        {"name": st.text(max_size=12)},
        optional={"arguments": json_objects, "_meta": meta_objects},
    )
    optional: dict[str, st.SearchStrategy[Any]] = {"_meta": meta_objects, "isError": st.booleans()}
    if version >= "2025-06-18":
        optional["structuredContent"] = json_values
    result = st.fixed_dictionaries(
        {"content": st.lists(_content_block(version), max_size=4)}, optional=optional
    )
    return st.tuples(params, result)


def _as_json(value: Any) -> Any:
    return json.loads(msgspec.json.encode(value))


async def _exchange(version: str, params: dict[str, Any], result: dict[str, Any]) -> tuple[Any, Any]:
    """Send ``params`` as a tools/call, answer with ``result``: (params seen, result got)."""
    seen: list[Any] = []

    async def call_tool(ctx: RequestContext, received: Any) -> Any:
        seen.append(_as_json(received))
        return result

    a, b = open_memory_transport_pair()
    async with (
        open_session(
            a,
            role="server",
            info={"name": "s", "version": "1"},
            capabilities={"tools": {}},
            request_handlers={"tools/call": call_tool},
        ) as _srv,
        open_session(b, role="client", info={"name": "c", "version": "1"}, versions=[version]) as cli,
    ):
        assert await cli.connect() == version
        with trio.fail_after(5):
            got = await cli.request("tools/call", params)
    return seen[0], _as_json(got)


@pytest.mark.parametrize("version", _versions.SUPPORTED_VERSIONS)
def test_generated_tool_calls_travel_unchanged(version: str) -> None:
    stateless = _versions.is_stateless(version)

    @given(_call(version))
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    def check(call: tuple[dict[str, Any], dict[str, Any]]) -> None:
        params, result = call
        seen, got = trio.run(_exchange, version, params, result)
        if stateless:  # the core's own _meta keys (and a _meta to hold them)
            meta = {k: v for k, v in seen.pop("_meta").items() if k not in INJECTED}
            if meta or "_meta" in params:
                seen["_meta"] = meta
            assert got.pop("resultType") == "complete"
        assert seen == json.loads(json.dumps(params))
        assert got == json.loads(json.dumps(result))

    check()
